"""``clirplug experiment``: the demo config end to end, caching, resume, overrides, another language pair."""

import hashlib
import json
import shutil
from pathlib import Path

import pytest
import yaml

from clirplug.cli import main
from clirplug.errors import ClirplugError
from clirplug.experiment import kinds
from clirplug.experiment.config import load_config
from clirplug.experiment.plan import build_plan
from clirplug.experiment.runner import run_experiment

pytestmark = pytest.mark.jvm

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "clirplug" / "data" / "demo.yaml"
MINIFR = REPO / "tests" / "data" / "minifr"


def _digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.glob("*.trec"))}


# the same config on the French fixture: only the collection's path, name and language change;
# its test split has no qrels
MINIFR_SETTINGS = [f"collection.path={MINIFR}", "collection.lang=fr", "collection.name=minifr", "splits=[dev, test]"]


@pytest.fixture(scope="module")
def minifr(tmp_path_factory):
    """The demo config on the French fixture collection, run once: (config, outcomes)."""
    root = tmp_path_factory.mktemp("minifr-root")
    config = load_config(DEMO, MINIFR_SETTINGS + [f"root={root}"])
    return config, run_experiment(config, progress=False)


# ----------------------------------------------------------------------------- config checks (no JVM)

def _write(tmp_path, text):
    path = tmp_path / "exp.yaml"
    path.write_text(text, encoding="utf-8")
    return path


BASE = f"collection: {{path: {MINIFR}, lang: fr}}\n"


@pytest.mark.parametrize("text, overrides, message", [
    (BASE + "colour: red\n", [], "exp.yaml: colour: unknown key"),
    (BASE + "hits: many\n", [], "exp.yaml: hits: expected int"),
    (BASE + "fields: [title, abstract]\n", [], "fields: unknown value 'abstract'"),
    (BASE + "runs: {psq: {pl: 0.1}}\n", [], "runs.psq.pl: unknown setting"),
    (BASE + "baseline: psq\nruns: {psq: {psq: {pl: 0.1}}}\n", [], "runs.psq.psq: unknown option 'pl'"),
    (BASE + "baseline: psq\nruns: {psq: {psq: {pC: 0}}}\n", [], "runs.psq.psq.pC: must be above 0.0, got 0.0"),
    (BASE + "baseline: psq\nruns: {psq: {psq: \"pC=x\"}}\n", [], "runs.psq.psq: cannot read 'pC=x'"),
    (BASE + "runs: {x: {method: magic}}\n", [], "runs.x.method: unknown method 'magic'"),
    (BASE + "runs: {b: {method: boost, colour: 1}}\n", [], "runs.b.colour: unknown setting"),
    (BASE + "runs: {b: {method: boost, order: three}}\n", [], "runs.b.order: expected int, got 'three'"),
    (BASE + "runs: {b: {method: boost, field: desc}}\n", [], "runs.b.field: set by the experiment itself"),
    (BASE + "runs: {f: {method: fusion, runs: [psq, floor]}}\n", [], "refers to 'psq'"),
    (BASE + "models: {align: {p0: high}}\n", [], "models.align.p0: expected float, got 'high'"),
    (BASE + "models: {align: {src_lang: de}}\n", [], "models.align.src_lang: unknown setting"),
    (BASE + "runs: {b: {method: boost, bits: 40}}\n", [], "runs.b.bits: must be at most 32, got 40"),
    (BASE + "measures: [MAP, Magic@3]\n", [], "measures:"),
    (BASE, ["collection.path=/nonexistent"], "collection.path: /nonexistent/corpus.jsonl: no such file"),
    (BASE, ["collection.corpus=/nonexistent.jsonl"], "exp.yaml: collection.corpus: /nonexistent.jsonl: no such file"),
    (BASE, ["collection.lang=xx"], "exp.yaml: collection.lang: unknown language 'xx' (choose one of ar, bn"),
    (BASE, ["splits=[dev, nosuchsplit]"], "splits: "),
    (BASE, ["hits"], "--set 'hits': expected KEY=VALUE"),
    (BASE, ["collection.name=../../x"], "collection.name: '../../x' becomes a folder name under root"),
    (BASE, ["name=.."], "exp.yaml: name: '..' becomes a folder name"),
    (BASE, ["folds=1"], "folds: expected 0 (no cross-fitting) or at least 2"),
    (BASE, ["executor=spark"], "exp.yaml: executor: expected one of local, ray, got 'spark'"),
    (BASE, ["ray_address=head:6379"], "exp.yaml: ray_address: needs executor: ray"),
    (BASE + "runs: {a: {method: fusion, runs: [b, floor]}, b: {method: fusion, runs: [a, floor]}}\n", [],
     "runs.a: the runs refer to each other in a cycle: a -> b -> a"),
    (BASE + "runs: {dt: {}, bowfd: {candidates: bowfd2}, bowfd2: {method: bowfd, candidates: bowfd}}\n", [],
     "cycle: bowfd -> bowfd2 -> bowfd"),
    (BASE + "baseline: psq\nruns: {psq: {grid: {pl: [0.1]}}}\n", [], "runs.psq.grid.pl: unknown --psq option"),
    (BASE + "baseline: f\nruns: {f: {method: fusion, runs: [floor, floor], fuser: [borda, magic]}}\n", [], "runs.f.fuser: expected learned, or one"),
])
def test_config_errors_name_the_key(tmp_path, text, overrides, message):
    with pytest.raises(ClirplugError) as error:  # planning errors too (a grid, a fusion method): --dry-run shows them
        run_experiment(load_config(_write(tmp_path, text), overrides + [f"root={tmp_path}"]), dry_run=True,
                       progress=False)
    assert message in str(error.value)


