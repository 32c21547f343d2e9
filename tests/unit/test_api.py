"""The Python API without Lucene: the package's exports, argument checks, the translation model, PyTerrier's columns."""

import pickle
import subprocess
import sys

import pandas as pd
import pytest

import clirplug
from clirplug.api import Reranker, Searcher, TranslationModel
from clirplug.errors import ClirplugError
from clirplug.io.runs import run_frame
from clirplug.mt.grammar import parse_rule, write_grammar
from clirplug.mt.lm import FALLBACK_DISCOUNTS, estimate, write_arpa
from clirplug.qt.psq_tables import PsqSettings

pytestmark = pytest.mark.unit

GRAMMAR = """\
[X] ||| dateien ||| files ||| EgivenF=0.1 FgivenE=0.2 ||| 0-0
[X] ||| dateien ||| data ||| EgivenF=0.6 FgivenE=0.5 ||| 0-0
[X] ||| kopieren ||| copy ||| EgivenF=0.2 FgivenE=0.2 ||| 0-0
[X] ||| verzeichnis ||| directory ||| EgivenF=0.3 FgivenE=0.2 ||| 0-0
[X] ||| verzeichnis ||| folder ||| EgivenF=0.2 FgivenE=0.3 ||| 0-0
[X] ||| in ||| into ||| EgivenF=0.3 FgivenE=0.3 ||| 0-0
[X] ||| dateien [X,1] ||| [X,1] files ||| EgivenF=0.3 FgivenE=0.3 ||| 0-1
"""
LM_TEXT = ["copy files into a directory", "move files into a folder", "the data in the folder", "files"]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    folder = tmp_path_factory.mktemp("model")
    write_grammar([parse_rule(line) for line in GRAMMAR.splitlines()], folder / "grammar.hiero.gz")
    write_arpa(estimate([s.split() for s in LM_TEXT], order=3, discount_fallback=FALLBACK_DISCOUNTS), folder / "lm.arpa")
    return TranslationModel(folder, cache=False)


class Fixed(Searcher):
    """Three documents a query, scored 3, 2, 1, their translation the query upper-cased."""

    _spec: dict = {}

    def run(self, topics, k=1000, progress=False):
        frame = run_frame((t.id, [(f"d{i}", 3.0 - i) for i in range(3)][:k]) for t in topics)
        return frame.assign(translation=frame["qid"].map({t.id: t.title.upper() for t in topics}))


class Negate(Reranker):
    """Scores negated: the candidates' order reversed."""

    first_stage, depth, _spec = None, 2, {}

    def rescore(self, topics, candidates, k, progress):
        return candidates.assign(score=-candidates["score"], translation="negated")


def test_the_package_exports_its_api_without_loading_numpy():
    code = "import sys, clirplug; print('numpy' in sys.modules); from clirplug import *; print(len(clirplug.__all__))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", str(len(clirplug.__all__))]
    assert clirplug.DtSearcher is clirplug.api.DtSearcher and clirplug.PsqSettings is PsqSettings
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        clirplug.Nothing


