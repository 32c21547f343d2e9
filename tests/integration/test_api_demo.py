"""The Python API on the demo: each method's run equals the command line's and the experiment's, byte for byte.

The experiment (the session's ``demo`` fixture, configs/demo.yaml) trained the models and tuned PSQ,
BOW-FD, the dense peer's word count and fusion on train; the API and ``clirplug search|rerank|fuse``
are given the same models and the settings the experiment chose, and write the dev run with the
experiment's run tag.
"""

import json

import pandas as pd
import pytest

from clirplug.api import (
    BoostSearcher,
    BowfdSearcher,
    DenseSearcher,
    DtSearcher,
    FusionSearcher,
    LuceneSearcher,
    PsqSearcher,
    TranslationModel,
)
from clirplug.cli import main
from clirplug.io.runs import read_run, write_run
from clirplug.io.topics import read_topics, topic_field
from clirplug.qt.psq_tables import PsqSettings
from clirplug.rerank.config import BowfdConfig

pytestmark = pytest.mark.jvm

FIELDS = ("title", "desc")


class Demo:
    """The demo experiment's files, and the API searchers and CLI arguments of its dev runs."""

    def __init__(self, config):
        self.config = config
        self.index, self.models = str(config.index_dir), str(config.model_dir)
        self.topics = str(config.collection.topics("dev"))
        self.corpus = str(config.collection.corpus)
        self.model = TranslationModel(config.model_dir, kind="flat", src_lang=config.collection.lang)
        self.bm25 = config.bm25
        self.dense_searchers = {}

    def run(self, field: str, name: str):
        return self.config.run_dir / f"dev.{field}.{name}.trec"

    def tuned(self, field: str, name: str) -> dict:
        return json.loads(self.run(field, name).with_suffix(".json").read_text(encoding="utf-8"))["tuned"]

    def queries(self, field: str):
        topics = read_topics(self.topics)
        return [topic_field(t, field) for t in topics], [t.id for t in topics]

    def search_args(self, field: str, *method):
        return ["search", "--index", self.index, "--topics", self.topics, "--field", field,
                "--k1", repr(self.bm25["k1"]), "--b", repr(self.bm25["b"]), *method]

    def dt(self, field: str):
        return DtSearcher(self.index, self.model, field=field, **self.bm25)

    def psq(self, field: str):
        return PsqSearcher(self.index, self.model, PsqSettings.parse(self.tuned(field, "psq")["psq"]), field=field,
                           **self.bm25)

    def dense(self, field: str):
        """The dense searcher of the word count tuned for ``field``, made once (it loads the e5 model)."""
        words = self.tuned(field, "dense")["words"]
        if words not in self.dense_searchers:
            self.dense_searchers[words] = DenseSearcher(self.index, self.corpus, words=words)
        return self.dense_searchers[words]

    def weights(self, field: str) -> str:
        return f"{self.models}/bowfd.bowfd.{field}.weights"

    def boost_model(self, field: str) -> str:
        return f"{self.models}/boost.boost.{field}.npz"

    def method(self, name: str, field: str):
        """The API searcher and the CLI arguments (without output and tag) of the demo's run ``name``."""
        flat = ["--model", self.models, "--kind", "flat"]
        if name == "floor":
            return LuceneSearcher(self.index, **self.bm25), self.search_args(field, "--quiet")
        if name == "dt":
            return self.dt(field), self.search_args(field, "--method", "dt", *flat, "--quiet")
        if name == "psq":
            spec = self.tuned(field, "psq")["psq"]
            return self.psq(field), self.search_args(field, "--method", "psq", *flat, "--psq", spec, "--quiet")
        if name == "bowfd":
            searcher = BowfdSearcher(self.index, self.model, self.dt(field), BowfdConfig(field=field),
                                     weights=self.weights(field), depth=50)
            return searcher, ["rerank", "--method", "bowfd", *flat, "--index", self.index, "--topics", self.topics,
                              "--field", field, "--candidates", str(self.run(field, "dt")), "--weights",
                              self.weights(field), "--depth", "50", "--quiet"]
        if name == "boost":
            return BoostSearcher(self.boost_model(field), self.corpus, field=field), [
                "search", "--method", "boost", "--model", self.boost_model(field), "--corpus", self.corpus,
                "--topics", self.topics, "--field", field, "--quiet"]
        if name == "dense":
            return self.dense(field), ["search", "--method", "dense", "--index", self.index, "--corpus", self.corpus,
                                       "--words", str(self.tuned(field, "dense")["words"]), "--topics", self.topics,
                                       "--field", field, "--quiet"]
        first, second = name.split("+")
        tuned = self.tuned(field, name)
        searcher = FusionSearcher([self.method(first, field)[0], self.method(second, field)[0]], method=tuned["method"],
                                  kappa=tuned["kappa"])
        return searcher, ["fuse", "--runs", str(self.run(field, first)), str(self.run(field, second)),
                          "--method", tuned["method"], "--kappa", repr(tuned["kappa"])]