def test_overrides_are_typed_and_relative_to_the_current_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    config = load_config(DEMO, ["collection.path=tests/data/minifr", "collection.lang=fr", "hits=10",
                                "runs.psq.psq=lambda=1:0:0", f"root={tmp_path}"])
    assert config.collection.path == REPO / "tests" / "data" / "minifr"
    assert (config.collection.lang, config.hits, config.root) == ("fr", 10, tmp_path)
    assert config.run("psq").settings.psq == "lambda=1:0:0"
    # the file's own relative path is read relative to the file
    assert load_config(DEMO).collection.path.resolve() == (REPO / "clirplug" / "data" / "demo").resolve()


def test_a_collection_folder_with_other_documents(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    corpus = REPO / "tests" / "data" / "minifr" / "corpus.jsonl"
    config = load_config(DEMO, [f"collection.corpus={corpus.relative_to(REPO)}", f"root={tmp_path}"])
    assert config.collection.corpus == corpus and config.collection.topics("dev").parent == config.collection.path
    plan = build_plan(config)
    assert plan.stages["index"].inputs == (corpus,)
    # the large-collection config reads the manclir-de folder with manclir-large's documents
    large = REPO / "configs" / "manclir-large.yaml"
    raw = yaml.safe_load(large.read_text(encoding="utf-8"))
    assert raw["collection"]["corpus"].endswith("manclir-large/corpus-large.jsonl.gz")
    assert set(raw["runs"]) >= {"dt", "psq", "bowfd+ltr", "boost", "dt+psq"}


# ----------------------------------------------------------------------------- the demo end to end

def test_demo_writes_runs_report_and_records(demo):
    config, outcomes = demo
    assert all(o.status == "ran" for o in outcomes)
    run_dir = config.run_dir
    for name in ("report.md", "report.tex", "report.csv", "report.json", "figures/dev.recall.png",
                 "figures/dev.title.differences.pdf"):
        assert (run_dir / name).stat().st_size > 0
    report = json.loads((run_dir / "report.json").read_text())
    run_names = {r["run"] for r in report["runs"]}
    assert {"floor", "ceiling", *(spec.name for spec in config.runs)} <= run_names
    for record in report["runs"]:
        assert (run_dir / record["file"]).is_file() and record["signature"].startswith(record["method"])
        assert 0 <= record["latency_median_seconds"] <= record["latency_p90_seconds"]
    assert {s["stage"] for s in report["stages"]} == {o.stage.name for o in outcomes} - {"report"}
    assert all(s["wall_seconds"] >= 0 and s["cpu_seconds"] > 0 and s["peak_rss_mb"] > 0 for s in report["stages"])
    assert [t["output"] for t in report["translations"]] == config.translations["outputs"]
    for translation in report["translations"]:
        assert 0 < translation["bleu"] <= 100 and translation["seconds_per_sentence_p90"] >= 0
        hypotheses = (run_dir / translation["file"]).read_text().splitlines()
        assert len(hypotheses) == translation["sentences"] == config.translations["lines"]
    # DT's latency includes the translation of the query, recorded beside the 1-best
    dt = json.loads((run_dir / "dev.title.dt.json").read_text())
    translated = [json.loads(line) for line in (run_dir / "translations" / "dev.title.flat.jsonl").read_text().splitlines()]
    assert all(dt["latency_seconds"][t["id"]] >= t["seconds"] for t in translated)
    # every tuned fusion weight is written next to the runs, with its curve
    fusions = [r for r in report["runs"] if r["method"] == "fusion"]
    learned = [r for r in fusions if "inputs" in r["tuned"]]  # the learned fusion: its chosen inputs and weights
    assert learned and all(r["tuned"]["inputs"] and set(r["tuned"]["weights"]) == set(r["tuned"]["inputs"])
                           for r in learned)
    assert all(0 <= r["tuned"]["kappa"] <= 1 for r in fusions if r not in learned)
    assert list(run_dir.glob("train.*.kappa.png"))


def test_report_numbers_equal_clirplug_eval(demo, capsys):
    config, _ = demo
    report = json.loads((config.run_dir / "report.json").read_text())
    files = {(r["split"], r["field"], r["run"]): config.run_dir / r["file"] for r in report["runs"]}
    files.update({(r["split"], field, "ceiling"): config.run_dir / r["file"]  # the title ceiling, for a field without its own
                  for r in report["runs"] if r["run"] == "ceiling" for field in config.fields
                  if (r["split"], field, "ceiling") not in files})
    checked = 0
    for row in report["scores"]:
        capsys.readouterr()
        main(["eval", "--qrels", str(config.collection.qrels(row["split"])),
              str(files[(row["split"], row["field"], row["run"])]), "--measures", row["measure"], "--format", "json"])
        (expected,) = json.loads(capsys.readouterr().out)
        assert row["value"] == pytest.approx(expected["value"], rel=1e-12, abs=1e-12)
        checked += 1
    scored = [key for key in files if key[0] in config.splits]  # train-split runs are written, not scored
    assert checked == len(config.measures) * len(scored) > 0


def test_report_tests_each_fusion_against_its_inputs(demo):
    """p_vs_inputs: the paired randomization test of the fusion's per-query values against each input's."""
    from clirplug.eval.measures import ALL, evaluate
    from clirplug.eval.significance import randomization_test
    from clirplug.io.qrels import read_qrels
    from clirplug.io.runs import read_run

    config, _ = demo
    report = json.loads((config.run_dir / "report.json").read_text())
    fused = [r for r in report["scores"] if r["method"] == "fusion"]
    assert fused and all(r["p_vs_inputs"] and len(r["p_vs_inputs"]) == (2 if "+" in r["run"] else 4) for r in fused)
    row = next(r for r in fused if r["run"] == "dt+psq" and r["measure"] == "MAP")
    qrels = read_qrels(config.collection.qrels(row["split"]))
    per_query = {}
    for name in ("dt+psq", "dt", "psq"):
        values = evaluate(qrels, {name: read_run(config.run_dir / f"{row['split']}.{row['field']}.{name}.trec")},
                          ["MAP"], per_query=True)
        per_query[name] = values[values["qid"] != ALL].sort_values("qid")["value"].to_numpy()
    for other in ("dt", "psq"):
        assert row["p_vs_inputs"][other] == pytest.approx(randomization_test(per_query["dt+psq"], per_query[other]))
    assert ": fusions against their inputs (MAP)" in (config.run_dir / "report.md").read_text()


def test_report_adjusts_the_p_values_against_the_baseline_by_holm(demo):
    """p_holm: Holm over the runs of one split, field and measure tested against the baseline; '*†' in report.md."""
    from clirplug.eval.significance import holm

    config, _ = demo
    report = json.loads((config.run_dir / "report.json").read_text())
    families = {}
    for row in report["scores"]:
        assert (row["p_holm"] is None) == (row["p_value"] is None)
        if row["p_value"] is not None:
            families.setdefault((row["split"], row["field"], row["measure"]), []).append(row)
    assert len(families) == len(config.splits) * len(config.fields) * len(config.measures)
    for rows in families.values():
        assert len(rows) > 2 and config.baseline not in {r["run"] for r in rows}
        assert [r["p_holm"] for r in rows] == holm([r["p_value"] for r in rows]).tolist()
    markdown = (config.run_dir / "report.md").read_text()
    strong = [r for rows in families.values() for r in rows if r["p_holm"] < 0.05]
    assert markdown.count("*\u2020") >= len(strong) and "after Holm's adjustment" in markdown


def test_second_invocation_skips_everything_and_keeps_the_bytes(demo):
    config, _ = demo
    before = _digests(config.run_dir)
    report_before = (config.run_dir / "report.json").read_bytes()
    outcomes = run_experiment(config, progress=False)
    assert {o.status for o in outcomes} == {"up to date"}
    assert _digests(config.run_dir) == before
    assert (config.run_dir / "report.json").read_bytes() == report_before


def test_dry_run_lists_without_writing(tmp_path, capsys):
    assert main(["experiment", str(DEMO), "--root", str(tmp_path), "--dry-run", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "index: would run" in out and "report: would run" in out
    assert not (tmp_path / "runs").exists() and not (tmp_path / "indexes").exists()


def test_psq_settings_as_a_mapping_plan_the_same_stages_as_the_string(tmp_path):
    """``psq: {lambda: [0, 0, 1], pL: 0.1, ...}`` in YAML and the --psq string are one setting."""
    def plan(psq):
        config = load_config(_write(tmp_path, BASE + f"baseline: psq\nruns: {{psq: {{psq: {psq}}}}}\n"), [f"root={tmp_path}"])
        return [(o.stage.name, o.key) for o in run_experiment(config, dry_run=True, progress=False)]

    mapping = plan("{lambda: [0, 0, 1], pL: 0.1, stop: large, nbest: 5}")
    assert mapping == plan('"lambda=0:0:1,pL=0.1,stop=large,nbest=5"')
    assert mapping != plan("{lambda: [0, 0, 1], pL: 0.2, stop: large, nbest: 5}")


SMALL = f"""
collection: {{path: {MINIFR}, lang: fr, name: minifr}}
splits: [dev, test]
baseline: psq
models: {{align: {{iterations: 3, model1_iterations: 3}}}}
runs:
  psq: {{psq: "lambda=1:0:0,pL=0.01"}}
  psq+floor: {{method: fusion, runs: [psq, floor]}}
  boost-1g: {{method: boost, order: 1, bags: 2, iterations: 50}}
"""


PARALLEL = f"""
collection: {{path: {MINIFR}, lang: fr, name: minifr}}
splits: [dev]
models: {{align: {{iterations: 3, model1_iterations: 3}}, lm: {{discount_fallback: true}}}}
translations: {{outputs: []}}
runs:
  dt: {{kind: flat}}
  psq: {{kind: flat, psq: "lambda=1:0:0,pL=0.01"}}
  bowfd+ltr: {{method: bowfd, kind: flat, candidates: dt, ltr: true}}
  dt+psq: {{method: fusion, runs: [dt, psq], fuser: [borda, rrf]}}
"""


def test_stages_run_in_parallel_write_the_same_files(tmp_path):
    """--jobs 2 runs independent stages at once in worker processes (and BOW-FD's shards in two);
    the run files and trained weights equal --jobs 1's byte for byte."""
    path = _write(tmp_path, PARALLEL)
    one = load_config(path, [f"root={tmp_path / 'one'}"])
    two = load_config(path, [f"root={tmp_path / 'two'}"])
    run_experiment(one, jobs=1, progress=False)
    outcomes = run_experiment(two, jobs=2, progress=False)
    assert {o.status for o in outcomes} == {"ran"}
    assert _digests(two.run_dir) == _digests(one.run_dir) and len(_digests(one.run_dir)) >= 12
    weights = sorted(p.name for p in one.model_dir.glob("bowfd.*.weights"))
    assert weights and all((two.model_dir / name).read_bytes() == (one.model_dir / name).read_bytes()
                           for name in weights)
    assert {o.status for o in run_experiment(two, jobs=2, progress=False)} == {"up to date"}


TWO_SPLITS = """
collection: {{path: {path}, lang: de, name: demo}}
folds: 0
fields: [title]
models: {{align: {{iterations: 3, model1_iterations: 3}}, lm: {{order: 3, discount_fallback: true}},
          weights: {{lines: 40, max_words: 10, iterations: 2, nbest: 10}}}}
translations: {{outputs: []}}
runs:
  dt: {{kind: flat}}
"""


def test_a_second_split_changes_no_dev_run(tmp_path):
    """The dev runs and the decoder weights are the same with and without a test split beside dev.

    The grammar is filtered to the topics of every split (and the tune lines), so a test split adds rules; its
    titles here are the tune bitext lines after the first 40, which PRO once read when it skipped long lines among
    those 40, decoding them with whichever of their rules the other splits' text had kept.
    """
    collection = tmp_path / "collection"
    shutil.copytree(DEMO.parent / "demo", collection)
    lines = (collection / "bitext.train.de").read_text(encoding="utf-8").splitlines()
    (collection / "topics.test.jsonl").write_text("".join(
        json.dumps({"id": f"t{k}", "title": line, "desc": line, "lang": "de"}, ensure_ascii=False) + "\n"
        for k, line in enumerate(lines[40:140])), encoding="utf-8")
    path = _write(tmp_path, TWO_SPLITS.format(path=collection))
    configs = [load_config(path, [f"root={tmp_path / name}", f"splits={splits}"])
               for name, splits in (("dev", "[dev]"), ("both", "[dev, test]"))]
    for config in configs:
        run_experiment(config, progress=False)
    alone, beside = configs
    assert (beside.run_dir / "test.title.dt.trec").is_file()
    assert (beside.model_dir / "weights.flat").read_bytes() == (alone.model_dir / "weights.flat").read_bytes()
    dev = _digests(alone.run_dir)
    assert dev == {name: digest for name, digest in _digests(beside.run_dir).items() if name.startswith("dev.")}
    assert "dev.title.dt.trec" in dev


def test_the_grammar_filter_text_holds_the_desc_query_lines(tmp_path):
    """Query-genre weights decode each desc query's bitext line, which may run past the desc (a desc ending inside
    its paragraph): the grammar's filter text holds those lines whole, not only the descs."""
    from clirplug.io.topics import read_topics
    from clirplug.mt.queries import parallel_queries

    collection = tmp_path / "collection"
    shutil.copytree(DEMO.parent / "demo", collection)
    bitext = tuple(collection / f"bitext.train.{what}" for what in ("de", "en", "ids"))
    topics = read_topics(collection / "topics.train.jsonl")
    line = parallel_queries(topics[:1], "desc", bitext=bitext)[topics[0].id][0]
    records = [json.loads(text) for text in (collection / "topics.train.jsonl").read_text(encoding="utf-8").splitlines()]
    records[0]["desc"] = " ".join(line.split()[:4])  # the desc now ends inside its opening line
    (collection / "topics.train.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
                                                   encoding="utf-8")
    config = load_config(DEMO, [f"collection.path={collection}", f"root={tmp_path}", "models.weights.lines=1"])
    stage = build_plan(config).stages["source-text"]
    kinds.STAGE_KINDS["source-text"][0](stage, None)
    text = stage.outputs[0].read_text(encoding="utf-8").splitlines()
    pairs = parallel_queries(read_topics(collection / "topics.train.jsonl"), "desc", bitext=bitext)
    assert pairs[topics[0].id][0] == line and line not in records[0]["desc"]
    assert all(any(f in other for other in text) for f, _ in pairs.values())


def test_interrupted_run_resumes_to_the_same_files(tmp_path, monkeypatch):
    small = _write(tmp_path, SMALL)
    config = load_config(small, [f"root={tmp_path / 'reference'}"])
    run_experiment(config, progress=False)
    function, version = kinds.STAGE_KINDS["psq"]
    calls = []

    def interrupted(stage, ctx):
        calls.append(stage.name)
        if len(calls) == 2:
            raise KeyboardInterrupt  # as if killed in the middle of the second PSQ stage
        return function(stage, ctx)

    monkeypatch.setitem(kinds.STAGE_KINDS, "psq", (interrupted, version))
    fresh = load_config(small, [f"root={tmp_path / 'resumed'}"])
    with pytest.raises(KeyboardInterrupt):
        run_experiment(fresh, progress=False)
    monkeypatch.setitem(kinds.STAGE_KINDS, "psq", (function, version))
    outcomes = run_experiment(fresh, progress=False)
    ran = {o.stage.name for o in outcomes if o.status == "ran"}
    assert calls[1] in ran and calls[0] not in ran and "index" not in ran
    assert _digests(fresh.run_dir) == _digests(config.run_dir)
    report = json.loads((fresh.run_dir / "report.json").read_text())
    boost = [r for r in report["runs"] if r["method"] == "boost"]
    assert boost and all(r["tuned"]["beta"] >= 0 for r in boost)
    assert ": boosting (Sokolov et al. 2013, Table 2)" in (fresh.run_dir / "report.md").read_text()

    # a changed setting reruns only the stages that depend on it
    changed = load_config(small, [f"root={tmp_path / 'resumed'}", "runs.psq.psq=lambda=1:0:0,pL=0.05"])
    outcomes = run_experiment(changed, progress=False)
    ran = {o.stage.name for o in outcomes if o.status == "ran"}
    assert ran and all(name.startswith(("run.psq.", "tune.psq", "run.psq+", "systems", "report")) for name in ran)
    assert {o.stage.name for o in outcomes if o.stage.name.startswith("run.psq.")} <= ran


def test_same_config_runs_on_another_language_pair(minifr):
    """Only the collection's path, name and language change; the test split has no qrels."""
    config, outcomes = minifr
    assert all(o.status == "ran" for o in outcomes)
    report = json.loads((config.run_dir / "report.json").read_text())
    assert report["collection"]["lang"] == "fr"
    assert {r["split"] for r in report["runs"]} >= {"dev", "test"}
    assert {r["split"] for r in report["scores"]} == {"dev"}
    assert (config.root / "models" / "minifr" / "lex.e_given_f.npz").is_file()
    test_runs = [r for r in report["runs"] if r["split"] == "test" and r["run"] != "floor"]  # French titles may match nothing
    assert test_runs and all((config.run_dir / r["file"]).stat().st_size > 0 for r in test_runs)
    assert "No qrels" in (config.run_dir / "report.md").read_text()
    # its bitext names no page: no parallel desc query, so query-genre weights fall back to the model's
    record = json.loads((config.run_dir / "stages" / "model.weights.flat.queries.desc.json").read_text())
    assert record["metrics"] == {"queries": 0, "fallback": "the model's weights"}


def test_each_fold_model_is_trained_without_its_topics_pages(demo):
    """Cross-fitting: fold k's bitext is the tune bitext less the lines of fold k's pages."""
    from clirplug.crossfit import page_name
    from clirplug.io.topics import read_topics

    config, _ = demo
    coll = config.collection
    src = coll.bitext("train", "de").read_text(encoding="utf-8").splitlines()
    ids = coll.bitext("train", "ids").read_text(encoding="utf-8").splitlines()
    folds = config.run_dir / "folds"
    seen = []
    for k in range(config.folds):
        names = {page_name(t.id) for t in read_topics(folds / f"f{k}.topics.jsonl")}
        expected = [line for line, page in zip(src, ids) if page_name(page) not in names]
        assert (folds / f"f{k}.bitext.de").read_text(encoding="utf-8").splitlines() == expected
        assert len(expected) < len(src)  # every demo fold has pages in the bitext
        assert (config.model_dir / f"fold-{k}" / "grammar.flat.gz").is_file()
        seen += [t.id for t in read_topics(folds / f"f{k}.topics.jsonl")]
    assert sorted(seen) == sorted(t.id for t in read_topics(coll.topics("train")))


def test_psq_settings_are_tuned_on_the_folds_and_used_on_dev(demo):
    """The chosen setting is the best evaluated one, its train MAP is that of the joined train run, and dev uses it."""
    from clirplug.eval.measures import evaluate
    from clirplug.io.qrels import read_qrels
    from clirplug.io.runs import read_run

    config, _ = demo
    for fld in config.fields:
        tuned = json.loads((config.run_dir / f"train.{fld}.psq.psq.json").read_text())
        assert tuned["value"] == max(e["MAP"] for e in tuned["evaluated"])
        assert tuned["parts"] == [f"train.f{k}" for k in range(config.folds)]
        joined = read_run(config.run_dir / f"train.{fld}.psq.trec")
        parts = [read_run(config.run_dir / f"train.f{k}.{fld}.psq.trec") for k in range(config.folds)]
        assert len(joined) == sum(map(len, parts))
        value = float(evaluate(read_qrels(config.collection.qrels("train")), {"r": joined}, ["MAP"])["value"].iloc[0])
        assert value == pytest.approx(tuned["value"], abs=1e-12)
        assert json.loads((config.run_dir / f"dev.{fld}.psq.json").read_text())["tuned"]["psq"] == tuned["psq"]


def test_folds_need_the_bitext_page_ids(tmp_path):
    import shutil

    collection = tmp_path / "coll"
    shutil.copytree(MINIFR, collection)
    (collection / "bitext.train.ids").unlink()
    config = load_config(DEMO, [f"collection.path={collection}", "collection.lang=fr", f"root={tmp_path}"])
    with pytest.raises(ClirplugError, match=r"folds: .*bitext.train.ids: no such file"):
        run_experiment(config, dry_run=True, progress=False)
    with pytest.raises(ClirplugError, match=r"weights: queries: .*bitext.train.ids: no such file"):
        run_experiment(load_config(DEMO, [f"collection.path={collection}", "collection.lang=fr", f"root={tmp_path}",
                                          "folds=0"]), dry_run=True, progress=False)
    assert run_experiment(load_config(DEMO, [f"collection.path={collection}", "collection.lang=fr", f"root={tmp_path}",
                                             "folds=0", "fields=[title]"]), dry_run=True, progress=False)


def test_fusion_method_and_kappa_are_chosen_together_on_train(demo):
    """``fuser: [borda, rrf]``: the method with the best train curve is kept with its kappa, and used on dev."""
    from clirplug.fusion import fuse
    from clirplug.io.runs import read_run, sort_run

    config, _ = demo
    for fld in config.fields:
        tuned = json.loads((config.run_dir / f"train.{fld}.dt+psq.kappa.json").read_text())
        assert set(tuned["methods"]) == {"borda", "rrf"}
        assert tuned["best"] == max(tuned["methods"].values()) == tuned["methods"][tuned["method"]]
        runs = [read_run(config.run_dir / f"dev.{fld}.{name}.trec") for name in ("dt", "psq")]
        expected = fuse(tuned["method"], runs, weights=[tuned["kappa"], 1 - tuned["kappa"]], depth=config.hits)
        got = read_run(config.run_dir / f"dev.{fld}.dt+psq.trec")
        assert list(sort_run(expected)["docid"]) == list(sort_run(got)["docid"])


def test_a_damaged_output_reruns_its_stage(tmp_path):
    """A run file truncated after the run is not trusted: its stage runs again and the file is restored."""
    config = load_config(DEMO, [f"root={tmp_path}", "runs={}", "fields=[title]", "translations.outputs=[]"])
    run_experiment(config, progress=False)
    floor = config.run_dir / "dev.title.floor.trec"
    whole = floor.read_bytes()
    floor.write_bytes(whole[: len(whole) // 2])
    outcomes = {o.stage.name: o.status for o in run_experiment(config, progress=False)}
    assert outcomes["run.floor.dev.title"] == "ran" and outcomes["index"] == "up to date"
    assert floor.read_bytes() == whole


def test_the_index_stage_never_replaces_a_folder_it_did_not_make(tmp_path):
    config = load_config(DEMO, [f"root={tmp_path}", "runs={}", "fields=[title]", "translations.outputs=[]"])
    config.index_dir.mkdir(parents=True)
    (config.index_dir / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(ClirplugError, match="is not a clirplug index; refusing to replace it"):
        run_experiment(config, progress=False)
    assert (config.index_dir / "notes.txt").read_text(encoding="utf-8") == "mine"
    (config.index_dir / "clirplug.json").write_text('{"language": "en"}', encoding="utf-8")  # as index --existing
    with pytest.raises(ClirplugError, match="is not a clirplug index; refusing to replace it"):
        run_experiment(config, progress=False)
    assert (config.index_dir / "notes.txt").read_text(encoding="utf-8") == "mine"


MIRA = """
collection: {{path: {path}, lang: de, name: demo}}
fields: [title]
models: {{align: {{iterations: 3, model1_iterations: 3}}, lm: {{order: 3, discount_fallback: true}}}}
translations: {{outputs: []}}
runs:
  dt: {{kind: flat}}
  dt-mira: {{kind: flat, nbest: 5, C: [0, 0.01, 1]}}
  dt+dt-mira: {{method: fusion, runs: [dt, dt-mira]}}
"""


def test_dt_mira_trains_on_the_folds_n_best_lists_and_reranks_each_fold_with_the_others_weights(tmp_path, monkeypatch):
    """Cross-fitting: each fold's train topics are decoded by the fold's model (trained without their pages); the
    tune split's run of a fold (a fusion's kappa is tuned on it) is reranked by weights trained on the other folds'
    topics only; dev by the weights trained on all, as ``clirplug search --method dt-mira`` reranks with them."""
    from clirplug.api import load_system
    from clirplug.io.runs import read_run
    from clirplug.io.topics import read_topics
    from clirplug.qt import mira

    built = []
    build_instances = mira.build_instances

    def recorded(topics, field, translator, *args, **kwargs):
        names, raw, stats = build_instances(topics, field, translator, *args, **kwargs)
        built.append((Path(translator.model_dir), sorted(t.id for t in topics), stats["instances"]))
        return names, raw, stats

    monkeypatch.setattr(mira, "build_instances", recorded)
    config = load_config(_write(tmp_path, MIRA.format(path=DEMO.parent / "demo")), [f"root={tmp_path / 'root'}"])
    run_experiment(config, progress=False)
    folds = config.run_dir / "folds"
    assert [(path, ids) for path, ids, _ in built] == [
        (config.model_dir / f"fold-{k}", sorted(t.id for t in read_topics(folds / f"f{k}.topics.jsonl")))
        for k in range(config.folds)]
    every = json.loads((config.model_dir / "mira.dt-mira.title.json").read_text())
    assert every["stats"]["instances"] == sum(count for _, _, count in built) > 0
    assert every["settings"]["nbest"] == 5 and every["settings"]["C"] in (0, 0.01, 1)
    for k, (_, _, count) in enumerate(built):
        held_out = config.model_dir / f"mira.dt-mira.title.f{k}.json"
        assert json.loads(held_out.read_text())["stats"]["instances"] == every["stats"]["instances"] - count
        sidecar = json.loads((config.run_dir / f"train.f{k}.title.dt-mira.json").read_text())
        assert sidecar["tuned"]["weights_file"] == str(held_out)
    dev = json.loads((config.run_dir / "dev.title.dt-mira.json").read_text())
    assert dev["tuned"]["weights_file"] == str(config.model_dir / "mira.dt-mira.title.json")
    # the library reranks dev with the same weights: the same run
    expected = mira.search_run(read_topics(config.collection.topics("dev")), index=config.index_dir,
                               model=config.model_dir, mira=config.model_dir / "mira.dt-mira.title.json",
                               kind="flat", k1=config.bm25["k1"], b=config.bm25["b"], progress=False)
    got = read_run(config.run_dir / "dev.title.dt-mira.trec")
    assert list(got["docid"]) == list(expected["docid"]) and len(got) > 0
    assert got["score"].tolist() == pytest.approx(expected["score"].tolist(), abs=1e-4)
    # its system file loads again; its tune runs are held out, so it competes for the recommendation, as its fusion
    system = load_system(config.run_dir / "dev.title.dt-mira.system.json")
    assert system.system.name == "dt-mira" and system.weights.settings["nbest"] == 5
    recommended = json.loads((config.run_dir / "recommended.title.json").read_text())
    assert {"dt", "dt-mira", "dt+dt-mira"} <= set(recommended["recommended"]["values"])
    assert "query translation adapted for retrieval (Nikoulina et al. 2012)" in (config.run_dir / "report.md").read_text()


def test_the_desc_ceiling_searches_the_mates_desc_openings(demo):
    """The desc ceiling is BM25 with the mates' desc openings (all ten demo dev topics are aligned in its bitext),
    and the report's desc shares divide by it."""
    import csv

    from clirplug.io.qrels import read_qrels
    from clirplug.io.runs import read_run
    from clirplug.io.topics import read_topics
    from clirplug.lucene.search import Bm25Searcher
    from clirplug.mt.queries import mate_desc_queries

    config, _ = demo
    coll = config.collection
    queries, openings = mate_desc_queries(read_topics(coll.topics("dev")), read_qrels(coll.qrels("dev")), coll.corpus,
                                          [coll.bitext("dev", what) for what in ("de", "en", "ids")])
    assert openings == len(queries) == 10
    assert queries["fndtree.1"] == "fndtree shows the directory tree."  # by hand: bitext.dev.en, its first line
    searcher = Bm25Searcher(config.index_dir, config.bm25["k1"], config.bm25["b"])
    expected = searcher.search_all(queries, config.hits, False, {})
    got = read_run(config.run_dir / "dev.desc.ceiling.trec")
    assert list(got["docid"]) == list(expected["docid"])
    record = json.loads((config.run_dir / "stages" / "run.ceiling.dev.desc.json").read_text())
    assert record["metrics"]["desc_openings"] == 10 and record["metrics"]["mate_titles"] == 0
    rows = list(csv.DictReader((config.run_dir / "report.csv").open(encoding="utf-8")))
    value = {(r["field"], r["run"]): float(r["value"]) for r in rows if r["measure"] == "MAP"}
    share = {(r["field"], r["run"]): float(r["share_of_ceiling"]) for r in rows if r["measure"] == "MAP"}
    assert value[("desc", "ceiling")] != value[("title", "ceiling")]
    for fld in ("title", "desc"):
        assert share[(fld, "dt")] == pytest.approx(value[(fld, "dt")] / value[(fld, "ceiling")])
