"""The MT-side chain: tokenization, lowercasing, sentence splitting, compound splitting."""

import pytest

from clirplug.mt.compound import CompoundSplitter
from clirplug.mt.preprocess import preprocess, preprocessor, split_sentences, tokenize

pytestmark = pytest.mark.unit

TOKEN_CASES = [
    ("Das ist gut.", ["Das", "ist", "gut", "."]),
    ("siehe ls(1) und /etc/passwd", ["siehe", "ls", "(", "1", ")", "und", "/etc/passwd"]),
    ("mit --recursive oder -r", ["mit", "--recursive", "oder", "-r"]),
    ("--color=auto", ["--color", "=", "auto"]),
    ("NFC-Geräte, z.B. 1.5 MB", ["NFC", "-", "Geräte", ",", "z.B", ".", "1.5", "MB"]),
    ("Datei ~/.bashrc bzw. file.txt", ["Datei", "~/.bashrc", "bzw", ".", "file.txt"]),
    ("und/oder malloc_trim()", ["und", "/", "oder", "malloc_trim", "(", ")"]),
    ("See https://example.org/a?b=1.", ["See", "https://example.org/a?b=1", "."]),
    ("«Zitat» – don't", ["«", "Zitat", "»", "–", "don't"]),
]


@pytest.mark.parametrize("text, tokens", TOKEN_CASES)
def test_tokenize(text, tokens):
    assert tokenize(text, "de") == tokens


def test_nfc_normalization_and_lowercase():
    decomposed = "Gera\u0308te U\u0308BER"  # a + combining diaeresis
    assert preprocess(decomposed, "de") == ["geräte", "über"]


SENTENCE_CASES = [
    ("de", "Das ist z.B. gut. Äpfel sind rot! Am 3. Oktober geht es. und dann? Ja.",
     ["Das ist z.B. gut.", "Äpfel sind rot!", "Am 3. Oktober geht es. und dann?", "Ja."]),
    ("en", "Use e.g. ls. It works. See Dr. Who. 3 files.",
     ["Use e.g. ls.", "It works.", "See Dr. Who.", "3 files."]),
    ("en", 'He said "Go." Then "Stop!" (Really.) ', ['He said "Go."', 'Then "Stop!"', "(Really.)"]),
    ("de", "Siehe J. Schmidt. Ende", ["Siehe J. Schmidt.", "Ende"]),
    ("en", "no end", ["no end"]),
    ("en", "   ", []),
]


@pytest.mark.parametrize("lang, text, sentences", SENTENCE_CASES)
def test_split_sentences(lang, text, sentences):
    assert split_sentences(text, lang) == sentences


def test_compounds_are_split_after_lowercasing(tmp_path):
    splitter = CompoundSplitter({"datei": 10, "namen": 10}, min_length=4)
    assert preprocess("Die Dateinamen.", "de", splitter) == ["die", "datei", "namen", "."]
    splitter.save(tmp_path / "compound.de.tsv")
    assert preprocessor("de", tmp_path)("Dateinamen") == ["datei", "namen"]
    assert preprocessor("en", tmp_path)("Dateinamen") == ["dateinamen"]  # no compound.en.tsv
    assert preprocessor("de")("Dateinamen") == ["dateinamen"]
