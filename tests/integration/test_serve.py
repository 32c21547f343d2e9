"""The search service on the demo: its answers are the experiment's runs, the API's translations and the
corpus' documents; bad requests get a 400 with one line of JSON; concurrent clients get consistent answers.

The session's ``demo`` fixture trained the model; the service is built from ``clirplug serve``'s flags
(:func:`clirplug.cli.serve.service`), given the settings the experiment chose.
"""

import importlib.util
import json
import threading
import urllib.request
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from clirplug.cli import build_parser
from clirplug.cli.serve import searcher_options, service
from clirplug.corpus import read_corpus
from clirplug.errors import ClirplugError
from clirplug.io.runs import read_run
from clirplug.io.topics import read_topics
from clirplug.serve.app import create_app, running
from clirplug.serve.service import SearchService
from clirplug.serve.snippets import Matcher, query_terms, snippet

pytestmark = pytest.mark.jvm

BENCHMARK = importlib.util.spec_from_file_location("serve_load", Path(__file__).parents[2] / "benchmarks" / "serve_load.py")


class Served:
    """The demo's files and a service per method, built once."""

    def __init__(self, config):
        self.config = config
        self.topics = read_topics(config.collection.topics("dev"))
        self.corpus = {doc.id: doc for doc in read_corpus(config.collection.corpus)}
        self.services = {}

    def tuned(self, name: str) -> dict:
        return json.loads((self.config.run_dir / f"dev.title.{name}.json").read_text(encoding="utf-8"))["tuned"]

    def flags(self, method: str) -> list[str]:
        """``clirplug serve``'s flags of ``method`` with the settings of the experiment's run."""
        model = ["--model", str(self.config.model_dir)]
        dense = ["--corpus", str(self.config.collection.corpus), "--words", str(self.tuned("dense")["words"])]
        fused = self.tuned("dt+dense")
        return {"bm25": [], "dt": model, "psq": [*model, "--psq", self.tuned("psq")["psq"]],
                "bowfd": [*model, "--weights", str(self.config.model_dir / "bowfd.bowfd.title.weights"), "--depth", "50"],
                "dense": dense,
                "fusion": [*model, *dense, "--fuse", "dt,dense", "--fuser", fused["method"],
                           "--kappa", repr(fused["kappa"])]}[method]

    def service(self, method: str) -> SearchService:
        if method not in self.services:
            args = build_parser().parse_args(["serve", "--index", str(self.config.index_dir), "--method", method,
                                              "--kind", "flat", "--k1", repr(self.config.bm25["k1"]),
                                              "--b", repr(self.config.bm25["b"]), *self.flags(method)])
            self.services[method] = service(args, searcher_options(args))
        return self.services[method]

    def expected_run(self, name: str):
        return read_run(self.config.run_dir / f"dev.title.{name}.trec")


@pytest.fixture(scope="module")
def served(demo):
    return Served(demo[0])


@pytest.fixture(scope="module")
def psq_client(served):
    with TestClient(create_app(served.service("psq"))) as client:
        yield client


def _answers_the_run(served, results, run: str):
    assert [result["qid"] for result in results] == [topic.id for topic in served.topics]
    got = [(r["qid"], hit["docid"], hit["rank"], hit["score"]) for r in results for hit in r["hits"]]
    expected = served.expected_run(run)
    assert got == list(zip(expected["qid"], expected["docid"], expected["rank"], expected["score"].tolist()))


@pytest.mark.parametrize("method, run", [("bm25", "floor"), ("dt", "dt"), ("psq", "psq"), ("bowfd", "bowfd")])
def test_a_batch_answers_the_experiments_run(served, method, run):
    """POST /search of the dev titles with k=1000: the experiment's dev run, document for document."""
    queries = [{"qid": topic.id, "query": topic.title} for topic in served.topics]
    with TestClient(create_app(served.service(method))) as client:
        response = client.post("/search", json={"queries": queries, "k": 1000})
    assert response.status_code == 200
    _answers_the_run(served, response.json()["results"], run)


