"""The demo's system files: each one loads again and writes its run, byte for byte, through the command line, Python,
the search service (its HTTP interface) and PyTerrier; the recommended systems load; the service answers from a
system file.

The session's ``demo`` fixture ran the experiment; every dev run but the ceiling has a system file beside it
(docs/experiments.md, "System files").
"""

import json
import urllib.parse
import urllib.request

import pandas as pd
import pytest

from clirplug.api import load_system
from clirplug.cli import build_parser, main
from clirplug.cli.serve import systems
from clirplug.io.runs import read_run
from clirplug.io.topics import read_topics, topic_field
from clirplug.serve.app import create_app, running

pytestmark = pytest.mark.jvm

FIELDS = ("title", "desc")
RUNS = ("floor", "dt", "dt-queries", "psq", "bowfd", "bowfd+ltr", "bowfd-nolm", "boost", "dt+psq", "dt+boost",
        "psq+boost", "dense", "dt+dense", "psq+dense", "bowfd+dense", "all")


@pytest.fixture(scope="module")
def config(demo):
    return demo[0]


def _system(config, field: str, name: str):
    return config.run_dir / f"dev.{field}.{name}.system.json"


def test_every_dev_run_but_the_ceiling_has_a_system_file(config):
    written = {path.name for path in config.run_dir.glob("dev.*.system.json")}
    assert written == {_system(config, field, name).name for field in FIELDS for name in RUNS}
    psq = json.loads(_system(config, "title", "psq").read_text(encoding="utf-8"))
    assert psq["root"] == "../.." and psq["index"] == "indexes/demo" and psq["model"]["folder"] == "models/demo"
    tuned = json.loads(config.run_dir.joinpath("dev.title.psq.json").read_text(encoding="utf-8"))["tuned"]
    assert psq["options"]["settings"] == tuned["psq"]


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("name", RUNS)
def test_search_with_a_system_file_writes_the_experiments_run(config, tmp_path, name, field):
    """``clirplug search --system`` writes the run file byte for byte (hits, tag, scores), and ``load_system`` names
    the system (its rankings: the PyTerrier test below, through the same searcher)."""
    topics = str(config.collection.topics("dev"))
    expected = config.run_dir / f"dev.{field}.{name}.trec"
    assert main(["search", "--system", str(_system(config, field, name)), "--topics", topics,
                 "--output", str(tmp_path / "run.trec"), "--quiet"]) == 0
    assert (tmp_path / "run.trec").read_bytes() == expected.read_bytes()
    searcher = load_system(_system(config, field, name))
    assert (searcher.system.name, searcher.system.field, searcher.system.tag) == (name, field, f"{name}.{field}")


@pytest.fixture(scope="module")
def loaded():
    """The searchers of the system files loaded so far, shared by the systems built on them (a fusion's inputs are
    other runs' systems): each file and each model loaded once for the module."""
    return {}


def _service_ranking(searcher, topics, field: str, k: int):
    """The ranking the search service of ``searcher`` gives (``POST /search``, in process), as a run frame ``qid,
    docid, rank, score``."""
    from starlette.testclient import TestClient

    from clirplug.serve.schema import MAX_QUERIES
    from clirplug.serve.service import SearchService

    rows = []
    with TestClient(create_app(SearchService.of_system(searcher))) as client:
        for start in range(0, len(topics), MAX_QUERIES):
            batch = [{"qid": t.id, "query": topic_field(t, field)} for t in topics[start:start + MAX_QUERIES]]
            response = client.post("/search", json={"queries": batch, "k": k})
            assert response.status_code == 200, response.text
            rows += [(answer["qid"], hit["docid"], hit["rank"], hit["score"])
                     for answer in response.json()["results"] for hit in answer["hits"]]
    return pd.DataFrame(rows, columns=["qid", "docid", "rank", "score"])


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("name", [*RUNS, "recommended"])
def test_the_service_and_pyterrier_give_the_experiments_ranking(config, loaded, tmp_path, name, field):
    """A system file (each dev run's, and the recommended system of the field) served, its answer to ``POST /search``
    with every fourth dev topic (the searches are the PyTerrier transformer's: the service adds JSON), ranks the
    documents of the experiment's run with its scores; its PyTerrier transformer writes the whole run byte for byte
    (``from_system`` for the recommended file; the others share their loaded searchers)."""
    from clirplug.io.runs import write_run
    from clirplug.pyterrier import ClirplugTransformer, from_system

    file = config.run_dir / f"recommended.{field}.json" if name == "recommended" else _system(config, field, name)
    system = json.loads(file.read_text(encoding="utf-8"))
    expected = config.run_dir / f"dev.{field}.{system['name']}.trec"
    topics = read_topics(config.collection.topics("dev"))
    run, hits = read_run(expected), system["hits"]
    searcher = load_system(file, loaded)
    sample = topics[::4]
    served = _service_ranking(searcher, sample, field, hits)
    columns = ["qid", "docid", "rank", "score"]
    expected_sample = run[run["qid"].isin({t.id for t in sample})][columns].reset_index(drop=True)
    pd.testing.assert_frame_equal(served, expected_sample, check_dtype=False)
    transformer = from_system(file) if name == "recommended" else ClirplugTransformer(searcher, hits)
    results = transformer(pd.DataFrame({"qid": [t.id for t in topics], "query": [topic_field(t, field) for t in topics]}))
    write_run(results.rename(columns={"docno": "docid"}), tmp_path / "pt.trec", tag=system["tag"])
    assert (tmp_path / "pt.trec").read_bytes() == expected.read_bytes()


