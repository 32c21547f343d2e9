"""Language codes of topics: ISO 639-3 codes and topic languages (``LANG`` or ``LANG:mt``)."""

from clirplug.errors import ClirplugError

# ISO 639-1 (and 639-2/B) codes -> ISO 639-3, the codes of HC4 and NeuCLIR topics
ISO639_3 = {"en": "eng", "fa": "fas", "ru": "rus", "zh": "zho", "de": "deu", "fr": "fra", "es": "spa", "ar": "ara",
            "it": "ita", "ja": "jpn", "ko": "kor", "nl": "nld", "pt": "por", "per": "fas", "chi": "zho", "ger": "deu",
            "fre": "fra"}


def iso639_3(code: str) -> str:
    """The ISO 639-3 code of a language code: ``fa`` -> ``fas``; a three-letter code is kept."""
    code = code.strip().lower()
    return ISO639_3.get(code, code)


def topic_language(spec: str) -> tuple[str, bool]:
    """Read a topic language ``LANG`` or ``LANG:mt`` (``en``, ``fas``, ``fa:mt``): ``(ISO 639-3 code, machine)``.

    ``LANG`` is the original topics or their human translation into LANG; ``LANG:mt`` the
    machine translation into LANG.
    """
    lang, sep, kind = spec.partition(":")
    code = iso639_3(lang)
    if not code.isalpha() or len(code) != 3 or (sep and kind != "mt"):
        raise ClirplugError(f"topic language {spec!r}: expected LANG or LANG:mt with a 2- or 3-letter code "
                            "(en, fa, fas:mt, ...)")
    return code, bool(sep)