@pytest.mark.parametrize("method, run", [("dense", "dense"), ("fusion", "dt+dense")])
def test_a_real_server_answers_the_dense_and_fused_runs(served, method, run):
    """``--method dense`` and ``--method fusion --fuse dt,dense --kappa K`` on a real server on 127.0.0.1: the
    experiment's dev runs, which ``clirplug search`` and ``clirplug fuse`` write (tests/integration/test_api_demo.py)."""
    body = json.dumps({"queries": [{"qid": topic.id, "query": topic.title} for topic in served.topics], "k": 1000})
    with running(create_app(served.service(method))) as url:
        request = urllib.request.Request(url + "/search", data=body.encode("utf-8"),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request) as response:
            assert response.status == 200
            answer = json.loads(response.read())
        with urllib.request.urlopen(url + "/info") as response:
            info = json.loads(response.read())
            assert (info["method"], info["systems"]) == (method, [method])
    _answers_the_run(served, answer["results"], run)
    first = answer["results"][0]
    model = served.service("dt").searcher.model
    expected = None if method == "dense" else {"best": model.translate(first["query"])[0][0],
                                               "untranslated": model.untranslated(first["query"])}
    assert first["translation"] == expected  # dense searches the query untranslated, the fusion also DT's 1-best
    assert all("derivation" not in hit and "explanation" not in hit for hit in first["hits"])


def test_hits_carry_the_corpus_title_and_a_query_biased_snippet(served, psq_client):
    """The snippet is the best window of the corpus document for the hit's PSQ query, its matched words those whose
    Lucene terms (the index's analyzer) are the query's."""
    service = served.service("psq")
    answer = psq_client.get("/search", params={"q": served.topics[1].title, "k": 20}).json()
    assert len(answer["hits"]) == 20
    frame = service.searcher.batch_search_frame([served.topics[1].title], ["q"], 20)
    analyzed = set()
    for hit, translation in zip(answer["hits"], frame["translation"]):
        doc = served.corpus[hit["docid"]]
        assert hit["title"] == doc.title
        terms = query_terms(translation)
        assert (hit["snippet"], hit["highlights"]) == tuple(snippet(doc.contents, Matcher(service.documents.analyze),
                                                                    terms))
        query_index_terms = {t for word in terms for t in service.documents.analyze(word)}
        for start, end in hit["highlights"]:
            word_terms = set(service.documents.analyze(hit["snippet"][start:end]))
            assert word_terms & query_index_terms
            analyzed |= word_terms
        for start, end in hit["title_highlights"]:
            assert set(service.documents.analyze(hit["title"][start:end])) & query_index_terms
    assert analyzed  # the snippets mark something


def test_a_document_is_served_as_the_index_stores_it(served, psq_client):
    doc = served.corpus["acctdel.8"]
    answer = psq_client.get("/doc/acctdel.8").json()
    assert (answer["docid"], answer["title"], answer["contents"]) == ("acctdel.8", doc.title, doc.contents)
    assert answer["fields"]["id"] == "acctdel.8"
    missing = psq_client.get("/doc/no-such-doc")
    assert missing.status_code == 404 and "no document with id 'no-such-doc'" in missing.json()["error"]


def test_the_openapi_schema_describes_the_routes(psq_client):
    schema = psq_client.get("/openapi.json").json()
    assert {"/search", "/info", "/doc/{docid}"} <= set(schema["paths"])
    assert "SearchRequest" in schema["components"]["schemas"]
    assert psq_client.get("/docs").status_code == 200


def test_the_translation_is_the_models_1best_and_psq_table(served, psq_client):
    query = served.topics[1].title
    answer = psq_client.get("/search", params={"q": query}).json()
    psq = served.service("psq").searcher
    assert answer["query"] == query and len(answer["hits"]) == 10
    assert answer["translation"]["best"] == psq.model.translate(query)[0][0]
    table = psq.model.psq_table(query, psq.settings)
    assert [(term["source"], {t["term"]: t["p"] for t in term["targets"]}) for term in answer["translation"]["psq"]] \
        == table
    assert any(len(term["targets"]) > 1 for term in answer["translation"]["psq"])  # the query has alternatives
    for term in answer["translation"]["psq"]:  # searched as itself: marked, not a translation of p = 1
        assert term["untranslated"] == (term["targets"] == [{"term": term["source"], "p": 1.0}])


