"""The MT-side text chain: sentence splitting, normalization, tokenization, lowercasing, German compound splitting.

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

Per language (:func:`normalize`, :func:`segment`): Arabic and Persian text is NFKC, without
diacritics and tatweel, with one form per letter and ASCII digits (as Lucene's Arabic and Persian
analyzers normalize it) and words split at the zero-width non-joiner; Chinese and Japanese
tokens are segmented into words (jieba, janome: ``pip install clirplug[cjk]``); Turkish
lowercases dotted and dotless I as Turkish does. Every other language goes through the chain above
unchanged.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from clirplug.errors import ClirplugError, warn

if TYPE_CHECKING:
    from clirplug.mt.compound import CompoundSplitter

COMPOUND_FILE = "compound.{lang}.tsv"  # the splitter a model folder ships, see docs/models.md

# The longest token list the decoder is given: its forest grows with the sentence (about
# 1 MB of memory per token on the demo model, several on manclir-de), so longer sentences
# are translated in chunks (:func:`chunks`). The longest sentence of the manclir-de topics
# has 84 tokens; docs/reliability.md states the limit.
MAX_SENTENCE_TOKENS = 100
# The most MT tokens of one query (a topic's field, a text) that are translated: beyond them the work would
# grow without bound with the query (a 1 MB query holds some 150,000 tokens). The longest field of the
# manclir-de and manclir-ja topics has 125 tokens; docs/reliability.md states the limit.
MAX_QUERY_TOKENS = 1_000


def _mark_ranges() -> str:
    """The combining marks (Unicode categories Mn, Mc, Me) as a regex character-class body.

    Python's ``\\w`` leaves them out, which would cut Devanagari, Bengali, Telugu or Thai words at
    every vowel sign; a word may therefore contain them. Marks beyond U+1FFFF are only the
    variation selectors supplement, added as one range.
    """
    marks = [c for c in range(0x300, 0x20000) if unicodedata.category(chr(c)).startswith("M")]
    ranges, start = [], marks[0]
    for previous, current in zip(marks, marks[1:] + [None]):
        if current != previous + 1:
            ranges.append(f"\\u{start:04x}-\\u{previous:04x}" if previous < 0x10000 else f"\\U{start:08x}-\\U{previous:08x}")
            start = current
    return "".join(ranges) + "\\U000e0100-\\U000e01ef"


WORD = rf"[\w{_mark_ranges()}]"  # a word character: \w or a combining mark
TOKEN = re.compile(
    r"""
      (?:https?|ftp)://[^\s<>"]*[^\s<>".,;:!?)\]}']     # URL
    | (?<![\w/.~])(?:~|\.{1,2})?/[\w.+-]+(?:/[\w.+-]+)*/? # path: /etc/passwd, ~/.bashrc, ./configure
    | (?<![\w-])--?[^\W\d_][\w-]*                        # option: -r, --recursive, --no-color
    | \wWORD*(?:[.'’]WORD+)*                              # word, number, file.txt, 1.5, don't, हिन्दी
    | [^\w\s]                                            # any other symbol, one at a time
    """.replace("WORD", WORD),
    re.VERBOSE,
)

# A sentence may end at . ! ? (plus closing quotes/brackets) followed by space; it does when
# the next text (after opening quotes) starts with an upper-case letter or a digit. In a language
# whose script has no case (UNCASED), any letter may start the next sentence; Chinese and Japanese
# full stops need no space after them, and Arabic and Persian ask with ؟.
BOUNDARY = re.compile(r"""[.!?]+["'»«”’)\]]*\s+""")
OPENING = "\"'„“»«([‚‘"
CJK_BOUNDARY = re.compile(r"""[.!?]+["'»«”’)\]]*\s+|[。！？]+["”’」』)）]*\s*""")
ARABIC_BOUNDARY = re.compile(r"""[.!?؟]+["'»«”’)\]]*\s+""")
SCRIPT_BOUNDARIES = {"zh": CJK_BOUNDARY, "ja": CJK_BOUNDARY, "ar": ARABIC_BOUNDARY, "fa": ARABIC_BOUNDARY}
SCRIPT_OPENING = {"zh": OPENING + "“「『（", "ja": OPENING + "“「『（"}
UNCASED = frozenset({"ar", "bn", "fa", "hi", "ja", "ko", "te", "th", "zh"})

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

    A boundary is sentence-final punctuation followed by white space (none is needed after
    Chinese and Japanese ``。！？``) and an upper-case letter or digit (any letter in a language
    of :data:`UNCASED`), except after a known abbreviation of ``lang`` (``z.B.``, ``e.g.``), a single
    letter (an initial) or, in German, a number (an ordinal such as ``3. Oktober``).
    """
    abbreviations = ABBREVIATIONS.get(lang, frozenset())
    opening, uncased = SCRIPT_OPENING.get(lang, OPENING), lang in UNCASED
    sentences, start, previous_end = [], 0, 0
    for match in SCRIPT_BOUNDARIES.get(lang, BOUNDARY).finditer(text):
        after = match.end()
        while after < len(text) and text[after] in opening:
            after += 1
        following = text[after : after + 1]
        begin, previous_end = previous_end, match.end()
        if not (following.isupper() or following.isdigit() or (uncased and following.isalpha())):
            continue
        last = _last_word(text, begin, match.start()).lower()
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


def _last_word(text: str, begin: int, end: int) -> str:
    """The last white-space-separated word of ``text[begin:end]`` ("" if none), found from its end: the work
    is the length of that word and the white space after it, so :func:`split_sentences` stays linear."""
    while end > begin and text[end - 1].isspace():
        end -= 1
    start = end
    while start > begin and not text[start - 1].isspace():
        start -= 1
    return text[start:end]


def chunks(tokens: list[str], limit: int = MAX_SENTENCE_TOKENS) -> list[list[str]]:
    """``tokens`` cut into the fewest consecutive pieces of at most ``limit`` tokens, of near
    equal length; a list within the limit is returned whole (``[tokens]``)."""
    count = -(-len(tokens) // limit)
    if count <= 1:
        return [tokens]
    bounds = [len(tokens) * k // count for k in range(count + 1)]
    return [tokens[start:end] for start, end in zip(bounds, bounds[1:])]


def query_limit(sentences: list[list[str]], what: str, limit: int = MAX_QUERY_TOKENS) -> list[list[str]]:
    """The token lists ``sentences`` of one query up to ``limit`` tokens in all (:data:`MAX_QUERY_TOKENS`), the
    tokens beyond it dropped with a warning naming the query (``what``)."""
    total = sum(map(len, sentences))
    if total <= limit:
        return sentences
    kept: list[list[str]] = []
    for tokens in sentences:
        left = limit - sum(map(len, kept))
        if left <= 0:
            break
        kept.append(tokens[:left])
    warn(f"{what} has {total:,} MT tokens; only the first {limit:,} are translated")
    return kept


def topic_sentences(topic, field: str, lang: str, tokenize: Callable[[str], list[str]]) -> list[list[str]]:
    """A topic's ``field`` as MT token lists: a ``title`` whole, any other field one list per
    sentence (queries are translated so by DT, PSQ, BOW-FD and MIRA alike); empty ones dropped,
    longer ones than :data:`MAX_SENTENCE_TOKENS` cut into :func:`chunks`, and tokens beyond
    :data:`MAX_QUERY_TOKENS` dropped (:func:`query_limit`)."""
    from clirplug.io.topics import topic_field

    text = topic_field(topic, field)
    parts = [text] if field == "title" else split_sentences(text, lang)
    sentences = [piece for tokens in map(tokenize, parts) if tokens for piece in chunks(tokens)]
    if sum(map(len, sentences)) <= MAX_QUERY_TOKENS:
        return sentences
    return query_limit(sentences, f"topic {topic.id!r}: its {field}")


# Arabic-script normalization, after Lucene's ArabicNormalizer (alef forms -> alef, alef maksura -> yeh,
# teh marbuta -> heh, no tatweel or harakat; hamza and superscript alef marks dropped too), DecimalDigitFilter (digits -> ASCII) and PersianCharFilter
# (the zero-width non-joiner separates words). Persian then writes yeh and kaf in their Persian forms
# (as hazm's normalizer does) and heh with yeh above or heh goal as heh (Lucene's PersianNormalizer).
_ARABIC = {**dict.fromkeys(map(ord, "أإآٱ"), "ا"), ord("ى"): "ي", ord("ة"): "ه", ord("\u200c"): " ",
           **dict.fromkeys([0x0640, *range(0x064B, 0x0653), 0x0654, 0x0655, 0x0670], None),
           **{0x0660 + d: str(d) for d in range(10)}, **{0x06F0 + d: str(d) for d in range(10)}}
_PERSIAN = {**_ARABIC, ord("ي"): "ی", ord("ى"): "ی", ord("ك"): "ک", ord("ۀ"): "ه", ord("ہ"): "ه"}
NORMALIZATION = {"ar": _ARABIC, "fa": _PERSIAN}
"""Language -> ``str.translate`` table applied after NFKC."""
NFKC_LANGUAGES = frozenset({"ar", "fa", "zh", "ja"})  # presentation forms, full-width Latin, half-width kana
LOWERCASE = {"tr": str.maketrans("Iİ", "ıi")}  # Turkish: I -> ı, İ -> i before str.lower
CJK = re.compile(r"[\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f]")


def normalize(text: str, lang: str) -> str:
    """``text`` in Unicode NFC (NFKC for Arabic, Persian, Chinese, Japanese), with the letter
    normalization of :data:`NORMALIZATION` for Arabic and Persian."""
    text = unicodedata.normalize("NFKC" if lang in NFKC_LANGUAGES else "NFC", text)
    table = NORMALIZATION.get(lang)
    return text.translate(table) if table else text


@functools.cache
def _segmenter(lang: str) -> Callable[[str], list[str]]:
    """The word segmenter of Chinese (jieba) or Japanese (janome), loaded once per process."""
    try:
        if lang == "zh":
            import logging

            import jieba

            jieba.setLogLevel(logging.WARNING)  # not its "Building prefix dict" lines on stderr
            tokenizer = jieba.Tokenizer()
            return lambda token: tokenizer.lcut(token, HMM=True)
        from janome.tokenizer import Tokenizer

        analyzer = Tokenizer(wakati=True)
        return lambda token: list(analyzer.tokenize(token))
    except ImportError as error:
        raise ClirplugError(f"segmenting {lang} text needs {error.name}: pip install 'clirplug[cjk]'") from error


def segment(tokens: list[str], lang: str) -> list[str]:
    """``tokens`` with each Chinese (``zh``) or Japanese (``ja``) token cut into words; other languages unchanged."""
    if lang not in ("zh", "ja"):
        return tokens
    words = []
    for token in tokens:
        if CJK.search(token):
            words.extend(word for word in _segmenter(lang)(token) if word.strip())
        else:
            words.append(token)
    return words


def tokenize(text: str, lang: str) -> list[str]:
    """Split ``text`` into tokens (case kept): :func:`normalize`, the rules of the module docstring, :func:`segment`."""
    return segment(TOKEN.findall(normalize(text, lang)), lang)


def preprocess(text: str, lang: str, compounds: CompoundSplitter | None = None) -> list[str]:
    """Raw text to MT tokens: :func:`tokenize` (normalized, segmented), lowercase, then compound splitting.

    Parameters
    ----------
    text
        Raw text (one sentence or a whole paragraph; sentences are not separated here).
    lang
        Language code (``"de"``, ``"en"``, ``"zh"``...): selects the normalization and word
        segmentation of :func:`tokenize` and the lowercasing (Turkish I).
    compounds
        A trained Koehn & Knight (2003) splitter applied to every token, or ``None``. A model
        folder ships the one used in training as ``compound.<lang>.tsv``: load it with
        :func:`preprocessor` so queries are split exactly as the bitext was.
    """
    table = LOWERCASE.get(lang)
    tokens = [(token.translate(table) if table else token).lower() for token in tokenize(text, lang)]
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
