"""The document languages clirplug indexes and searches: every analyzer Anserini picks by language.

Anserini (1.7, ``IndexCollection.getAnalyzer`` and ``SearchCollection``) analyzes ``en`` with its
``DefaultEnglishAnalyzer`` (Porter stemmer, Lucene's English stopwords), a language of
``io.anserini.analysis.AnalyzerMap`` with that Lucene analyzer, and ``ha``, ``so``, ``sw``, ``yo``
with Lucene's ``WhitespaceAnalyzer`` (no lowercasing, no stemming). Any other code would fall back
to the English analyzer silently, so clirplug accepts only these. This module imports no Java:
the command line takes its ``--language`` choices from it.
"""

ANALYZERS = {
    "en": "io.anserini.analysis.DefaultEnglishAnalyzer",
    "ar": "org.apache.lucene.analysis.ar.ArabicAnalyzer",
    "bn": "org.apache.lucene.analysis.bn.BengaliAnalyzer",
    "da": "org.apache.lucene.analysis.da.DanishAnalyzer",
    "de": "org.apache.lucene.analysis.de.GermanAnalyzer",
    "es": "org.apache.lucene.analysis.es.SpanishAnalyzer",
    "fa": "org.apache.lucene.analysis.fa.PersianAnalyzer",
    "fi": "org.apache.lucene.analysis.fi.FinnishAnalyzer",
    "fr": "org.apache.lucene.analysis.fr.FrenchAnalyzer",
    "ha": "org.apache.lucene.analysis.core.WhitespaceAnalyzer",
    "hi": "org.apache.lucene.analysis.hi.HindiAnalyzer",
    "hu": "org.apache.lucene.analysis.hu.HungarianAnalyzer",
    "id": "org.apache.lucene.analysis.id.IndonesianAnalyzer",
    "it": "org.apache.lucene.analysis.it.ItalianAnalyzer",
    "ja": "org.apache.lucene.analysis.ja.JapaneseAnalyzer",
    "ko": "org.apache.lucene.analysis.cjk.CJKAnalyzer",
    "nl": "org.apache.lucene.analysis.nl.DutchAnalyzer",
    "no": "org.apache.lucene.analysis.no.NorwegianAnalyzer",
    "pl": "org.apache.lucene.analysis.morfologik.MorfologikAnalyzer",
    "pt": "org.apache.lucene.analysis.pt.PortugueseAnalyzer",
    "ru": "org.apache.lucene.analysis.ru.RussianAnalyzer",
    "so": "org.apache.lucene.analysis.core.WhitespaceAnalyzer",
    "sv": "org.apache.lucene.analysis.sv.SwedishAnalyzer",
    "sw": "org.apache.lucene.analysis.core.WhitespaceAnalyzer",
    "te": "org.apache.lucene.analysis.te.TeluguAnalyzer",
    "th": "org.apache.lucene.analysis.th.ThaiAnalyzer",
    "tr": "org.apache.lucene.analysis.tr.TurkishAnalyzer",
    "uk": "org.apache.lucene.analysis.uk.UkrainianMorfologikAnalyzer",
    "yo": "org.apache.lucene.analysis.core.WhitespaceAnalyzer",
    "zh": "org.apache.lucene.analysis.cjk.CJKAnalyzer",
}
"""Language code -> the Java class of the analyzer Anserini indexes and searches it with."""

LANGUAGES = tuple(ANALYZERS)
"""The language codes clirplug indexes and searches (``clirplug index --language``)."""


def check_language(language: str, option: str = "--language") -> str:
    """``language`` when Anserini has an analyzer for it; otherwise a ClirplugError listing the choices."""
    from clirplug.errors import ClirplugError

    if language not in ANALYZERS:
        raise ClirplugError(f"{option} {language!r}: choose one of {', '.join(sorted(LANGUAGES))}")
    return language