def test_words_the_1best_copies_are_marked_untranslated(served, psq_client):
    """"anderes" and "um" have no rule of the demo's grammar: the decoder copies them (its pass-through rule)."""
    query = "wandelt Bilder in ein anderes Bildformat um"
    translation = psq_client.get("/search", params={"q": query}).json()["translation"]
    best = served.service("psq").searcher.model.translator.translate(
        served.service("psq").searcher.model.translator.sentences(query, split=False)[0], 1)[0]
    copied = [rule.src[0] for rule in best.rules if "PassThrough" in rule.feature_dict()]
    assert translation["untranslated"] == copied and copied
    assert all(word in translation["best"].split() for word in copied)


def test_bowfd_hits_carry_their_winning_derivation(served):
    query = served.topics[0].title
    service = served.service("bowfd")
    with TestClient(create_app(service)) as client:
        answer = client.get("/search", params={"q": query, "k": 3}).json()
    model, weights = service.searcher.model, str(served.config.model_dir / "bowfd.bowfd.title.weights")
    from clirplug.rerank.bowfd import BowfdWeights

    loaded = BowfdWeights.load(weights)
    for hit in answer["hits"]:
        derivation = model.derivation(query, hit["docid"], served.config.index_dir, weights=weights)
        assert hit["derivation"] == " ".join(sentence["yield"] for sentence in derivation["sentences"])
        assert hit["score"] == pytest.approx(derivation["score"])
        explained = hit["explanation"]
        assert explained["derivation"] == hit["derivation"] and explained["score"] == pytest.approx(hit["score"])
        for sentence, record in zip(explained["sentences"], derivation["sentences"], strict=True):
            assert {t["term"]: t["bm25"] for t in sentence["terms"]} == record["bm25"]  # rerank --explain's
            for term in sentence["terms"]:
                assert term["weight"] == loaded.ir.get(term["term"], loaded.v)
                assert term["contribution"] == pytest.approx(term["weight"] * term["bm25"])
            contributions = [t["contribution"] for t in sentence["terms"]]
            assert contributions == sorted(contributions, reverse=True)


def test_bm25_searches_the_query_untranslated(served):
    with TestClient(create_app(served.service("bm25"))) as client:
        answer = client.get("/search", params={"q": "remove a user account", "k": 1}).json()
    assert answer["translation"] is None
    assert answer["hits"][0]["docid"] == "acctdel.8" and answer["hits"][0]["title"] == "remove a user account"


def test_the_page_and_the_settings_in_effect(served, psq_client):
    page = psq_client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert '<form id="search">' in page.text
    info = psq_client.get("/info").json()
    assert (info["method"], info["systems"]) == ("psq", ["psq"])
    settings = info["settings"]["psq"]
    assert settings["searcher"] == "PsqSearcher" and settings["settings"]["lambdas"] == list(
        served.service("psq").searcher.settings.lambdas)
    assert settings["bm25"] == {"k1": served.config.bm25["k1"], "b": served.config.bm25["b"]}
    assert settings["model"]["folder"] == str(served.config.model_dir)
    assert info["limits"] == {"max_k": 1000, "max_queries": 100, "max_query_chars": 4000, "max_body_bytes": 1 << 20,
                              "time_budget": 30.0}


def test_several_systems_are_served_by_name(served):
    with TestClient(create_app(served.service("psq"), served.service("bm25"))) as client:
        assert client.get("/info").json()["systems"] == ["psq", "bm25"]
        query = served.topics[0].title
        first = client.get("/search", params={"q": query}).json()
        named = client.get("/search", params={"q": query, "system": "bm25"}).json()
        assert first["translation"]["best"] and named["translation"] is None
        batch = client.post("/search", json={"queries": [{"qid": 1, "query": query}], "system": "bm25"}).json()
        assert batch["results"][0]["hits"] == named["hits"]
        refused = client.get("/search", params={"q": query, "system": "dt"})
        assert refused.status_code == 400 and refused.json()["error"] == "unknown system 'dt': choose one of psq, bm25"