def test_search_and_batch_search_rank_and_check_their_arguments():
    frame = Fixed().batch_search_frame(["eins", "zwei"], ["b", "a"], k=2)
    assert list(frame.columns) == ["qid", "docid", "rank", "score", "translation"]
    assert frame[["qid", "docid", "rank"]].values.tolist() == [["a", "d0", 1], ["a", "d1", 2], ["b", "d0", 1], ["b", "d1", 2]]
    assert Fixed().search("drei", k=1) == [clirplug.Hit("d0", 3.0, "DREI")]
    batch = Fixed().batch_search(["eins", "zwei"], ["b", "a"], k=2)  # Pyserini's {qid: hits}, in the order of qids
    assert list(batch) == ["b", "a"] and batch["a"] == [clirplug.Hit("d0", 3.0, "ZWEI"), clirplug.Hit("d1", 2.0, "ZWEI")]
    for call, message in [(lambda: Fixed().batch_search(["x"], ["a", "b"]), "1 queries but 2 qids"),
                          (lambda: Fixed().batch_search(["x", "y"], ["a", "a"]), "qid 'a' occurs twice"),
                          (lambda: Fixed().batch_search([None], ["a"]), "the query of 'a' is not a string"),
                          (lambda: Fixed().batch_search(["x"], ["a"], k=0), "k must be a whole number of at least 1"),
                          (lambda: Fixed().batch_search(["x"], ["a"], threads=0), "threads must be"),
                          (lambda: clirplug.FusionSearcher([Fixed()], method="magic"), "unknown fusion method 'magic'"),
                          (lambda: clirplug.FusionSearcher([Fixed()], weights=[1, 2]), "2 fusion weight"),
                          (lambda: clirplug.PsqSearcher("index"), "exactly one of a model and a table"),
                          (lambda: clirplug.LuceneSearcher("index", k1=-1), "k1: BM25 k1 must be a finite number"),
                          (lambda: clirplug.DtSearcher("index", "model", b=2), r"b: BM25 b must lie in \[0, 1\]"),
                          (lambda: clirplug.LuceneSearcher("index", 1.2, bm25=clirplug.Bm25Run()), "not both"),
                          (lambda: clirplug.PsqSearcher("index", "model", bm25=(1, 0.5)), "must be a Bm25Run"),
                          (lambda: clirplug.LuceneSearcher("index", bm25={"k1": -1}), "bm25.k1: BM25 k1 must be"),
                          (lambda: clirplug.LuceneSearcher("index", bm25={"k": 1}), "bm25.k: unknown setting")]:
        with pytest.raises(ClirplugError, match=message):
            call()


class Many(Fixed):
    """Twenty documents a query, float32 scores (as Lucene's BM25 gives them) stored as float64."""

    def run(self, topics, k=1000, progress=False):
        import numpy as np

        scores = np.float32([6.02 - i / 10 for i in range(20)]).astype(np.float64).tolist()
        frame = run_frame((t.id, list(zip([f"d{i}" for i in range(20)], scores))[:k]) for t in topics)
        return frame.assign(translation=None)


def test_the_api_follows_pyserini_s_lucene_searcher():
    """``search(q, k=10)``, ``batch_search(queries, qids, k=10, threads=1)`` -> {qid: hits}, scores that print as
    float32's shortest repr (the frame keeps the exact float64), no stored text without an index."""
    import inspect

    for name, defaults in [("search", {"k": 10}), ("batch_search", {"k": 10, "threads": 1}),
                           ("batch_search_frame", {"k": 10, "threads": 1})]:
        parameters = inspect.signature(getattr(Searcher, name)).parameters
        assert {key: parameters[key].default for key in defaults} == defaults, name
    hits = Many().search("eins")
    assert len(hits) == 10 and len(Many().batch_search(["eins"], ["1"])["1"]) == 10
    assert hits[0].score == 6.02 and repr(hits[0].score) == "6.02" and type(hits[0].score) is float
    assert str(hits[0]) == "Hit(docid='d0', score=6.02, translation=None)"
    assert Many().batch_search_frame(["eins"], ["1"])["score"].iloc[0] == 6.019999980926514
    assert (hits[0].lucene_docid, hits[0].contents, hits[0].raw) == (None, None, None)
    assert pickle.loads(pickle.dumps(hits[0])) == hits[0]
    with pytest.raises(ClirplugError, match="Many has no Lucene index to read documents from"):
        Many().doc("d0")


