"""Query translation with a model folder and a per-sentence cache.

:class:`Translator` preprocesses text as the model's bitext was (:func:`clirplug.mt.preprocess.preprocessor`),
decodes it with :class:`clirplug.mt.decoder.Decoder` and caches each sentence's n-best list
(and, on request, its +LM forest) under ``DIR/cache/``. A cache entry is keyed by the SHA-256
of the model files (grammar, LM, compound splitter), the weights, the decoder settings and
the sentence's tokens, so a repeated run costs nothing (the grammar is not even loaded) and
any change of model or settings misses. Entries are written atomically.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from clirplug.atomic import atomic_open
from clirplug.digest import update_digest
from clirplug.errors import ClirplugError
from clirplug.mt import KINDS
from clirplug.mt.decoder import (
    DEFAULT_MAX_SPAN,
    DEFAULT_POP_LIMIT,
    Decoder,
    Translation,
    translations,
    unique_translations,
)
from clirplug.mt.features import DEFAULT_WEIGHTS, model_features, read_weights
from clirplug.mt.forest_file import load_forest, save_forest
from clirplug.mt.grammar import Rule, SourcePhrases, format_rule, parse_rule, read_grammar
from clirplug.mt.hypergraph import Hypergraph, gc_paused
from clirplug.mt.kbest import kbest
from clirplug.mt.lm import LanguageModel
from clirplug.mt.preprocess import COMPOUND_FILE, chunks, preprocessor, query_limit, split_sentences, topic_sentences


def check_source_language(model_dir, src_lang: str) -> None:
    """Refuse ``src_lang`` for a model folder trained from another source language, as its word alignment
    ``align.F-E`` says (``clirplug train align``): its tables would meet none of the query's words, and every
    query would silently be translated into its untranslated words. A folder without one is not checked."""
    trained = sorted({path.name[len("align."):].split("-")[0] for path in Path(model_dir).glob("align.*-*")})
    if trained and src_lang not in trained:
        raise ClirplugError(f"{model_dir}: a model trained on {'/'.join(trained)} text (align.{trained[0]}-*), "
                            f"not on {src_lang}: the source language ({src_lang}) does not match the model")


RULES_KEPT = 200_000  # parsed rules of cached forests kept for the next forests
NBEST_KEPT = 10  # derivations read off a sentence's new forest and cached: a later n-best up to this long (PSQ's,
# MIRA's after DT's 1-best) is a cache hit, not a second decoding; reading them costs little beside decoding


class Translator:
    """Translate text with the model in ``model_dir`` (layout in ``docs/models.md``).

    Parameters
    ----------
    model_dir : path
        Holds ``grammar.<kind>.gz``, ``lm.arpa``, optionally ``weights.<kind>`` (tuned
        weights, used unless ``weights`` is given) and ``compound.<src_lang>.tsv``.
    kind : {"hiero", "flat"}
    weights : mapping or path, optional
        Overrides the folder's tuned weights (missing ones take the defaults); a weights file
        may only name the model's features (:func:`~clirplug.mt.features.model_features`).
    cache : bool
        Read and write ``model_dir/cache/``.

    Call :meth:`restrict` with the sentences to translate before the first translation, so
    that only the grammar rules that can apply to them are loaded (a full Hiero grammar holds millions).
    """

    def __init__(self, model_dir, kind: str = "hiero", weights: Mapping[str, float] | None = None,
                 pop_limit: int = DEFAULT_POP_LIMIT, max_span: int = DEFAULT_MAX_SPAN, src_lang: str = "de",
                 cache: bool = True):
        if kind not in KINDS:
            raise ClirplugError(f"unknown grammar kind {kind!r}: choose one of {', '.join(KINDS)}")
        self.model_dir = Path(model_dir)
        if not self.model_dir.is_dir():
            raise ClirplugError(f"{model_dir}: no such model folder (see docs/models.md)")
        self.grammar_path = self.model_dir / f"grammar.{kind}.gz"
        self.lm_path = self.model_dir / "lm.arpa"
        for path in (self.grammar_path, self.lm_path):
            if not path.is_file():
                raise ClirplugError(f"{path}: missing; train the model first (see docs/models.md)")
        if weights is None:
            tuned = self.model_dir / f"weights.{kind}"
            weights = read_weights(tuned, self.feature_names) if tuned.is_file() else {}
        elif not isinstance(weights, Mapping):
            weights = read_weights(weights, self.feature_names)
        self.weights = {**DEFAULT_WEIGHTS, **weights}
        self.kind, self.pop_limit, self.max_span, self.src_lang = kind, pop_limit, max_span, src_lang
        self.cache = cache
        check_source_language(self.model_dir, src_lang)
        self.tokenize = preprocessor(src_lang, self.model_dir)
        self._decoder: Decoder | None = None
        self._signature: str | None = None
        self._restriction: SourcePhrases | None = None
        self._rules: list[Rule] | None = None
        self._added: set[str] = set()  # phrases restricted to since the decoder was loaded

    @functools.cached_property
    def feature_names(self) -> set[str]:
        """The names a weight of this model may have (:func:`~clirplug.mt.features.model_features`)."""
        return model_features(self.grammar_path)

    @property
    def restriction(self) -> SourcePhrases | None:
        """The source phrases whose rules are loaded (``None``: the whole grammar)."""
        return self._restriction

    def restrict(self, sentences: Sequence[Sequence[str]], rules: list[Rule] | None = None) -> None:
        """Load only the rules usable on these token lists (more can be added before loading).

        Translating a sentence with a phrase outside the restriction later adds the rules of the new
        phrases to the decoder, so results never depend on it. ``rules`` may give the
        grammar file's rules already read for exactly these sentences
        (``read_grammar(path, SourcePhrases(sentences))``), which the decoder then uses instead
        of reading them again (on the first restriction only).
        """
        if self._restriction is None:
            self._restriction = SourcePhrases(sentences)
            self._rules = rules
        else:
            self._added |= self._restriction.add(sentences)

    @property
    def decoder(self) -> Decoder:
        """The decoder, loaded on first use (with the rules the :meth:`restrict` sentences can use only); the
        rules of phrases :meth:`restrict` added later are read and added to it (:meth:`Decoder.add_rules`)."""
        if self._decoder is None:
            if self._rules is None:
                self._rules, self._added = read_grammar(self.grammar_path, self._restriction), set()
            self._decoder = Decoder(self._rules, self._language_model, self.weights, pop_limit=self.pop_limit,
                                    max_span=self.max_span)
            self._rules = None
        if self._added:
            self._decoder.add_rules(read_grammar(self.grammar_path, self._restriction, self._added))
            self._added = set()
        return self._decoder

    @functools.cached_property
    def _language_model(self) -> LanguageModel:
        """The LM, loaded on the decoder's first use."""
        return LanguageModel(self.lm_path)

    def restrict_topics(self, topics, field: str) -> None:
        """:meth:`restrict` to the sentences of the topics' ``field`` (:meth:`topic_sentences`)."""
        self.restrict([tokens for topic in topics for tokens in self.topic_sentences(topic, field)])

    def _decoder_for(self, tokens: Sequence[str]) -> Decoder:
        if self._restriction is not None:
            self.restrict([tokens])
        return self.decoder

    def _key(self, tokens: Sequence[str], what: str, suffix: str = ".json.gz") -> Path:
        if self._signature is None:
            digest = hashlib.sha256()
            compound = self.model_dir / COMPOUND_FILE.format(lang=self.src_lang)
            for path in (self.grammar_path, self.lm_path, compound):
                if path.is_file():
                    update_digest(digest, path)
            settings = {"kind": self.kind, "pop_limit": self.pop_limit, "max_span": self.max_span,
                        "weights": sorted(self.weights.items())}
            digest.update(json.dumps(settings).encode())
            self._signature = digest.hexdigest()
        key = hashlib.sha256(json.dumps([self._signature, what, list(tokens)]).encode()).hexdigest()
        return self.model_dir / "cache" / key[:2] / f"{key}.{what}{suffix}"

    def _read(self, path: Path):
        if self.cache and path.is_file():
            try:
                return json.loads(gzip.decompress(path.read_bytes()))
            except (OSError, ValueError):
                return None  # a damaged entry is recomputed and rewritten
        return None

    def _write(self, path: Path, data) -> None:
        if self.cache:
            with atomic_open(path, "wb") as out:
                out.write(gzip.compress(json.dumps(data, ensure_ascii=False).encode("utf-8"), mtime=0))

    def topic_sentences(self, topic, field: str) -> list[list[str]]:
        """A topic's ``field`` as token lists, a title whole (:func:`clirplug.mt.preprocess.topic_sentences`)."""
        return topic_sentences(topic, field, self.src_lang, self.tokenize)

    def sentences(self, text: str, split: bool = True, query: bool = False) -> list[list[str]]:
        """``text`` as MT token lists: one per sentence (``split``) or one for the whole text, those
        longer than :data:`~clirplug.mt.preprocess.MAX_SENTENCE_TOKENS` cut into
        :func:`~clirplug.mt.preprocess.chunks`; of a ``query``, the tokens beyond
        :data:`~clirplug.mt.preprocess.MAX_QUERY_TOKENS` dropped with a warning."""
        parts = split_sentences(text, self.src_lang) if split else [text]
        sentences = [piece for tokens in (self.tokenize(part) for part in parts) if tokens for piece in chunks(tokens)]
        return query_limit(sentences, f"a query of {len(text):,} characters") if query else sentences

    def forest(self, tokens: Sequence[str]) -> Hypergraph:
        """The +LM forest of ``tokens`` (cached as a binary file, :mod:`clirplug.mt.forest_file`; an entry of
        the earlier gzipped JSON form is read and written again as one)."""
        path = self._key(tokens, "forest", ".npz")
        forest = self._cached_forest(path) if self.cache else None
        if forest is None:
            legacy = self._key(tokens, "forest")
            with gc_paused():
                data = self._read(legacy)
                # a +LM forest repeats each rule on many edges (one per LM state): parse it once
                forest = Hypergraph.from_json(data, self._parsed_rule, str(legacy)) if data is not None else None
            if forest is None:
                forest = self._decoder_for(tokens).forest(tokens)
            if self.cache:
                save_forest(path, forest, format_rule)
        return forest

    def _cached_forest(self, path: Path) -> Hypergraph | None:
        """The forest cached at ``path``; None when there is none, or a damaged one (computed and written again)."""
        if not path.is_file():
            return None
        with gc_paused():
            try:
                return load_forest(path, self._parsed_rule)
            except ClirplugError:
                return None

    @functools.cached_property
    def _parsed_rule(self):
        """:func:`parse_rule`, each rule parsed once for all the forests read (rules are immutable; forests of
        different queries share many)."""
        return functools.lru_cache(maxsize=RULES_KEPT)(parse_rule)

    def translate(self, tokens: Sequence[str], nbest: int = 1, forest: Hypergraph | None = None,
                  unique: bool = False) -> list[Translation]:
        """The ``nbest`` best translations of ``tokens`` (cached), read off ``forest`` if given: the best
        derivations, whose strings may repeat, or with ``unique`` the best derivation of each of the ``nbest``
        best distinct strings (reading at most ``UNIQUE_FACTOR * nbest`` derivations, as
        :meth:`~clirplug.mt.decoder.Decoder.translate` does).

        One cache entry per sentence holds the longest list of derivations computed so far, at least
        :data:`NBEST_KEPT` (lazy k-best yields the same leading derivations whatever k), so a 1-best
        after a 10-best, and a 10-best after a 1-best, are cache hits; the entry also records whether
        the forest had fewer derivations than were read. A
        list of distinct strings has an entry per ``nbest``, since its derivation limit grows with it.
        """
        if unique and nbest > 1:
            path = self._key(tokens, f"unique{nbest}")
            data = self._read(path)
            if data is not None:
                return _translations(data["translations"])
            hypergraph = forest if forest is not None else self._decoder_for(tokens).forest(tokens)
            result = unique_translations(hypergraph, self.weights, nbest)
            self._write(path, {"translations": [translation_json(t) for t in result]})
            return result
        path = self._key(tokens, "nbest")
        data = self._read(path)
        if data is not None and (len(data["translations"]) >= nbest or data["exhausted"]):
            return _translations(data["translations"][:nbest])
        hypergraph = forest if forest is not None else self._decoder_for(tokens).forest(tokens)
        kept = max(nbest, NBEST_KEPT) if self.cache else nbest
        result = translations(hypergraph, kbest(hypergraph, self.weights, kept))
        self._write(path, {"translations": [translation_json(t) for t in result], "exhausted": len(result) < kept})
        return result[:nbest]


def _translations(records: list[dict]) -> list[Translation]:
    """Translations from :func:`translation_json`'s dicts; a rule the derivations of a list share (most of
    them) is parsed once."""
    parse = functools.lru_cache(maxsize=None)(parse_rule)
    return [Translation(tuple(record["words"]), record["score"], record["features"],
                        tuple(tuple(a) for a in record["alignment"]), tuple(map(parse, record["rules"])))
            for record in records]


def translation_json(translation: Translation) -> dict:
    """A translation as a JSON-able dict (rules in the cdec text form)."""
    return {
        "words": list(translation.words),
        "score": translation.score,
        "features": translation.features,
        "alignment": [list(a) for a in translation.alignment],
        "rules": [format_rule(r) for r in translation.rules],
    }