@pytest.fixture(scope="module")
def runs(demo):
    return Demo(demo[0])


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("name", ["floor", "dt", "psq", "bowfd", "boost", "dt+psq", "dense", "dt+dense"])
def test_api_cli_and_yaml_write_the_same_run(runs, tmp_path, name, field):
    """``batch_search_frame`` written by ``write_run``, the command and the experiment: three byte-identical files."""
    searcher, arguments = runs.method(name, field)
    tag = f"{name}.{field}"
    frame = searcher.batch_search_frame(*runs.queries(field), k=1000)
    write_run(frame, tmp_path / "api.trec", tag=tag)
    assert main([*arguments, "--output", str(tmp_path / "cli.trec"), "--run-tag", tag]) == 0
    expected = runs.run(field, name).read_bytes()
    assert len(read_run(tmp_path / "api.trec")) > 0
    assert (tmp_path / "api.trec").read_bytes() == expected
    assert (tmp_path / "cli.trec").read_bytes() == expected


def test_search_returns_the_hits_of_batch_search_with_their_translation(runs):
    """Pyserini's calls: ``search`` (k=10) and ``batch_search`` ({qid: hits}) give the ranking of
    ``batch_search_frame``, scores rounded to float32's shortest repr, each hit with its stored document."""
    import numpy as np

    texts, qids = runs.queries("title")
    dt = runs.dt("title")
    frame = dt.batch_search_frame(texts[:1], qids[:1], k=5)
    hits = dt.search(texts[0], k=5)
    assert len(dt.search(texts[0])) == 10  # Pyserini's default k
    assert [(h.docid, h.translation) for h in hits] == list(zip(frame["docid"], frame["translation"]))
    assert [np.float32(h.score) for h in hits] == [np.float32(s) for s in frame["score"]]
    assert all(type(h.score) is float and repr(h.score) == str(np.float32(h.score)) for h in hits)
    assert hits[0].translation == runs.model.translate(texts[0])[0][0]  # DT searches the 1-best
    batch = dt.batch_search(texts[:2], qids[:2], k=5)
    assert list(batch) == qids[:2] and batch[qids[0]] == hits
    document = dt.doc(hits[0].docid)
    raw = json.loads(document.raw())
    assert document.id() == hits[0].docid == raw["id"] and document.contents() == raw["contents"] == hits[0].contents
    assert hits[0].raw == document.raw() and dt.doc(hits[0].lucene_docid).id() == hits[0].docid
    assert dt.doc("no such document") is None
    assert runs.method("dt+dense", "title")[0].search(texts[0], k=1)[0].contents is not None  # a fusion's inputs' index


def test_batch_search_over_two_processes_equals_one(runs):
    texts, qids = runs.queries("desc")
    dt = runs.dt("desc")
    pd.testing.assert_frame_equal(dt.batch_search_frame(texts, qids, k=20, threads=2),
                                  dt.batch_search_frame(texts, qids, k=20))