def test_hits_and_doc_read_the_index_s_stored_fields(monkeypatch):
    """A searcher with an index shows each hit's ``lucene_docid``, ``raw`` and ``contents``, read on first use, and
    ``doc`` the stored document by id or Lucene number (None if absent); a fusion those of its inputs' index."""
    import json

    opened = []

    class Stored:
        docids = pd.Series(["d0", "d1"]).to_numpy()

        def __init__(self, index, progress):
            opened.append(index)

        def doc_index(self, docid):
            if docid not in ("d0", "d1"):
                raise ClirplugError(f"no document with id {docid!r}")
            return int(docid[1])

        def document_raw(self, docid):
            return json.dumps({"id": docid, "contents": f"title {docid}\ntext"})

        def document_text(self, docid):
            return json.loads(self.document_raw(docid))["contents"]

    class Indexed(Fixed):
        _spec = {"index": "ix"}

    monkeypatch.setattr("clirplug.lucene.reader.LuceneIndex", Stored)
    searcher = Indexed()
    hits = searcher.search("eins", k=2)
    assert opened == []  # nothing read until asked
    assert [(h.lucene_docid, h.contents) for h in hits] == [(0, "title d0\ntext"), (1, "title d1\ntext")]
    assert json.loads(hits[1].raw)["id"] == "d1" and opened == ["ix"]
    document = searcher.doc("d1")
    assert (document.id(), document.lucene_docid(), document.contents()) == ("d1", 1, "title d1\ntext")
    assert searcher.doc(0).id() == "d0" and searcher.doc("d9") is None and searcher.doc(5) is None
    fused = clirplug.FusionSearcher([Fixed(), Indexed()])
    assert fused.document_index() == "ix" and fused.search("eins", k=1)[0].contents == "title d0\ntext"


def test_fusion_takes_any_searcher_and_kappa_weighs_two():
    fused = clirplug.FusionSearcher([Fixed(), Negate()], kappa=0.25)
    assert fused.weights == [0.25, 0.75] and fused.inputs() == fused.searchers and not fused.derives
    assert pickle.loads(pickle.dumps(fused)).weights == [0.25, 0.75]
    for call, message in [(lambda: clirplug.FusionSearcher([Fixed(), object()]),
                           "each searcher fused must be a searcher of clirplug.api, got builtins.object"),
                          (lambda: clirplug.FusionSearcher([Fixed()] * 3, kappa=0.5), "kappa weighs two searchers, got 3"),
                          (lambda: clirplug.FusionSearcher([Fixed()] * 2, kappa=1.5), r"kappa must lie in \[0, 1\]"),
                          (lambda: clirplug.FusionSearcher([Fixed()] * 2, weights=[1, 1], kappa=0.5), "not both")]:
        with pytest.raises(ClirplugError, match=message):
            call()


def test_a_searcher_shows_the_translations_of_those_it_is_built_on(model):
    class Translating(Fixed):
        pass

    translating = Translating()
    translating.model = model
    assert Fixed().query_translation("Dateien kopieren") == {}
    shown = {"best": "copy files", "untranslated": []}  # every source word translated
    assert translating.query_translation("Dateien kopieren") == shown
    assert clirplug.FusionSearcher([Fixed(), translating]).query_translation("Dateien kopieren") == shown


def test_searchers_are_built_by_method_name_through_the_registry(monkeypatch):
    from clirplug.api import compose, needs, system

    made = []

    class Engine:
        def __init__(self, index, k1, b):
            made.append(index)

    monkeypatch.setattr("clirplug.lucene.search.Bm25Searcher", Engine)
    built = clirplug.searcher("bm25", index="index", k1=1.2)
    assert isinstance(built, clirplug.LuceneSearcher) and made == []  # the index is opened on first search
    assert built.searcher is built.searcher and made == ["index"]
    options = {"bowfd": {"first_stage": "dt"}, "fusion": {"searchers": ["bowfd", "dense", "dt"]}}
    assert system("fusion", options) == ["dt", "bowfd", "dense", "fusion"]
    assert needs("fusion", options) == {"index", "model", "corpus", "first_stage", "searchers"}
    assert needs("bm25") == {"index"}
    for call, message in [(lambda: clirplug.searcher("magic"), "unknown method 'magic': choose one of bm25, dt, "),
                          (lambda: clirplug.searcher("bm25", index="i", nope=1), "bm25: got an unexpected keyword"),
                          (lambda: clirplug.searcher("dt", index="i"), "dt: missing a required argument: 'model'"),
                          (lambda: compose("fusion", options), "dt needs index: a Lucene index"),
                          (lambda: compose("fusion", {"fusion": {"searchers": ["bm25"]}}, str.upper),
                           "bm25 needs INDEX"),
                          (lambda: compose("fusion", {"fusion": {"searchers": ["bm25", "fusion"]}}),
                           "fusion is built on itself: fusion -> fusion"),
                          (lambda: compose("bm25", index="i", models="m"), "unknown resource 'models'")]:
        with pytest.raises(ClirplugError, match=message):
            call()
    bm25 = compose("fusion", {"fusion": {"searchers": ["bm25"], "kappa": None}, "bm25": {"k1": 1.5}}, index="ix",
                   model="unused")
    assert isinstance(bm25, clirplug.FusionSearcher) and bm25.searchers[0].bm25.k1 == 1.5
    assert bm25.searchers[0].searcher and made[-1] == "ix"


