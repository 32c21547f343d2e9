"""`clirplug eval` on a real BM25 run agrees with ir_measures called directly."""

import ir_measures
import pytest

from clirplug.eval.measures import evaluate
from clirplug.io.qrels import read_qrels
from clirplug.io.runs import read_run, write_run
from clirplug.io.topics import read_topics
from clirplug.lucene.search import bm25_search

pytestmark = pytest.mark.jvm


def test_eval_agrees_with_ir_measures_on_manclir_bm25(manclir_de, manclir_index, tmp_path):
    topics = read_topics(manclir_de / "topics.dev.jsonl")
    path = tmp_path / "floor.title.trec"
    write_run(bm25_search(manclir_index, {t.id: t.title for t in topics}, progress=False), path)
    qrels = read_qrels(manclir_de / "qrels.dev.txt")
    ours = evaluate(qrels, {"floor": read_run(path)}, ["AP", "nDCG", "nDCG@10", "P@10", "R@100", "RR"])
    direct = ir_measures.calc_aggregate(
        [ir_measures.parse_measure(m) for m in ["AP", "nDCG", "nDCG@10", "P@10", "R@100", "RR"]],
        ir_measures.read_trec_qrels(str(manclir_de / "qrels.dev.txt")),
        ir_measures.read_trec_run(str(path)),
    )
    for measure, value in direct.items():
        assert ours.set_index("measure").loc[str(measure), "value"] == pytest.approx(value, abs=1e-9), measure