def test_bowfd_derivations_are_those_of_rerank_explain(runs, tmp_path):
    """``TranslationModel.derivation`` gives the ``--explain`` record of a (query, document) pair, and a BOW-FD
    hit's translation is the yield of its derivation."""
    explain = tmp_path / "why.jsonl"
    _, arguments = runs.method("bowfd", "desc")
    assert main([*arguments, "--output", str(tmp_path / "run.trec"), "--explain", str(explain)]) == 0
    records = [json.loads(line) for line in explain.read_text(encoding="utf-8").splitlines()]
    texts, qids = runs.queries("desc")
    texts = dict(zip(qids, texts))
    for record in records[::97]:
        derivation = runs.model.derivation(texts[record["qid"]], record["docid"], runs.index,
                                           BowfdConfig(field="desc"), weights=runs.weights("desc"))
        assert derivation == {key: value for key, value in record.items() if key != "qid"}
    searcher, _ = runs.method("bowfd", "desc")
    first = records[0]
    hits = {hit.docid: hit for hit in searcher.search(texts[first["qid"]], k=50)}
    assert hits[first["docid"]].translation == " ".join(s["yield"] for s in first["sentences"])


def test_translate_gives_the_nbest_of_clirplug_translate(runs, tmp_path):
    out = tmp_path / "nbest.jsonl"
    assert main(["translate", "--model", runs.models, "--kind", "flat", "--input", runs.topics, "--nbest", "3",
                 "--format", "jsonl", "--output", str(out), "--quiet"]) == 0
    texts, qids = runs.queries("title")
    texts = dict(zip(qids, texts))
    for record in map(json.loads, out.read_text(encoding="utf-8").splitlines()):
        nbest = record["sentences"][0]["nbest"]
        assert runs.model.translate(texts[record["id"]], nbest=3) == [(" ".join(t["words"]), t["score"]) for t in nbest]


def test_a_pyterrier_pipeline_writes_the_experiments_run(runs, tmp_path):
    """DT >> BOW-FD as PyTerrier transformers: the experiment's BOW-FD run, with PyTerrier's columns."""
    from clirplug.pyterrier import ClirplugTransformer

    texts, qids = runs.queries("title")
    bowfd = BowfdSearcher(runs.index, runs.model, None, BowfdConfig(field="title"), weights=runs.weights("title"),
                          depth=50)
    dt = ClirplugTransformer(runs.dt("title"))
    pipeline = dt >> ClirplugTransformer(bowfd)
    results = pipeline(pd.DataFrame({"qid": qids, "query": texts}))
    assert list(results.columns) == ["qid", "query_0", "query", "docno", "score", "rank", "translation"]
    assert (results.groupby("qid")["rank"].min() == 0).all()  # PyTerrier ranks from 0
    first = results[results["qid"] == qids[0]].iloc[0]  # DT's 1-best in query, the German in query_0 (BOW-FD's)
    assert (first["query_0"], first["query"]) == (texts[0], runs.model.translate(texts[0])[0][0])
    write_run(results.rename(columns={"docno": "docid"}), tmp_path / "pt.trec", tag="bowfd.title")
    assert (tmp_path / "pt.trec").read_bytes() == runs.run("title", "bowfd").read_bytes()


def test_a_pyterrier_reranker_follows_dt_on_the_stored_text(runs):
    """DT >> pt.text.get_text(dt, "text") >> a pure-Python scorer: the demo documents' text, reranked by length."""
    import pyterrier as pt

    from clirplug.pyterrier import ClirplugTransformer, LuceneText

    texts, qids = runs.queries("title")
    dt = ClirplugTransformer(runs.dt("title"), k=20)
    results = (dt >> pt.text.get_text(dt, "text") >> pt.apply.doc_score(lambda row: len(row["text"])))(
        pd.DataFrame({"qid": qids[:3], "query": texts[:3]}))
    loaded = pt.text.get_text(LuceneText(runs.index), "raw")(results[["qid", "docno"]])
    assert all(json.loads(raw)["contents"] == text for raw, text in zip(loaded["raw"], results["text"]))
    assert (results["score"] == results["text"].str.len()).all() and results["text"].notna().all()