def test_bm25_searchers_take_pyserini_s_k1_and_b_or_one_bm25run(monkeypatch):
    made = []

    class Engine:
        def __init__(self, index, k1, b):
            made.append((index, k1, b))

    monkeypatch.setattr("clirplug.lucene.search.Bm25Searcher", Engine)
    searchers = [clirplug.LuceneSearcher("index", 1.2), clirplug.LuceneSearcher("index", k1=1.2, b=0.4),
                 clirplug.LuceneSearcher("index", bm25=clirplug.Bm25Run(k1=1.2))]
    assert {searcher.bm25 for searcher in searchers} == {clirplug.Bm25Run(k1=1.2, b=0.4)}
    assert pickle.loads(pickle.dumps(searchers[0])).bm25 == searchers[0].bm25
    assert made == []  # the index is opened on first search
    for searcher in searchers:
        assert searcher.searcher is searcher.searcher
    assert made == [("index", 1.2, 0.4)] * 3
    assert clirplug.LuceneSearcher("index").bm25 == clirplug.Bm25Run()


def test_a_reranker_rescores_the_top_depth_candidates():
    candidates = pd.DataFrame({"qid": ["a"] * 3 + ["b"], "docid": ["x", "y", "z", "x"], "score": [1.0, 3.0, 2.0, 5.0]})
    frame = Negate().rerank(["eins"], ["a"], candidates)
    assert frame[["docid", "score", "translation"]].values.tolist() == [["z", -2.0, "negated"], ["y", -3.0, "negated"]]


def test_translate_gives_the_nbest_with_scores(model):
    nbest = model.translate("Dateien kopieren", nbest=3)
    assert nbest[0][0] == "copy files" and len(nbest) == 3
    assert [score for _, score in nbest] == sorted((score for _, score in nbest), reverse=True)
    assert model.translate("Dateien kopieren") == nbest[:1]
    assert len({text for text, _ in nbest}) == 3  # distinct strings, unless derivations are asked for
    derivations = model.translate("Dateien kopieren", nbest=3, unique=False)
    assert derivations[0] == nbest[0] and len(derivations) == 3
    long = " ".join(["dateien"] * 150)  # above MAX_SENTENCE_TOKENS: decoded in two chunks
    assert model.translate(long)[0][0] == " ".join(["files"] * 150)
    with pytest.raises(ClirplugError, match="decoded in 2 chunks"):
        model.translate(long, nbest=2)


def test_psq_table_gives_each_kept_source_token_its_distribution(model):
    table = model.psq_table("Dateien in Verzeichnis kopieren", PsqSettings.parse("lambda=0:1:0"))
    assert [source for source, _ in table] == ["dateien", "in", "verzeichnis", "kopieren"]
    assert all(sum(dist.values()) == pytest.approx(1.0) for _, dist in table)
    assert set(table[2][1]) == {"directory", "folder"} and table[3][1] == {"copy": 1.0}
    # German stopwords dropped; two sentences of a desc are read one by one
    stopped = model.psq_table("Dateien in Verzeichnis. Dateien kopieren.", PsqSettings.parse("lambda=0:1:0,stop=large"),
                              field="desc")
    assert [source for source, _ in stopped] == ["dateien", "verzeichnis", "dateien", "kopieren"]


def test_a_translation_model_pickles_as_its_arguments(model):
    copy = pickle.loads(pickle.dumps(model))
    assert (copy.folder, copy.kind, copy.src_lang) == (model.folder, "hiero", "de")
    assert copy.translate("Dateien kopieren") == model.translate("Dateien kopieren")


