"""The report's table model, its Markdown and LaTeX renderers, and its figures, on made-up scores."""

import re
import shutil
import subprocess
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from clirplug.experiment import figures
from clirplug.experiment.report import TIE, score_runs
from clirplug.experiment.tables import escape, latex, latex_document, markdown, result_table

pytestmark = pytest.mark.unit

# per-topic AP of three runs on four topics; dt is the baseline
AP = {"dt": [0.5, 0.2, 0.0, 0.7], "psq": [0.6, 0.2 + TIE / 2, 0.0, 0.1], "floor": [0.1, 0.1, 0.0, 0.0]}
# hand-counted against dt: psq wins topic 1, ties topics 2 (within TIE) and 3, loses topic 4;
# floor ties topic 3 only
WTL = {"psq": (1, 2, 1), "floor": (0, 1, 3)}


def _row(run, fld, measure, value, p_value=None, p_holm=None, wtl=(None, None, None)):
    return {"split": "dev", "field": fld, "run": run, "method": run, "measure": measure, "value": value,
            "p_value": p_value, "p_holm": p_holm, "share_of_ceiling": value / 0.8, "p_vs_inputs": None,
            "topics": 4, **dict(zip(("wins", "ties", "losses"), wtl))}


SCORES = [_row(run, fld, measure, float(np.mean(AP[run])) + (0.01 if fld == "desc" else 0),
               None if run == "dt" else 0.01, None if run == "dt" else (0.2 if run == "psq" else 0.03),
               WTL.get(run, (None, None, None)))
          for fld in ("title", "desc") for run in ("floor", "dt", "psq") for measure in ("MAP", "nDCG")]


def _table():
    return result_table("Table 1", "query translation (H&R 2015, Table 1)", SCORES, "dev", ["dt", "psq", "dt"],
                        ["title", "desc"], ["MAP", "nDCG"], "dt")


def test_score_runs_counts_wins_ties_and_losses(monkeypatch):
    """W/T/L of score_runs on per-topic AP, by hand: a difference within TIE is a tie."""
    qrels = pd.DataFrame({"qid": ["1", "2", "3", "4"], "docid": ["a", "b", "c", "d"], "relevance": [1] * 4})
    per_topic = {run: dict(zip(["1", "2", "3", "4"], values)) for run, values in AP.items()}

    def evaluate(qrels, runs, measures, per_query=False):
        rows = [(run, m, qid, per_topic[run][qid]) for run in runs for m in measures for qid in per_topic[run]]
        rows += [(run, m, "all", float(np.mean(AP[run]))) for run in runs for m in measures]
        return pd.DataFrame(rows, columns=["run", "measure", "qid", "value"])

    monkeypatch.setattr("clirplug.eval.measures.evaluate", evaluate)
    monkeypatch.setattr("clirplug.io.qrels.read_qrels", lambda path: qrels)
    monkeypatch.setattr("clirplug.io.runs.read_run", lambda path: path)
    exists = SimpleNamespace(is_file=lambda: True)
    config = SimpleNamespace(splits=["dev"], fields=["title"], measures=["MAP"], baseline="dt",
                             collection=SimpleNamespace(qrels=lambda split: exists))
    stages = [SimpleNamespace(run={"split": "dev", "field": "title", "name": run, "method": run}, outputs=[run],
                              settings={}) for run in AP]
    rows, per_split = score_runs(config, stages)
    counts = {r["run"]: (r["wins"], r["ties"], r["losses"]) for r in rows}
    assert counts == {"dt": (None, None, None), **WTL}
    assert {r["topics"] for r in rows} == {4} and per_split[("dev", "title")].shape == (4, 3)


def test_table_model_puts_fields_side_by_side_with_the_baseline_once():
    table = _table()
    assert table.groups == (("title", 4), ("desc", 4))
    assert table.columns == ("MAP", "nDCG", "W/T/L", "share") * 2
    assert [row[0].text for row in table.rows] == ["floor", "dt (baseline)", "psq"]  # no ceiling scored here
    psq = table.rows[2]
    assert [c.text for c in psq[1:5]] == ["0.2250", "0.2250", "1/2/1", "28.1%"]
    assert psq[1].mark == "*" and table.rows[0][1].mark == "*†"  # Holm keeps floor's, not psq's
    assert table.rows[1][3].text == ""  # the baseline has no W/T/L
    assert "4 topics" in table.caption and "`dev`" in table.caption


