"""Acceptance: Chinese, Persian and German queries end to end through the command line.

Each collection goes through ``clirplug index``, a translation model trained from its small bitext
(``train align``, ``train grammar --kind flat``, ``train lm``), DT and PSQ search of the title and desc
fields, and ``clirplug eval``. The runs must rank the relevant documents far above chance: a MAP
over 0.4 and over four times the expected MAP of a random ranking of the same documents (the mean
of seeded shuffles). The Chinese and Persian fixtures are tests/data/minizh and tests/data/minifa (tests/data/make_minilang.py); the
German one is the embedded demo collection.
"""

import contextlib
import io
import json
import random
from pathlib import Path

import ir_measures
import pytest

from clirplug.cli import main
from clirplug.io.qrels import read_qrels

pytestmark = pytest.mark.jvm

DATA = Path(__file__).resolve().parents[1] / "data"
DEMO = Path(__file__).resolve().parents[2] / "clirplug" / "data" / "demo"
# name -> (folder, query language, topics file, qrels file)
COLLECTIONS = {
    "zh": (DATA / "minizh", "zh", "topics.jsonl", "qrels.txt"),
    "fa": (DATA / "minifa", "fa", "topics.jsonl", "qrels.txt"),
    "de": (DEMO, "de", "topics.dev.jsonl", "qrels.dev.txt"),
}
RUNS = [(method, field) for method in ("dt", "psq") for field in ("title", "desc")]


def _run(*argv):
    assert main([str(arg) for arg in argv]) == 0, argv


def _pipeline(name: str, work: Path) -> list[dict]:
    """Index collection ``name``, train its model, write its DT and PSQ runs; their per-topic MAP rows."""
    folder, lang, topics, qrels = COLLECTIONS[name]
    index, model = work / "index", work / "model"
    _run("index", "--corpus", folder / "corpus.jsonl", "--index", index, "--language", "en", "--quiet")
    _run("train", "align", "--src", folder / f"bitext.train.{lang}", "--tgt", folder / "bitext.train.en",
         "--src-lang", lang, "--output", model)
    _run("train", "grammar", "--kind", "flat", "--model", model, "--src-lang", lang)
    _run("train", "lm", "--text", folder / "bitext.train.en", "--order", "3", "--discount-fallback",
         "--output", model / "lm.arpa")
    runs = []
    for method, field in RUNS:
        runs.append(work / f"{method}.{field}.trec")
        _run("search", "--method", method, "--kind", "flat", "--model", model, "--index", index, "--src-lang", lang,
             "--topics", folder / topics, "--field", field, "--output", runs[-1], "--quiet")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        _run("eval", "--qrels", folder / qrels, *runs, "--measures", "MAP", "--per-query", "--format", "json")
    return [row for row in json.loads(out.getvalue()) if "qid" in row]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """``name -> (work folder, per-topic MAP rows)``, each collection run once for the module."""
    cache = {}

    def build(name):
        if name not in cache:
            work = tmp_path_factory.mktemp(f"lang-{name}")
            cache[name] = work, _pipeline(name, work)
        return cache[name]

    return build


def random_map(qrels: dict, documents: list[str], shuffles: int = 200, seed: int = 0) -> float:
    """The mean MAP of ``shuffles`` seeded random rankings of ``documents`` for the topics of ``qrels``."""
    rng = random.Random(seed)
    measure = ir_measures.parse_measure("AP")
    total = 0.0
    for _ in range(shuffles):
        run = {qid: {doc: float(-rank) for rank, doc in enumerate(rng.sample(documents, len(documents)))}
               for qid in qrels}
        total += ir_measures.calc_aggregate([measure], qrels, run)[measure]
    return total / shuffles


def _map(rows: list[dict], run_name: str, qids=None) -> float:
    values = [row["value"] for row in rows
              if Path(row["run"]).name == run_name and (qids is None or row["qid"] in qids)]
    assert values, f"no per-topic MAP of {run_name}"
    return sum(values) / len(values)


@pytest.mark.parametrize("name", sorted(COLLECTIONS))
def test_runs_beat_chance(built, name):
    folder, _, _, qrels_file = COLLECTIONS[name]
    _, rows = built(name)
    frame = read_qrels(folder / qrels_file)
    qrels = {}
    for qid, docid, relevance in frame[["qid", "docid", "relevance"]].itertuples(index=False):
        qrels.setdefault(qid, {})[docid] = int(relevance)
    documents = [json.loads(line)["id"] for line in (folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    chance = random_map(qrels, documents)
    assert chance < 0.2
    for method, field in RUNS:
        got = _map(rows, f"{method}.{field}.trec")
        assert got > max(0.4, 4 * chance), f"{name} {method} {field}: MAP {got:.4f}, chance {chance:.4f}"


def test_persian_typed_with_arabic_letters_is_found(built):
    _, rows = built("fa")
    topics = [json.loads(line) for line in (DATA / "minifa" / "topics.jsonl").read_text(encoding="utf-8").splitlines()]
    arabic = {t["id"] for t in topics if "ي" in t["title"] or "ك" in t["title"]}
    assert len(arabic) >= 10  # every other topic (tests/data/make_minilang.py)
    for method, field in RUNS:
        assert _map(rows, f"{method}.{field}.trec", arabic) > 0.8, (method, field)


def test_chinese_model_holds_words_not_sentences(built):
    work, _ = built("zh")
    lines = (work / "model" / "corpus.zh").read_text(encoding="utf-8").splitlines()
    assert lines[0].split()[:4] == ["厨师", "在", "院子", "里"]  # jieba's words, not one token per sentence