def test_pyterrier_transformers_use_its_columns_and_compose():
    import pyterrier as pt  # the extra clirplug[pyterrier], which the dev extra installs

    from clirplug.pyterrier import ClirplugTransformer

    queries = pd.DataFrame({"qid": ["1", "2"], "query": ["eins", "zwei"]})
    retrieved = ClirplugTransformer(Fixed(), k=3)(queries)
    assert list(retrieved.columns) == ["qid", "query", "docno", "score", "rank", "translation"]
    assert retrieved["rank"].tolist() == [0, 1, 2, 0, 1, 2]  # PyTerrier ranks from 0
    assert retrieved["translation"].tolist()[:1] == ["EINS"]
    pipeline = ClirplugTransformer(Fixed()) >> ClirplugTransformer(Negate())
    reranked = pipeline(queries)
    assert reranked[["qid", "docno", "rank"]].values.tolist() == [["1", "d1", 0], ["1", "d0", 1], ["2", "d1", 0],
                                                                  ["2", "d0", 1]]
    with pytest.raises(pt.validate.InputValidationError):
        ClirplugTransformer(Fixed())(pd.DataFrame({"qid": ["1"]}))
    fused = ClirplugTransformer(clirplug.FusionSearcher([Fixed(), Fixed()], method="rrf"), k=2)(queries)
    assert fused[["qid", "docno", "rank", "translation"]].values.tolist() == [
        ["1", "d0", 0, "EINS"], ["1", "d1", 1, "EINS"], ["2", "d0", 0, "ZWEI"], ["2", "d1", 1, "ZWEI"]]


def test_a_transformer_is_built_by_method_name(monkeypatch):
    from clirplug.pyterrier import ClirplugTransformer, transformer

    monkeypatch.setattr("clirplug.lucene.search.Bm25Searcher", lambda index, k1, b: None)
    built = transformer("bm25", k=3, index="index", b=0.5)
    assert isinstance(built, ClirplugTransformer) and built.k == 3 and built.searcher.bm25 == clirplug.Bm25Run(b=0.5)
    with pytest.raises(ClirplugError, match="unknown method 'magic'"):
        transformer("magic")


class Translating(Fixed):
    """A query translator: its translation (the query upper-cased) is the query searched."""

    translates_query = True


class Recording(Negate):
    """Negate, recording the queries it was given."""

    def rescore(self, topics, candidates, k, progress):
        self.seen = [topic.title for topic in topics]
        return super().rescore(topics, candidates, k, progress)


class Stored:
    """A LuceneIndex whose documents d0, d1, d2 store ``title dN`` + a text of N + 1 words."""

    docids = pd.Series(["d0", "d1", "d2"]).to_numpy()

    def __init__(self, index, progress=False):
        pass

    def doc_index(self, docid):
        if docid not in ("d0", "d1", "d2"):
            raise ClirplugError(f"no document with id {docid!r}")
        return int(docid[1])

    def document_raw(self, docid):
        import json

        return json.dumps({"id": docid, "contents": self.document_text(docid)})

    def document_text(self, docid):
        self.doc_index(docid)
        return f"title {docid}\n" + " ".join(["word"] * (int(docid[1]) + 1))


def test_a_translating_transformer_rewrites_the_query_as_pyterrier_does():
    """DT-like stages: ``query`` the translation, ``query_0`` the original (pt.model.push_queries); a clirplug
    reranker after them reads the source-language query from ``query_0``; the declared outputs are the real ones."""
    import pyterrier as pt

    from clirplug.pyterrier import ClirplugTransformer

    queries = pd.DataFrame({"qid": ["1", "2"], "query": ["eins", "zwei"]})
    first = ClirplugTransformer(Translating(), k=3)
    retrieved = first(queries)
    assert list(retrieved.columns) == ["qid", "query_0", "query", "docno", "score", "rank"]
    assert retrieved[["qid", "query", "query_0"]].drop_duplicates().values.tolist() == [["1", "EINS", "eins"],
                                                                                        ["2", "ZWEI", "zwei"]]
    assert first.transform_outputs(["qid", "query"]) == list(retrieved.columns)
    rerank = Recording()
    second = ClirplugTransformer(rerank)
    reranked = (first >> second)(queries)
    assert rerank.seen == ["eins", "zwei"]  # the German query, not the translation
    assert list(reranked.columns) == ["qid", "query_0", "query", "docno", "score", "rank", "translation"]
    assert reranked[["qid", "query", "query_0", "docno", "rank"]].values.tolist()[:2] == [
        ["1", "EINS", "eins", "d1", 0], ["1", "EINS", "eins", "d0", 1]]
    assert pt.inspect.transformer_outputs(first >> second, ["qid", "query"]) == list(reranked.columns)
    assert list(first(queries.iloc[:0]).columns) == list(retrieved.columns)  # an empty frame, as inspection sends
    with pytest.raises(pt.validate.InputValidationError):
        first.transform_outputs(["qid"])


