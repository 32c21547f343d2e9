"""Untranslated query words (out of vocabulary) and the source-side segmentation of a model's dictionary.

A query token is untranslated when the model's lexical table ``p(e|f)`` (``lex.e_given_f.npz``, trained on the
bitext and on the dictionary's entries) has no translation for it: the decoder can only copy it. Tokens are the
model's own (:func:`clirplug.mt.preprocess.topic_sentences` with the folder's :func:`~clirplug.mt.preprocess.preprocessor`:
normalized, segmented for Chinese and Japanese, lowercased, compounds split as the bitext was), so a query is cut
exactly as the bitext and the dictionary were.

A dictionary entry meets the bitext's words only through the same segmentation: training cuts the source side of
each entry with the bitext's preprocessor (:func:`clirplug.train.align.dictionary_pairs`), and keeps it when every
token is a bitext word. :func:`dictionary_segmentation` counts the entries that the segmenter splits (a source
term that, written as one word, would never match a segmented query) and those of them it keeps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from clirplug.errors import ClirplugError
from clirplug.io.text import read_lines
from clirplug.mt.lexicon import LexicalTable
from clirplug.mt.preprocess import preprocessor, topic_sentences

TABLE = "lex.e_given_f.npz"


@dataclass(frozen=True)
class TopicOov:
    """One topic's query tokens (as the model cuts its field) and those without a translation, in order."""

    qid: str
    tokens: int
    untranslated: tuple[str, ...]


def untranslated(tokens: Iterable[str], table: LexicalTable) -> list[str]:
    """The ``tokens`` that ``table`` has no translation for, in order."""
    return [token for token in tokens if token not in table]


def topics_oov(topics, field: str, model_dir, lang: str) -> list[TopicOov]:
    """Each topic's :class:`TopicOov` for its ``field``, tokenized by the model folder ``model_dir`` for ``lang``
    and looked up in its lexical table."""
    model_dir = Path(model_dir)
    if not (model_dir / TABLE).is_file():
        raise ClirplugError(f"{model_dir / TABLE}: no such file (the model's lexical table)")
    table = LexicalTable.load(model_dir / TABLE)
    tokenize = preprocessor(lang, model_dir)
    result = []
    for topic in topics:
        tokens = [token for sentence in topic_sentences(topic, field, lang, tokenize) for token in sentence]
        result.append(TopicOov(topic.id, len(tokens), tuple(untranslated(tokens, table))))
    return result


def oov_share(topics: Iterable[TopicOov]) -> dict:
    """``{"topics", "tokens", "untranslated", "share", "topics_with_untranslated"}`` over ``topics``: the share of
    query tokens without a translation (0 without tokens)."""
    topics = list(topics)
    tokens = sum(t.tokens for t in topics)
    missing = sum(len(t.untranslated) for t in topics)
    return {"topics": len(topics), "tokens": tokens, "untranslated": missing,
            "share": missing / tokens if tokens else 0.0,
            "topics_with_untranslated": sum(1 for t in topics if t.untranslated)}


def dictionary_segmentation(dictionary, lang: str, tokenize: Callable[[str], list[str]],
                            table: LexicalTable | None = None) -> dict:
    """How the source side of ``dictionary`` (TSV ``source<TAB>target``) is segmented by ``tokenize`` (the
    bitext's and the queries' preprocessor): counts of its distinct source terms, of those written as one word
    (no space) that ``tokenize`` splits into several tokens or changes, of those with no token at all, and, given
    the model's ``table``, of the split ones whose every token has a translation (they can match a query)."""
    terms: dict[str, None] = {}
    for lineno, line in enumerate(read_lines(dictionary), start=1):
        fields = line.split("\t")
        if len(fields) != 2:
            raise ClirplugError(f"{dictionary}:{lineno}: expected 'source<TAB>target'")
        terms.setdefault(fields[0], None)
    one_word = [term for term in terms if term.strip() and " " not in term.strip()]
    cut = {term: tokenize(term) for term in one_word}
    split = [term for term, tokens in cut.items() if len(tokens) > 1]
    changed = [term for term, tokens in cut.items() if len(tokens) == 1 and tokens[0] != term.strip().lower()]
    counts = {"terms": len(terms), "one_word_terms": len(one_word), "split": len(split),
              "changed": len(changed), "empty": sum(1 for tokens in cut.values() if not tokens),
              "split_examples": [f"{term} -> {' '.join(cut[term])}" for term in split[:5]]}
    if table is not None:
        counts["split_translated"] = sum(1 for term in split if not untranslated(cut[term], table))
    return counts