def test_a_system_for_title_queries_refuses_desc(config, tmp_path, capsys):
    assert main(["search", "--system", str(_system(config, "title", "dt")), "--field", "desc", "--topics",
                 str(config.collection.topics("dev")), "--output", str(tmp_path / "run.trec")]) != 0
    assert "field: the system reads title queries, not --field desc" in capsys.readouterr().err


@pytest.mark.parametrize("field", FIELDS)
def test_the_recommended_system_is_the_best_on_train_and_the_report_says_so_first(config, field):
    recommended = json.loads((config.run_dir / f"recommended.{field}.json").read_text(encoding="utf-8"))
    values = recommended["recommended"]["values"]
    assert round(values[recommended["name"]], 4) == max(round(value, 4) for value in values.values())
    # the runs with a train run (those a fusion or BOW-FD uses) and the fusions of them, none trained on train's qrels
    assert set(values) == {"dt", "dt-queries", "psq", "dense", "dt+psq", "dt+dense", "psq+dense", "all"}
    searcher = load_system(config.run_dir / f"recommended.{field}.json")
    assert searcher.system.name == recommended["name"]
    report = (config.run_dir / "report.md").read_text(encoding="utf-8")
    assert report.split("\n## ")[1].startswith("Recommended systems")
    assert f"| {field} | {recommended['name']} | `recommended.{field}.json` |" in report
    assert json.loads((config.run_dir / "report.json").read_text())["recommended"][field]["run"] == recommended["name"]


@pytest.mark.parametrize("field", FIELDS)
def test_the_recommended_values_are_map_on_train(config, field):
    """Each compared system's value is MAP of its train run; a fusion's (taken from its kappa tuning) is MAP of its
    inputs' train runs fused with its method and kappa."""
    from clirplug.eval.measures import evaluate
    from clirplug.fusion import fuse
    from clirplug.io.qrels import read_qrels

    values = json.loads((config.run_dir / f"recommended.{field}.json").read_text(encoding="utf-8"))["recommended"]["values"]
    qrels = read_qrels(config.collection.qrels("train"))
    fused = 0
    for name, value in values.items():
        path = config.run_dir / f"train.{field}.{name}.trec"
        if path.is_file():
            run = read_run(path)
        else:
            system = json.loads(_system(config, field, name).read_text(encoding="utf-8"))
            inputs = [json.loads((config.run_dir / file).read_text(encoding="utf-8"))["name"] for file in system["searchers"]]
            options = system["options"]
            run = fuse(options["method"], [read_run(config.run_dir / f"train.{field}.{other}.trec") for other in inputs],
                       weights=[options["kappa"], 1 - options["kappa"]], depth=options["depth"])
            fused += 1
        assert value == pytest.approx(float(evaluate(qrels, {"run": run}, ["MAP"])["value"].iloc[0]), abs=1e-12), name
    assert fused == 3  # dt+psq, dt+dense, psq+dense


def test_serve_answers_with_the_experiments_tuned_fusion(config):
    """``clirplug serve --system`` of psq+dense and of dt on a real server on 127.0.0.1: a dev title's top 10 are
    the experiment run's; ``system=TAG`` picks the second."""
    files = [str(_system(config, "title", "psq+dense")), str(_system(config, "title", "dt"))]
    args = build_parser().parse_args(["serve", *sum((["--system", f] for f in files), [])])
    topic = read_topics(config.collection.topics("dev"))[0]
    with running(create_app(*systems(args.system))) as url:
        with urllib.request.urlopen(url + "/info") as response:
            info = json.loads(response.read())
            assert (info["method"], info["systems"]) == ("psq+dense.title", ["psq+dense.title", "dt.title"])
            assert info["settings"]["dt.title"]["system_file"] == files[1]  # the settings in effect
        answers = {}
        for name, query in (("psq+dense", ""), ("dt", "&system=dt.title")):
            text = urllib.parse.quote(topic.title)
            with urllib.request.urlopen(f"{url}/search?q={text}&k=10{query}") as response:
                answers[name] = json.loads(response.read())
    for name, answer in answers.items():
        run = read_run(config.run_dir / f"dev.title.{name}.trec")
        top = run[run["qid"] == topic.id].head(10)
        assert [(hit["docid"], hit["score"]) for hit in answer["hits"]] == list(zip(top["docid"], top["score"]))
