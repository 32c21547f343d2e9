"""Integrity of the embedded demo collection (clirplug/data/demo) and its top-level copies."""

import hashlib
import json
import re
from collections import defaultdict
from pathlib import Path

import pytest

from clirplug.data import demo_path

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
SPLITS = ("train", "dev")


def _jsonl(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def demo():
    return demo_path()


@pytest.fixture(scope="module")
def corpus(demo):
    return {doc["id"]: doc for doc in _jsonl(demo / "corpus.jsonl")}


@pytest.fixture(scope="module")
def topics(demo):
    return {split: _jsonl(demo / f"topics.{split}.jsonl") for split in SPLITS}


@pytest.fixture(scope="module")
def qrels(demo):
    out = {}
    for split in SPLITS:
        judged = defaultdict(dict)
        for line in (demo / f"qrels.{split}.txt").read_text(encoding="utf-8").splitlines():
            topic, zero, docid, rel = line.split(" ")
            assert zero == "0"
            judged[topic][docid] = int(rel)
        out[split] = judged
    return out


def test_demo_path_is_the_packaged_folder(demo):
    assert demo.is_dir() and demo.name == "demo" and demo.parent.name == "data"
    expected = {"README.md", "manifest.json", "corpus.jsonl", "dictionary.tsv"}
    expected |= {f"{kind}.{split}.{ext}" for split in SPLITS
                 for kind, ext in (("topics", "jsonl"), ("topics", "trec"), ("qrels", "txt"),
                                   ("bitext", "de"), ("bitext", "en"))}
    assert expected <= {path.name for path in demo.iterdir()}


def test_corpus_records(demo, corpus):
    lines = (demo / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(corpus), "duplicate document ids"
    assert 300 <= len(corpus) <= 400
    for doc in corpus.values():
        assert list(doc) == ["id", "title", "contents"]
        assert re.fullmatch(r"[\w.\-]+\.[1-8]", doc["id"]), doc["id"]
        name = doc["id"].rsplit(".", 1)[0]
        assert doc["contents"].startswith(f"{name} - {doc['title']}")
        assert 80 <= len(doc["contents"].split()) <= 250, doc["id"]
        assert doc["contents"] == " ".join(doc["contents"].split())


def test_corpus_is_not_boilerplate(corpus):
    """No sentence may dominate the collection: BM25 must be able to tell pages apart."""
    counts = defaultdict(int)
    for doc in corpus.values():
        for sentence in set(re.split(r"(?<=\.) ", doc["contents"])):
            counts[sentence] += 1
    assert max(counts.values()) < 0.25 * len(corpus)
    assert len({doc["title"] for doc in corpus.values()}) > 0.8 * len(corpus)


def test_topics_have_german_title_and_desc(topics, corpus):
    all_topics = topics["train"] + topics["dev"]
    assert len(all_topics) >= 30 and len(topics["dev"]) >= 10
    assert len({topic["id"] for topic in all_topics}) == len(all_topics)
    for topic in all_topics:
        assert list(topic) == ["id", "title", "desc", "lang"]
        assert topic["lang"] == "de"
        assert topic["id"] in corpus
        assert topic["title"].strip() and topic["desc"].strip()
        assert topic["title"] != corpus[topic["id"]]["title"]
        assert len(topic["desc"].split()) <= 60
    german = " ".join(topic["title"] + " " + topic["desc"] for topic in all_topics)
    assert re.search("[äöüß]", german)


def test_qrels_judge_existing_documents(topics, qrels, corpus):
    for split in SPLITS:
        assert set(qrels[split]) == {topic["id"] for topic in topics[split]}
        for topic, judged in qrels[split].items():
            assert set(judged.values()) <= {1, 2}
            assert set(judged) <= set(corpus), f"{split}: unknown docids for {topic}"
            assert [doc for doc, rel in judged.items() if rel == 2] == [topic]
    assert not set(qrels["train"]) & set(qrels["dev"])


def test_relevance_one_is_the_see_also_section(qrels, corpus):
    for judged in qrels["train"].values():
        for docid, rel in judged.items():
            if rel == 1:
                topic = next(d for d, r in judged.items() if r == 2)
                name, section = docid.rsplit(".", 1)
                assert f"{name}({section})" in corpus[topic]["contents"]


def _trec(topic):
    def escape(text):
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")

    return (f"<top>\n<num> Number: {topic['id']} </num>\n<title> {escape(topic['title'])} </title>\n"
            f"<desc> Description:\n{escape(topic['desc'])}\n</desc>\n<narr> Narrative:\n</narr>\n</top>\n\n")


def test_trec_topics_match_jsonl(demo, topics):
    for split in SPLITS:
        text = (demo / f"topics.{split}.trec").read_text(encoding="utf-8")
        assert text == "".join(_trec(topic) for topic in topics[split])


def test_top_level_copies_equal_packaged_files(demo):
    for split in SPLITS:
        assert (REPO / "topics" / f"demo.{split}.jsonl").read_bytes() == (demo / f"topics.{split}.jsonl").read_bytes()
        assert (REPO / "qrels" / f"demo.{split}.txt").read_bytes() == (demo / f"qrels.{split}.txt").read_bytes()


def _lines(path):
    return path.read_text(encoding="utf-8").split("\n")[:-1]


def test_bitext_is_line_aligned(demo):
    sizes = {}
    for split in SPLITS:
        de, en = _lines(demo / f"bitext.{split}.de"), _lines(demo / f"bitext.{split}.en")
        assert len(de) == len(en)
        sizes[split] = len(de)
        for source, target in zip(de, en):
            assert source.strip() and target.strip() and source != target
            assert "\t" not in source + target
        assert len(set(zip(de, en))) == len(de), "duplicate pairs"
    assert 400 <= sizes["train"] <= 600 and 80 <= sizes["dev"] <= 150


def test_dev_topic_pages_not_in_train_bitext(demo, topics):
    """Neither the NAME line nor a desc sentence naming the page comes from a dev topic's page."""
    train_en = _lines(demo / "bitext.train.en")
    train_de = set(_lines(demo / "bitext.train.de"))
    for topic in topics["dev"]:
        name = topic["id"].rsplit(".", 1)[0]
        assert not [line for line in train_en if line.startswith(f"{name} - ")], topic["id"]
        sentences = re.split(r"(?<=\.) ", topic["desc"])
        naming = [s for s in sentences if re.search(rf"(?<!\w){re.escape(name)}(?!\w)", s)]
        assert naming, topic["id"]
        assert not set(naming) & train_de, topic["id"]


def test_train_bitext_covers_dev_topic_vocabulary(demo, topics, corpus):
    """DT/PSQ can only translate dev queries whose German words the train bitext teaches."""
    names = {docid.rsplit(".", 1)[0].lower() for docid in corpus}
    known = set(re.findall(r"\w+", (demo / "bitext.train.de").read_text(encoding="utf-8").lower()))
    needed = set()
    for topic in topics["dev"]:
        needed |= set(re.findall(r"\w+", (topic["title"] + " " + topic["desc"]).lower())) - names
    assert len(needed & known) >= 0.9 * len(needed), sorted(needed - known)


def test_dictionary_format(demo):
    lines = _lines(demo / "dictionary.tsv")
    assert len(lines) >= 200
    sources = []
    for lineno, line in enumerate(lines, 1):
        fields = line.split("\t")
        assert len(fields) == 2 and all(f.strip() == f and f for f in fields), f"dictionary.tsv:{lineno}"
        sources.append(fields[0])
    assert sources == sorted(sources)
    assert len(set(lines)) == len(lines)


def test_manifest_matches_files(demo, corpus, topics):
    manifest = json.loads((demo / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["collection"]["documents"] == len(corpus)
    assert manifest["splits"] == {split: len(topics[split]) for split in SPLITS}
    for name, info in manifest["files"].items():
        data = (demo / name).read_bytes()
        assert info["bytes"] == len(data)
        assert info["sha256"] == hashlib.sha256(data).hexdigest()
    total = sum(path.stat().st_size for path in demo.iterdir())
    assert total < 1_000_000
