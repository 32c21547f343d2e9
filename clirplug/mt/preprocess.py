"""The MT-side text chain: sentence splitting, tokenization, lowercasing, German compound splitting.

One function, :func:`preprocess`, turns raw text into MT tokens everywhere in clirplug: for
the bitext before word alignment, for the dictionary pairs added to it, and for queries before
decoding or PSQ lookup. Using the same function on both sides is what makes the translation
tables' vocabulary match the queries'. Lucene's own analysis of *target* (English) words into
index terms is a separate, later step (``clirplug.lucene.analyzer.analyze``); see
``docs/preprocessing.md`` for the whole chain.

Tokens are Unicode NFC, lowercased. The tokenizer keeps man-page tokens whole: URLs, paths
(``/etc/passwd``), command-line options (``--recursive``), dotted names (``file.txt``,
``1.5``) and identifiers (``malloc_trim``); every other non-space, non-word character is a
token of its own (Moses-style, without escaping).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from clirplug.mt.compound import CompoundSplitter

COMPOUND_FILE = "compound.{lang}.tsv"  # the splitter a model folder ships, see docs/models.md

# The longest token list the decoder is given: its forest grows with the sentence (about
# 1 MB of memory per token on the demo model, several on manclir-de), so longer sentences
# are translated in chunks (:func:`chunks`). The longest sentence of the manclir-de topics
# has 84 tokens; docs/reliability.md states the limit.
MAX_SENTENCE_TOKENS = 100

TOKEN = re.compile(
    r"""
      (?:https?|ftp)://[^\s<>"]*[^\s<>".,;:!?)\]}']     # URL
    | (?<![\w/.~])(?:~|\.{1,2})?/[\w.+-]+(?:/[\w.+-]+)*/? # path: /etc/passwd, ~/.bashrc, ./configure
    | (?<![\w-])--?[^\W\d_][\w-]*                        # option: -r, --recursive, --no-color
    | \w+(?:[.'’]\w+)*                                   # word, number, file.txt, 1.5, don't
    | [^\w\s]                                            # any other symbol, one at a time
    """,
    re.VERBOSE,
)

# A sentence may end at . ! ? (plus closing quotes/brackets) followed by space; it does when
# the next text (after opening quotes) starts with an upper-case letter or a digit.
BOUNDARY = re.compile(r"""[.!?]+["'»«”’)\]]*\s+""")
OPENING = "\"'„“»«([‚‘"

ABBREVIATIONS = {
    "de": frozenset(
        "z.b bzw d.h u.a usw etc ggf vgl s ca evtl inkl nr bspw z.t u.u o.ä dr prof max min abs "
        "bzgl sog allg einschl hrsg jh mio mrd str tel zzgl ggü u.ä i.d.r d.i v.a"
        .split()
    ),
    "en": frozenset("e.g i.e etc vs cf mr mrs ms dr prof no fig approx st jr sr al".split()),
}


def split_sentences(text: str, lang: str) -> list[str]:
    """Split raw ``text`` into sentences (stripped, non-empty), for multi-sentence queries.

    A boundary is sentence-final punctuation followed by white space and an upper-case letter
    or digit, except after a known abbreviation of ``lang`` (``z.B.``, ``e.g.``), a single
    letter (an initial) or, in German, a number (an ordinal such as ``3. Oktober``).
    """
    abbreviations = ABBREVIATIONS.get(lang, frozenset())
    sentences, start = [], 0
    for match in BOUNDARY.finditer(text):
        following = text[match.end() :].lstrip(OPENING)[:1]
        if not (following.isupper() or following.isdigit()):
            continue
        before = text[start : match.start()].split()
        last = before[-1].lower() if before else ""
        ends_with_period = text[match.start()] == "."
        if ends_with_period and (
            last in abbreviations
            or (len(last) == 1 and last.isalpha())
            or (lang == "de" and last.isdigit())
        ):
            continue
        sentences.append(text[start : match.end()].strip())
        start = match.end()
    sentences.append(text[start:].strip())
    return [sentence for sentence in sentences if sentence]


def chunks(tokens: list[str], limit: int = MAX_SENTENCE_TOKENS) -> list[list[str]]:
    """``tokens`` cut into the fewest consecutive pieces of at most ``limit`` tokens, of near
    equal length; a list within the limit is returned whole (``[tokens]``)."""
    count = -(-len(tokens) // limit)
    if count <= 1:
        return [tokens]
    bounds = [len(tokens) * k // count for k in range(count + 1)]
    return [tokens[start:end] for start, end in zip(bounds, bounds[1:])]


def topic_sentences(topic, field: str, lang: str, tokenize: Callable[[str], list[str]]) -> list[list[str]]:
    """A topic's ``field`` as MT token lists: a ``title`` whole, any other field one list per
    sentence (queries are translated so by DT, PSQ, BOW-FD and MIRA alike); empty ones dropped,
    longer ones than :data:`MAX_SENTENCE_TOKENS` cut into :func:`chunks`."""
    from clirplug.io.topics import topic_field

    text = topic_field(topic, field)
    parts = [text] if field == "title" else split_sentences(text, lang)
    return [piece for tokens in map(tokenize, parts) if tokens for piece in chunks(tokens)]


def tokenize(text: str) -> list[str]:
    """Split ``text`` into tokens (case kept); see the module docstring for the rules."""
    return TOKEN.findall(unicodedata.normalize("NFC", text))


def preprocess(text: str, lang: str, compounds: CompoundSplitter | None = None) -> list[str]:
    """Raw text to MT tokens: NFC, :func:`tokenize`, lowercase, then compound splitting.

    Parameters
    ----------
    text
        Raw text (one sentence or a whole paragraph; sentences are not separated here).
    lang
        Language code (``"de"``, ``"en"``); selects nothing in tokenization itself.
    compounds
        A trained Koehn & Knight (2003) splitter applied to every token, or ``None``. A model
        folder ships the one used in training as ``compound.<lang>.tsv``: load it with
        :func:`preprocessor` so queries are split exactly as the bitext was.
    """
    tokens = [token.lower() for token in tokenize(text)]
    if compounds is None:
        return tokens
    return [part for token in tokens for part in compounds.split(token)]


def preprocessor(lang: str, model_dir=None) -> Callable[[str], list[str]]:
    """Return ``text -> preprocess(text, lang, splitter)`` with the model folder's splitter.

    The splitter is ``model_dir/compound.<lang>.tsv`` when that file exists (it does for the
    German side of a model trained by ``clirplug train align``), otherwise none.
    """
    from clirplug.mt.compound import CompoundSplitter

    splitter = None
    if model_dir is not None and (Path(model_dir) / COMPOUND_FILE.format(lang=lang)).is_file():
        splitter = CompoundSplitter.load(Path(model_dir) / COMPOUND_FILE.format(lang=lang))

    def run(text: str) -> list[str]:
        return preprocess(text, lang, splitter)

    return run