def test_a_text_loader_and_a_pyterrier_scorer_follow_a_clirplug_stage(monkeypatch):
    """``pt.text.get_text`` of a transformer (its searcher's index) or of LuceneText adds each document's stored text,
    a pure-Python PyTerrier scorer reranks on it, and pt.Experiment validates the pipeline without a warning."""
    import logging
    import warnings

    import pyterrier as pt

    from clirplug.pyterrier import ClirplugTransformer, LuceneText, text_loader

    class Indexed(Translating):
        _spec = {"index": "ix"}

    monkeypatch.setattr("clirplug.lucene.reader.LuceneIndex", Stored)
    queries = pd.DataFrame({"qid": ["1", "2"], "query": ["eins", "zwei"]})
    dt = ClirplugTransformer(Indexed(), k=3)
    longest = pt.apply.doc_score(lambda row: len(row["text"].split()))
    pipeline = dt >> pt.text.get_text(dt, "text") >> longest
    results = pipeline(queries)
    first = results[results["qid"] == "1"].sort_values("rank")
    assert first["docno"].tolist() == ["d2", "d1", "d0"] and first["rank"].tolist() == [0, 1, 2]  # by length
    assert first["text"].iloc[0] == "title d2\nword word word"
    assert set(results.columns) >= {"qid", "query", "query_0", "docno", "text", "score", "rank"}
    loaded = pt.text.get_text(LuceneText("ix"), ["text", "raw"])(pd.DataFrame({"qid": ["1"], "docno": ["d9"]}))
    assert loaded[["text", "raw"]].values.tolist() == [[None, None]]  # not in the index
    assert text_loader("ix").transform_outputs(["qid", "docno"]) == ["qid", "docno", "text"]
    with pytest.raises(ClirplugError, match="unknown document field 'title'"):
        text_loader("ix", "title")
    qrels = pd.DataFrame({"qid": ["1", "2"], "docno": ["d2", "d0"], "label": [1, 1]})
    with warnings.catch_warnings(record=True) as caught, _logged(logging.WARNING) as logged:
        warnings.simplefilter("always")
        table = pt.Experiment([dt, pipeline, dt >> ClirplugTransformer(Recording())], queries, qrels, ["map"],
                              names=["dt", "dt+length", "dt+negate"])
    messages = [str(w.message) for w in caught] + logged
    assert not [m for m in messages if "validat" in m.lower()], messages
    assert table["map"].tolist()[1] == 1 / 2 * (1 + 1 / 3)


class _logged:
    """The messages logged at ``level`` or above while inside."""

    def __init__(self, level):
        import logging

        self.messages, self.handler = [], logging.Handler(level)
        self.handler.emit = lambda record: self.messages.append(record.getMessage())

    def __enter__(self):
        import logging

        logging.getLogger().addHandler(self.handler)
        return self.messages

    def __exit__(self, *exc):
        import logging

        logging.getLogger().removeHandler(self.handler)


def test_dense_of_the_translated_query_needs_a_model_and_a_known_query():
    from clirplug.api import DenseSearcher

    with pytest.raises(ClirplugError, match=r"dense: query='translation' needs a translation model"):
        DenseSearcher("index", "corpus", query="translation")
    with pytest.raises(ClirplugError, match="query: expected one of source, translation"):
        DenseSearcher("index", "corpus", query="both")
