"""Koehn & Knight compound splitting, checked on frequency tables worked out by hand."""

import math

import pytest

from clirplug.errors import ClirplugError
from clirplug.mt.compound import CompoundSplitter
from clirplug.stopwords import load_stopwords

pytestmark = pytest.mark.unit

# Hand-made frequencies; every expected split below is computed in its comment.
COUNTS = {
    "aktion": 20, "aktionsplan": 5, "plan": 50,  # sqrt(20*50)=31.6 > 5: split, filler "s"
    "arbeit": 100, "speicher": 30,  # arbeitsspeicher unseen: sqrt(100*30)=54.8 > 0
    "haus": 400, "tür": 10, "haustür": 80,  # sqrt(400*10)=63.2 < 80: keep whole
    "tageszeit": 9, "tages": 3, "zeit": 27,  # sqrt(3*27)=9, not > 9: keep whole (tie)
    "beispiel": 200, "spiel": 250,  # "bei" is excluded and shorter than 4 anyway
    "datei": 300, "namen": 40, "dateinamen": 5, "dateiname": 1,
    "systemdienst": 2, "system": 90, "dienst": 16, "sys": 5000, "temdienst": 1,
    "hauptspeicher": 0,
}


@pytest.fixture
def splitter():
    return CompoundSplitter(COUNTS, min_length=4, fillers=("s", "es"), excluded={"bei"})


@pytest.mark.parametrize(
    "word, parts",
    [
        ("aktionsplan", ["aktion", "plan"]),  # 31.6 > 5, with the filler s
        ("arbeitsspeicher", ["arbeit", "speicher"]),  # unseen whole word
        ("haustür", ["haustür"]),  # 63.2 < 80
        ("tageszeit", ["tageszeit"]),  # tie 9 = 9 is not "greater"
        ("beispiel", ["beispiel"]),  # "bei" is excluded (and too short)
        ("dateinamen", ["datei", "namen"]),  # sqrt(300*40)=109.5 > 5
        # "sys"+"temdienst" has parts shorter than 4 letters and is never considered;
        # system+dienst: sqrt(90*16)=37.9 > 2
        ("systemdienst", ["system", "dienst"]),
        ("hauptspeicher", ["hauptspeicher"]),  # "haupt" unknown: no split exists
        ("haus", ["haus"]),  # shorter than two parts
        ("x11-server", ["x11-server"]),  # not alphabetic
    ],
)
def test_hand_computed_splits(splitter, word, parts):
    assert splitter.split(word) == parts


def test_three_parts_beat_two_by_geometric_mean():
    # dateisystemdienst: datei|systemdienst -> sqrt(300*2)=24.5;
    # datei|system|dienst -> (300*90*16)^(1/3)=75.6; dateisystem unknown. Three parts win.
    splitter = CompoundSplitter(COUNTS, min_length=4)
    assert splitter.split("dateisystemdienst") == ["datei", "system", "dienst"]
    # with a frequent two-part alternative, two parts win: sqrt(400*1000)=632.5 > 75.6
    counts = dict(COUNTS, dateisystem=1000, dienst=400)
    best = CompoundSplitter(counts, min_length=4).split("dateisystemdienst")
    three = (300 * 90 * 400) ** (1 / 3)  # 221.0
    assert math.sqrt(1000 * 400) > three
    assert best == ["dateisystem", "dienst"]


def test_filler_es_and_minimum_length():
    counts = {"tag": 1000, "zeit": 27, "tageszeit": 0}
    # min_length 3: tag+es+zeit = sqrt(1000*27) = 164.3 > 0
    assert CompoundSplitter(counts, min_length=3).split("tageszeit") == ["tag", "zeit"]
    assert CompoundSplitter(counts, min_length=4).split("tageszeit") == ["tageszeit"]
    assert CompoundSplitter(counts, min_length=3, fillers=()).split("tageszeit") == ["tageszeit"]


def test_train_counts_alphabetic_tokens_and_save_load(tmp_path):
    sentences = [["die", "datei", "namen", "."], ["datei", "x11", "namen"], ["dateinamen"]]
    splitter = CompoundSplitter.train(sentences, min_length=4, excluded={"die"})
    assert splitter.counts == {"datei": 2, "namen": 2, "dateinamen": 1}
    assert splitter.split("dateinamen") == ["datei", "namen"]  # sqrt(2*2)=2 > 1
    splitter.save(tmp_path / "c.tsv")
    loaded = CompoundSplitter.load(tmp_path / "c.tsv")
    assert loaded.counts == splitter.counts
    assert (loaded.min_length, loaded.fillers, loaded.excluded) == (4, ("s", "es"), frozenset({"die"}))


def test_load_rejects_bad_files(tmp_path):
    (tmp_path / "bad.tsv").write_text("word\t3\n")
    with pytest.raises(ClirplugError, match="bad.tsv:1"):
        CompoundSplitter.load(tmp_path / "bad.tsv")
    (tmp_path / "bad2.tsv").write_text("#clirplug-compound-splitter\tmin_length=4\tfillers=s\texcluded=\nword x\n")
    with pytest.raises(ClirplugError, match="bad2.tsv:2"):
        CompoundSplitter.load(tmp_path / "bad2.tsv")


def test_shipped_german_stopwords():
    stopwords = load_stopwords("de")
    assert {"und", "der", "bei", "für", "über"} <= stopwords
    assert "datei" not in stopwords
