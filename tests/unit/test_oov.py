"""Untranslated query words (``clirplug.mt.oov``) on a hand-made model, and the dictionary's segmentation."""

import pytest

from clirplug.errors import ClirplugError
from clirplug.io.topics import Topic
from clirplug.mt.lexicon import LexicalTable
from clirplug.mt.oov import TABLE, TopicOov, dictionary_segmentation, oov_share, topics_oov
from clirplug.mt.preprocess import preprocess

pytestmark = pytest.mark.unit

ENTRIES = [("datei", "file", 0.7), ("datei", "files", 0.3), ("kopieren", "copy", 1.0), ("und", "and", 1.0),
           ("verzeichnis", "directory", 1.0), ("haus", "house", 1.0), ("tür", "door", 1.0)]


@pytest.fixture()
def model(tmp_path):
    LexicalTable.from_entries(ENTRIES).save(tmp_path / TABLE)
    return tmp_path


def test_untranslated_words_per_topic_and_their_share(model):
    topics = [Topic("1", "Datei kopieren", "Eine Datei und ein Verzeichnis kopieren. Mit rsync 3.1!"),
              Topic("2", "Haus und Tür", "Haus."), Topic("3", "", "")]
    title = topics_oov(topics, "title", model, "de")
    assert title == [TopicOov("1", 2, ()), TopicOov("2", 3, ()), TopicOov("3", 0, ())]
    desc = topics_oov(topics, "desc", model, "de")  # tokens of each sentence, lowercased as the bitext
    assert desc[0] == TopicOov("1", 11, ("eine", "ein", ".", "mit", "rsync", "3.1", "!"))
    assert desc[1] == TopicOov("2", 2, (".",))
    assert oov_share(desc) == {"topics": 3, "tokens": 13, "untranslated": 8, "share": 8 / 13,
                               "topics_with_untranslated": 2}
    assert oov_share([]) == {"topics": 0, "tokens": 0, "untranslated": 0, "share": 0.0, "topics_with_untranslated": 0}
    with pytest.raises(ClirplugError, match=TABLE):
        topics_oov(topics, "title", model / "absent", "de")


def test_dictionary_terms_cut_by_the_segmenter_are_counted(model, tmp_path):
    dictionary = tmp_path / "dictionary.tsv"
    dictionary.write_text("Haustür\thouse door\nHaustür\tfront door\nDatei-Verzeichnis\tfile directory\n"
                          "Tür\tdoor\nrsync-Datei\trsync file\nin Ordnung\tall right\n", encoding="utf-8")
    table = LexicalTable.load(model / TABLE)

    def split_compounds(text):  # a compound splitter that knows Haustür only
        return [part for token in preprocess(text, "de") for part in (["haus", "tür"] if token == "haustür" else [token])]

    counts = dictionary_segmentation(dictionary, "de", split_compounds, table)
    assert {key: counts[key] for key in ("terms", "one_word_terms", "split", "changed", "empty", "split_translated")} == {
        "terms": 5, "one_word_terms": 4, "split": 3, "changed": 0, "empty": 0, "split_translated": 1}
    assert counts["split_examples"] == ["Haustür -> haus tür", "Datei-Verzeichnis -> datei - verzeichnis",
                                        "rsync-Datei -> rsync - datei"]
    assert dictionary_segmentation(dictionary, "de", lambda text: preprocess(text, "de"))["split"] == 2
    bad = tmp_path / "bad.tsv"
    bad.write_text("Haus\n", encoding="utf-8")
    with pytest.raises(ClirplugError, match="bad.tsv:1"):
        dictionary_segmentation(bad, "de", split_compounds)