@pytest.mark.parametrize("request_, message", [
    (("GET", "/search?k=5", None), "the parameter q is missing"),
    (("GET", "/search?q=%20", None), "the parameter q must be a non-empty string, got ' '"),
    (("GET", "/search?q=Datei&k=0", None), "the parameter k must be a whole number from 1 to 1000, got 0"),
    (("GET", "/search?q=Datei&k=ten", None), "the parameter k must be a whole number from 1 to 1000, got 'ten'"),
    (("GET", "/search?q=Datei&k=2.5", None), "the parameter k must be a whole number from 1 to 1000, got '2.5'"),
    (("GET", "/search?q=Datei&k=-3", None), "the parameter k must be a whole number from 1 to 1000, got '-3'"),
    (("GET", "/search?q=Datei&k=1001", None), "the parameter k must be a whole number from 1 to 1000, got 1001"),
    (("POST", "/search", b'{"queries": [{"qid": 1, "query": "Datei"}'), "the body is not JSON: Expecting ',' delimiter"),
    (("POST", "/search", b"\xff"), "the body is not JSON: 'utf-8' codec can't decode byte 0xff"),
    (("POST", "/search", b'{"queries": []}'), "queries: List should have at least 1 item"),
    (("POST", "/search", b'[{"qid": 1, "query": "Datei"}]'), 'the body must be a JSON object {"queries"'),
    (("POST", "/search", b'{"queries": [{"query": "Datei"}]}'), "queries[0].qid is missing"),
    (("POST", "/search", b'{"queries": [{"qid": 1, "query": 5}]}'), "queries[0].query must be a non-empty string, got 5"),
    (("POST", "/search", b'{"queries": [{"qid": 1, "query": "a"}, {"qid": "1", "query": "b"}]}'),
     "queries[1]: qid '1' occurs twice"),
    (("POST", "/search", b'{"queries": [{"qid": 1, "query": "Datei"}], "k": true}'), "k must be a whole number"),
    (("GET", "/nowhere", None), "Not Found"),
    (("PUT", "/search", None), "Method Not Allowed"),
])
def test_a_bad_request_gets_a_4xx_with_one_line_of_json(psq_client, request_, message):
    method, url, body = request_
    response = psq_client.request(method, url, content=body, headers={"Content-Type": "application/json"})
    assert 400 <= response.status_code < 500
    error = response.json()["error"]
    assert error.startswith(message) and "\n" not in error


def test_a_method_without_its_model_is_refused(served):
    with pytest.raises(ClirplugError, match="dt needs model: a translation model folder"):
        SearchService("dt", served.config.index_dir)
    with pytest.raises(ClirplugError, match="bm25 takes no model"):
        SearchService("bm25", served.config.index_dir, model=served.config.model_dir)


def test_concurrent_clients_on_a_real_server_get_consistent_answers(served, monkeypatch):
    """The load test of benchmarks/serve_load.py, bounded: 20 requests from 4 clients, all answered alike, every
    search run on one and the same thread."""
    benchmark = importlib.util.module_from_spec(BENCHMARK)
    BENCHMARK.loader.exec_module(benchmark)
    queries = [topic.title for topic in served.topics[:5]]
    service = served.service("psq")
    expected = {query: service.search([("q", query)], 10)[0] for query in queries}
    threads, batch_search = set(), service.searcher.batch_search_frame

    def recorded(*args, **kwargs):
        threads.add(threading.get_ident())
        return batch_search(*args, **kwargs)

    monkeypatch.setattr(service.searcher, "batch_search_frame", recorded)
    with running(create_app(service)) as url:
        with urllib.request.urlopen(url + "/") as page:
            assert page.status == 200
        result = benchmark.load(url, queries, requests=20, clients=4, time_limit=120)
    assert len(result["answers"]) == 20
    for query, status, latency, body in result["answers"]:
        assert status == 200 and latency > 0
        assert body == expected[query]
    assert len(threads) == 1 and threads != {threading.get_ident()}