def test_a_bowfd_runs_translations_are_the_derivations_of_its_field(runs):
    """Topics with a title and a desc, reranked on desc: each hit's translation is its desc derivation's yield."""
    searcher, _ = runs.method("bowfd", "desc")
    topics = [t for t in read_topics(runs.topics) if t.title.strip() != t.desc.strip()][:2]
    frame = searcher.run(topics, k=3)
    assert len(frame) > 0
    for topic in topics:
        hits = frame[frame["qid"] == topic.id]
        records = searcher.model.derivation(topic_field(topic, "desc"), hits["docid"].iloc[0], runs.index,
                                            BowfdConfig(field="desc"), weights=runs.weights("desc"))
        assert hits["translation"].iloc[0] == " ".join(s["yield"] for s in records["sentences"])


@pytest.mark.parametrize("name", ["dense", "dt+dense"])
def test_pyterrier_transformers_by_method_name_write_the_experiments_run(runs, tmp_path, name):
    """Dense retrieval and its fusion with DT as transformers built through the registry: the experiment's run."""
    from clirplug.pyterrier import transformer

    texts, qids = runs.queries("title")
    words = runs.tuned("title", "dense")["words"]
    dense = transformer("dense", index=runs.index, corpus=runs.corpus, words=words)
    if name == "dense":
        built = dense
    else:
        tuned = runs.tuned("title", name)
        built = transformer("fusion", searchers=[runs.dt("title"), dense.searcher], method=tuned["method"],
                            kappa=tuned["kappa"])
    results = built(pd.DataFrame({"qid": qids, "query": texts}))
    assert list(results.columns) == ["qid", "query", "docno", "score", "rank", "translation"]
    write_run(results.rename(columns={"docno": "docid"}), tmp_path / "pt.trec", tag=f"{name}.title")
    assert (tmp_path / "pt.trec").read_bytes() == runs.run("title", name).read_bytes()


def test_dt_mira_searcher_writes_the_command_s_run(runs, tmp_path):
    """MIRA weights trained on the demo's train titles: ``clirplug.searcher("dt-mira", ...)`` and ``clirplug search
    --method dt-mira`` write the same run; the service shows the query MIRA chose."""
    from clirplug import searcher

    collection = runs.config.collection
    mira = tmp_path / "mira.json"
    assert main(["train", "mira", "--model", runs.models, "--kind", "flat", "--index", runs.index, "--topics",
                 str(collection.topics("train")), "--qrels", str(collection.qrels("train")), "--output", str(mira),
                 "--quiet"]) == 0
    dt_mira = searcher("dt-mira", index=runs.index, model=runs.model, mira=str(mira), **runs.bm25)
    write_run(dt_mira.batch_search_frame(*runs.queries("title"), k=1000), tmp_path / "api.trec", tag="dt-mira")
    assert main([*runs.search_args("title", "--method", "dt-mira", "--model", runs.models, "--kind", "flat",
                                   "--mira", str(mira), "--quiet"),
                 "--output", str(tmp_path / "cli.trec"), "--run-tag", "dt-mira"]) == 0
    assert (tmp_path / "api.trec").read_bytes() == (tmp_path / "cli.trec").read_bytes()
    text, qid = runs.queries("title")[0][0], runs.queries("title")[1][0]
    frame = dt_mira.batch_search_frame([text], [qid], k=1)
    assert dt_mira.query_translation(text) == {"best": frame["translation"].iloc[0],
                                               "untranslated": dt_mira.model.untranslated(text)}