def test_markdown_renderer():
    lines = markdown(_table())
    assert lines[0].startswith("### Table 1: query translation")
    assert lines[2] == ("| run | title MAP | title nDCG | title W/T/L | title share | desc MAP | desc nDCG | "
                        "desc W/T/L | desc share |")
    assert lines[6] == ("| psq | 0.2250* | 0.2250* | 1/2/1 | 28.1% | 0.2350* | 0.2350* | 1/2/1 | 29.4% |")
    assert all(line.count("|") == 10 for line in lines[2:-1])


def test_latex_renderer_is_balanced_and_uses_booktabs():
    text = latex(_table())
    assert text.count("{") == text.count("}")
    assert [rule for rule in re.findall(r"\\(toprule|midrule|bottomrule)", text)] == ["toprule", "midrule", "bottomrule"]
    assert r"\multicolumn{4}{c}{title}" in text and r"\cmidrule(lr){2-5}\cmidrule(lr){6-9}" in text
    assert r"psq & 0.2250\textsuperscript{*} & 0.2250\textsuperscript{*} & 1/2/1 & 28.1\% &" in text
    assert r"floor & 0.0500\textsuperscript{*\dag}" in text
    assert "H\\&R" in text and "`" not in text  # escaped, Markdown's code marks dropped
    assert all(line.count("&") == 8 for line in text.splitlines() if line.endswith(r"\\") and "multicolumn" not in line)
    assert escape("a_b 50% {x} #1 $ ~^\\") == r"a\_b 50\% \{x\} \#1 \$ \textasciitilde{}\textasciicircum{}\textbackslash{}"


def test_latex_document_compiles(tmp_path):
    document = latex_document([_table()], "Experiment demo_1: `dev` with † and *")
    assert document.startswith(r"\documentclass{article}") and r"\usepackage{booktabs}" in document
    assert document.rstrip().endswith(r"\end{document}") and document.count("{") == document.count("}")
    if shutil.which("pdflatex") is None:
        pytest.skip("pdflatex is not installed: checked for balance only")
    (tmp_path / "report.tex").write_text(document, encoding="utf-8")
    subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "report.tex"], cwd=tmp_path,
                   check=True, capture_output=True, timeout=120)


@pytest.mark.skipif(not figures.available(), reason="matplotlib is not installed")
def test_figures_are_written_as_png_and_pdf_the_same_each_time(tmp_path):
    curve = pd.DataFrame({"kappa": [0.0, 0.35, 1.0] * 2, "MAP": [0.2, 0.4, 0.3, 0.1, 0.35, 0.3],
                          "method": ["borda"] * 3 + ["rrf"] * 3})

    def draw(folder):
        figures.topic_differences(folder / "d", {"psq": (np.array([0.1, -0.6, 0.0, 0.0]), "psq - dt: W/T/L 1/2/1")},
                                  "MAP per topic")
        figures.recall_curves(folder / "r", {"dev, title": {"dt": [0.1, 0.5], "psq": [0.2, 0.6]}}, [10, 1000])
        figures.kappa_curves(folder / "k", curve, {"kappa": 0.35}, ("dt", "psq"), "dt+psq (title): MAP, kappa = 0.35")
        figures.psq_grid(folder / "p", [("lambda=1:0:0,pL=0", 0.3), ("lambda=0:1:0,pL=0", 0.4),
                                        ("lambda=0:1:0,pL=0.1", 0.35)], "lambda=0:1:0,pL=0", "MAP", "psq (title)")
        return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}

    first = draw(tmp_path / "a")
    assert sorted(first) == [f"{s}.{ext}" for s in "dkpr" for ext in ("pdf", "png")]
    assert all(data.startswith(b"\x89PNG") for name, data in first.items() if name.endswith(".png"))
    assert all(data.startswith(b"%PDF") and b"CreationDate" not in data for name, data in first.items()
               if name.endswith(".pdf"))
    assert draw(tmp_path / "b") == first


def test_titles_are_wrapped_not_cut():
    heading = "dt+psq (desc queries): MAP on train; chosen borda, kappa = 0.35, MAP 0.4123"
    wrapped = figures.title(heading)
    assert "\n" in wrapped and wrapped.replace("\n", " ") == heading and "kappa = 0.35" in wrapped
