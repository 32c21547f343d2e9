"""Bad input to the command line: one case a row, each refused with one line naming the culprit.

Every row runs ``clirplug ARGV`` in-process on the workspace of ``conftest.py`` after writing
(or, with ``None``, deleting) its files, and :func:`conftest.check_refused` asserts exit code 2,
a single ``clirplug: error:`` line matching the row's pattern (``{w}`` is the workspace), no
traceback, and an unchanged workspace. Commands refuse before opening ``index/``, which only
looks like a Lucene index, so no row starts the JVM.
"""

import gzip
import json
import re
from pathlib import Path

import numpy as np
import pytest
from conftest import FIFO, GRAMMAR, OLD, RUN_A, TOPICS, check_refused, gz, put, run_cli, snapshot, symlink

pytestmark = pytest.mark.cli

TOPIC_LINE = json.dumps(TOPICS[0]) + "\n"
EXPERIMENT = Path(__file__).resolve().parents[2] / "clirplug" / "data" / "demo.yaml"


def translate(source="topics.jsonl", *extra):
    return ["translate", "--model", "{w}/model", "--input", "{w}/" + source, "--output", "{w}/old.txt", "--no-cache",
            *extra]


def search(*extra, topics="topics.jsonl", method="bm25"):
    return ["search", "--method", method, "--index", "{w}/index", "--topics", "{w}/" + topics, "--output",
            "{w}/old.trec", "--quiet", "--model", "{w}/model", *extra]


def evaluate(qrels="qrels.txt", *runs):
    return ["eval", "--qrels", "{w}/" + qrels, *("{w}/" + run for run in runs or ["a.trec"])]


def fuse(*extra, runs=("a.trec", "b.trec")):
    return ["fuse", "--runs", *("{w}/" + run for run in runs), "--output", "{w}/old.trec", *extra]


BOWFD = ["rerank", "--method", "bowfd", "--model", "{w}/model", "--index", "{w}/index", "--topics", "{w}/topics.jsonl",
         "--quiet"]


def bowfd(*extra, candidates="a.trec"):
    return [*BOWFD, "--candidates", "{w}/" + candidates, "--output", "{w}/old.trec", *extra]


def lines(*records):
    return "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records)


def cut(name, keep):
    """A file of the workspace truncated to its first ``keep`` bytes."""
    return lambda workspace: (workspace / name).read_bytes()[:keep]


def foreign_npz(workspace):
    import io

    buffer = io.BytesIO()
    np.savez(buffer, something=np.arange(3))
    return buffer.getvalue()


TOPIC_CASES = [
    ("jsonl invalid JSON", translate("t.jsonl"), {"t.jsonl": TOPIC_LINE + '{"id": "q2", "title": \n'},
     r"t\.jsonl:2: invalid JSON"),
    ("jsonl not an object", translate("t.jsonl"), {"t.jsonl": TOPIC_LINE + '["q2", "x"]\n'},
     r"t\.jsonl:2: expected a JSON object, got list"),
    ("jsonl missing id", translate("t.jsonl"), {"t.jsonl": TOPIC_LINE + lines({"title": "x"})},
     r"t\.jsonl:2: missing field 'id'"),
    ("jsonl id is a list", translate("t.jsonl"), {"t.jsonl": TOPIC_LINE + lines({"id": ["q2"], "title": "x"})},
     r"t\.jsonl:2: field 'id' must be a string, got list"),
    ("jsonl id is a boolean", translate("t.jsonl"), {"t.jsonl": TOPIC_LINE + lines({"id": True, "title": "x"})},
     r"t\.jsonl:2: field 'id' must be a string, got bool"),
    ("jsonl title is a number", translate("t.jsonl"), {"t.jsonl": TOPIC_LINE + lines({"id": "q2", "title": 5})},
     r"t\.jsonl:2: field 'title' must be a string, got int"),
    ("jsonl desc is null", translate("t.jsonl"), {"t.jsonl": TOPIC_LINE + lines({"id": "q2", "title": "x", "desc": None})},
     r"t\.jsonl:2: missing field 'desc'"),
    ("jsonl empty id", translate("t.jsonl"), {"t.jsonl": TOPIC_LINE + lines({"id": "  ", "title": "x"})},
     r"t\.jsonl:2: empty topic id"),
    ("jsonl id with a space", translate("t.jsonl"), {"t.jsonl": TOPIC_LINE + lines({"id": "q 2", "title": "x"})},
     r"t\.jsonl:2: topic id 'q 2' contains white space or control characters"),
    ("jsonl id with a tab", translate("t.jsonl"), {"t.jsonl": TOPIC_LINE + lines({"id": "q\t2", "title": "x"})},
     r"t\.jsonl:2: topic id 'q\\t2' contains white space"),
    ("jsonl id with a newline", translate("t.jsonl"), {"t.jsonl": TOPIC_LINE + lines({"id": "q\n2", "title": "x"})},
     r"t\.jsonl:2: topic id 'q\\n2' contains"),
    ("jsonl id with a control character", translate("t.jsonl"),
     {"t.jsonl": TOPIC_LINE + lines({"id": "q\u00012", "title": "x"})}, r"t\.jsonl:2: topic id 'q\\x012' contains"),
    ("jsonl id with a no-break space", translate("t.jsonl"),
     {"t.jsonl": TOPIC_LINE + lines({"id": "q\u00a02", "title": "x"})}, r"t\.jsonl:2: topic id .* contains white space"),
    ("jsonl duplicate id", translate("t.jsonl"), {"t.jsonl": TOPIC_LINE * 2},
     r"t\.jsonl:2: duplicate topic id 'q1' \(first at line 1\)"),
    ("jsonl empty file", translate("t.jsonl"), {"t.jsonl": ""}, r"t\.jsonl: no topics"),
    ("jsonl blank lines only", translate("t.jsonl"), {"t.jsonl": "\n  \n\n"}, r"t\.jsonl: no topics"),
    ("jsonl not UTF-8", translate("t.jsonl"), {"t.jsonl": b'{"id": "q1", "title": "\xe4"}\n'},
     r"t\.jsonl: cannot read topics"),
    ("missing topics file", translate("absent.jsonl"), {}, r"absent\.jsonl: cannot read topics"),
    ("tsv three fields", translate("t.tsv"), {"t.tsv": "q1\tdateien\n q2\tdateien\tkopieren\n"},
     r"t\.tsv:2: expected 2 tab-separated fields \(qid, text\), got 3"),
    ("tsv empty id", translate("t.tsv"), {"t.tsv": "q1\tdateien\n\tkopieren\n"}, r"t\.tsv:2: empty topic id"),
    ("tsv id with a space", translate("t.tsv"), {"t.tsv": "q 1\tdateien\n"},
     r"t\.tsv:1: topic id 'q 1' contains white space"),
    ("tsv duplicate id", translate("t.tsv"), {"t.tsv": "q1\tdateien\nq1\tkopieren\n"},
     r"t\.tsv:2: duplicate topic id 'q1'"),
    ("trec never closed", translate("t.trec"), {"t.trec": "<top>\n<num> Number: q1\n<title> dateien\n"},
     r"t\.trec:1: <top> is never closed"),
    ("trec without num", translate("t.trec"), {"t.trec": "<top>\n<title> dateien\n</top>\n"},
     r"t\.trec:1: topic without <num>"),
    ("trec id with a space", translate("t.trec"), {"t.trec": "<top>\n<num> Number: q 1\n<title> dateien\n</top>\n"},
     r"t\.trec:1: topic id 'q 1' contains white space"),
    ("trec text outside a topic", translate("t.trec"), {"t.trec": "<top>\n<num> q1\n</top>\nstray\n"},
     r"t\.trec:4: text outside <top>"),
    ("trec second title", translate("t.trec"), {"t.trec": "<top>\n<num> q1\n<title> a\n<title> b\n</top>\n"},
     r"t\.trec:4: second <title>"),
    ("trec close without open", translate("t.trec"), {"t.trec": "</top>\n"}, r"t\.trec:1: </top> without <top>"),
    ("field narr absent", translate("topics.jsonl", "--field", "narr"), {},
     r"topics\.jsonl: no topic has a 'narr' field"),
    ("field desc absent (titles only)", translate("t.jsonl", "--field", "desc"),
     {"t.jsonl": lines({"id": "q1", "title": "dateien"})}, r"t\.jsonl: no topic has a 'desc' field"),
    ("field title absent (descs only)", translate("t.jsonl", "--field", "title"),
     {"t.jsonl": lines({"id": "q1", "desc": "Dateien."})}, r"t\.jsonl: no topic has a 'title' field"),
    ("search: id with a space", search(topics="t.tsv"), {"t.tsv": "q 1\tdateien\n"},
     r"t\.tsv:1: topic id 'q 1' contains white space"),
    ("search: empty topics file", search(topics="t.jsonl"), {"t.jsonl": ""}, r"t\.jsonl: no topics"),
    ("search: field narr absent", search("--field", "narr"), {}, r"topics\.jsonl: no topic has a 'narr' field"),
    ("search dt: field narr absent", search("--field", "narr", method="dt"), {},
     r"topics\.jsonl: no topic has a 'narr' field"),
    ("rerank: field narr absent", bowfd("--field", "narr"), {}, r"topics\.jsonl: no topic has a 'narr' field"),
]

QRELS_CASES = [
    ("three fields", evaluate("q.txt"), {"q.txt": "q1 0 cp.1 1\nq1 0 ls.1\n"}, r"q\.txt:2: expected 4 fields"),
    ("five fields", evaluate("q.txt"), {"q.txt": "q1 0 cp.1 1 x\n"}, r"q\.txt:1: expected 4 fields .*got 5"),
    ("relevance a word", evaluate("q.txt"), {"q.txt": "q1 0 cp.1 yes\n"}, r"q\.txt:1: relevance 'yes' is not an integer"),
    ("relevance a fraction", evaluate("q.txt"), {"q.txt": "q1 0 cp.1 1.5\n"}, r"q\.txt:1: relevance '1\.5'"),
    ("duplicate judgement", evaluate("q.txt"), {"q.txt": "q1 0 cp.1 1\nq1 0 cp.1 0\n"},
     r"q\.txt:2: duplicate judgement for query 'q1', document 'cp\.1' \(first at line 1\)"),
    ("empty file", evaluate("q.txt"), {"q.txt": ""}, r"q\.txt: no judgements"),
    ("blank lines only", evaluate("q.txt"), {"q.txt": "\n \n"}, r"q\.txt: no judgements"),
    ("missing file", evaluate("absent.txt"), {}, r"absent\.txt: cannot read qrels"),
    ("not UTF-8", evaluate("q.txt"), {"q.txt": b"q\xe41 0 cp.1 1\n"}, r"q\.txt: cannot read qrels"),
    ("fuse --tune-on empty", fuse("--tune-on", "{w}/q.txt"), {"q.txt": ""}, r"q\.txt: no judgements"),
    ("fuse --tune-on of other topics", fuse("--tune-on", "{w}/q.txt"), {"q.txt": "x1 0 cp.1 1\nx2 0 mv.1 1\n"},
     r"a\.trec: no topic in common with the tuning qrels: kappa cannot be tuned"),
    ("fuse --tune-runs of other topics", fuse("--tune-on", "{w}/qrels.txt", "--tune-runs", "{w}/a.trec", "{w}/x.trec"),
     {"x.trec": "x1 Q0 cp.1 1 1.0 x\n"}, r"x\.trec: no topic in common with the tuning qrels"),
]

RUN_CASES = [
    ("five fields", evaluate("qrels.txt", "r.trec"), {"r.trec": RUN_A + "q2 Q0 ls.1 3 0.5\n"},
     r"r\.trec:5: expected 6 fields 'qid Q0 docid rank score tag', got 5"),
    ("seven fields", evaluate("qrels.txt", "r.trec"), {"r.trec": "q1 Q0 cp.1 1 2.5 a x\n"}, r"r\.trec:1: expected 6 fields"),
    ("rank a word", evaluate("qrels.txt", "r.trec"), {"r.trec": "q1 Q0 cp.1 one 2.5 a\n"},
     r"r\.trec:1: rank 'one' is not an integer"),
    ("rank a fraction", evaluate("qrels.txt", "r.trec"), {"r.trec": "q1 Q0 cp.1 1.0 2.5 a\n"},
     r"r\.trec:1: rank '1\.0' is not an integer"),
    ("score a word", evaluate("qrels.txt", "r.trec"), {"r.trec": "q1 Q0 cp.1 1 high a\n"},
     r"r\.trec:1: score 'high' is not a number"),
    ("score NaN", evaluate("qrels.txt", "r.trec"), {"r.trec": "q1 Q0 cp.1 1 2.5 a\nq1 Q0 ls.1 2 nan a\n"},
     r"r\.trec:2: score 'nan' is not a finite number"),
    ("score inf", evaluate("qrels.txt", "r.trec"), {"r.trec": "q1 Q0 cp.1 1 inf a\n"},
     r"r\.trec:1: score 'inf' is not a finite number"),
    ("score Infinity", evaluate("qrels.txt", "r.trec"), {"r.trec": "q1 Q0 cp.1 1 -Infinity a\n"},
     r"r\.trec:1: score '-Infinity' is not a finite number"),
    ("score overflows", evaluate("qrels.txt", "r.trec"), {"r.trec": "q1 Q0 cp.1 1 1e999 a\n"},
     r"r\.trec:1: score '1e999' is not a finite number"),
    ("fuse: score -inf", fuse(runs=("a.trec", "r.trec")), {"r.trec": "q1 Q0 cp.1 1 2.0 r\nq1 Q0 ls.1 2 -inf r\n"},
     r"r\.trec:2: score '-inf' is not a finite number"),
    ("fuse: score nan", fuse("--method", "combsum", runs=("r.trec", "b.trec")), {"r.trec": "q1 Q0 cp.1 1 nan r\n"},
     r"r\.trec:1: score 'nan' is not a finite number"),
    ("duplicate document", evaluate("qrels.txt", "r.trec"), {"r.trec": "q1 Q0 cp.1 1 2.5 a\nq1 Q0 cp.1 2 1.5 a\n"},
     r"r\.trec:2: document 'cp\.1' listed twice for query 'q1' \(first at line 1\)"),
    ("missing file", evaluate("qrels.txt", "absent.trec"), {}, r"absent\.trec: cannot read run"),
    ("not UTF-8", evaluate("qrels.txt", "r.trec"), {"r.trec": b"q1 Q0 c\xe4 1 2.5 a\n"}, r"r\.trec: cannot read run"),
    ("eval --baseline malformed", evaluate("qrels.txt", "a.trec") + ["--baseline", "{w}/r.trec"],
     {"r.trec": "q1 Q0 cp.1 1\n"}, r"r\.trec:1: expected 6 fields"),
    ("rerank --candidates malformed", bowfd(candidates="r.trec"), {"r.trec": "q1 Q0 cp.1 1 inf a\n"},
     r"r\.trec:1: score 'inf' is not a finite number"),
]

EXTRA_LINE = len(GRAMMAR.splitlines()) + 1  # the line number of a line added after the grammar

GRAMMAR_CASES = [
    ("garbage line", translate(), {"model/grammar.hiero.gz": gz(GRAMMAR + "this is not a rule\n")},
     rf"grammar\.hiero\.gz:{EXTRA_LINE}: expected '\[LHS\] \|\|\| source"),
    ("two fields", translate(), {"model/grammar.hiero.gz": gz(GRAMMAR + "[X] ||| haus ||| house\n")},
     rf"grammar\.hiero\.gz:{EXTRA_LINE}: expected"),
    ("empty target side", translate(), {"model/grammar.hiero.gz": gz(GRAMMAR + "[X] ||| haus |||  ||| E=1 ||| 0-0\n")},
     rf"grammar\.hiero\.gz:{EXTRA_LINE}: empty target side"),
    ("empty source side", translate(), {"model/grammar.hiero.gz": gz(GRAMMAR + "[X] |||  ||| house ||| E=1\n")},
     rf"grammar\.hiero\.gz:{EXTRA_LINE}: empty source side"),
    ("feature value not a number", translate(),
     {"model/grammar.hiero.gz": gz(GRAMMAR + "[X] ||| haus ||| house ||| EgivenF=abc ||| 0-0\n")},
     rf"grammar\.hiero\.gz:{EXTRA_LINE}: bad feature value 'EgivenF=abc'"),
    ("feature without a name", translate(), {"model/grammar.hiero.gz": gz(GRAMMAR + "[X] ||| haus ||| house ||| =1\n")},
     rf"grammar\.hiero\.gz:{EXTRA_LINE}: bad feature '=1'"),
    ("alignment link malformed", translate(),
     {"model/grammar.hiero.gz": gz(GRAMMAR + "[X] ||| haus ||| house ||| E=1 ||| 0-x\n")},
     rf"grammar\.hiero\.gz:{EXTRA_LINE}: bad alignment link '0-x'"),
    ("too many fields", translate(),
     {"model/grammar.hiero.gz": gz(GRAMMAR + "[X] ||| haus ||| house ||| E=1 ||| 0-0 ||| 1 ||| 2\n")},
     rf"grammar\.hiero\.gz:{EXTRA_LINE}: expected at most 5"),
    ("malformed first line", translate(), {"model/grammar.hiero.gz": gz("[X] ||| haus\n" + GRAMMAR)},
     r"grammar\.hiero\.gz:1: expected"),
    ("used rule: nonterminals do not match", translate(),
     {"model/grammar.hiero.gz": gz(GRAMMAR + "[X] ||| dateien [X,1] ||| [X,2] files ||| E=1\n")},
     rf"grammar\.hiero\.gz:{EXTRA_LINE}: target nonterminals \[2\] do not match the source's \[1\]"),
    ("used rule: link outside the rule", translate(),
     {"model/grammar.hiero.gz": gz(GRAMMAR + "[X] ||| kopieren ||| copy ||| E=1 ||| 0-5\n")},
     rf"grammar\.hiero\.gz:{EXTRA_LINE}: alignment link '0-5' is outside the rule"),
    ("truncated gzip", translate(), {"model/grammar.hiero.gz": gz(GRAMMAR)[:8]},
     r"grammar\.hiero\.gz: cannot read the grammar"),
    ("truncated gzip, mid-rule", translate(), {"model/grammar.hiero.gz": gz(GRAMMAR * 20)[:150]},
     r"grammar\.hiero\.gz: cannot read the grammar"),
    ("not UTF-8", translate(),
     {"model/grammar.hiero.gz": gzip.compress("[X] ||| h\xe4us ||| house ||| E=1\n".encode("latin-1"), mtime=0)},
     r"grammar\.hiero\.gz: cannot read the grammar"),
    ("missing grammar", translate(), {"model/grammar.hiero.gz": None}, r"grammar\.hiero\.gz: missing; train the model"),
    ("missing language model", translate(), {"model/lm.arpa": None}, r"lm\.arpa: missing; train the model"),
    ("psq Pr_grammar: garbage line", search("--psq", "lambda=0:1:0", method="psq"),
     {"model/grammar.hiero.gz": gz(GRAMMAR + "garbage\n")}, rf"grammar\.hiero\.gz:{EXTRA_LINE}: expected"),
]


WEIGHT_CASES = [
    ("tuned file: misspelled feature", translate(), {"model/weights.hiero": "LanguageModel 1\nLanguagemodel 0.5\n"},
     r"weights\.hiero:2: unknown feature 'Languagemodel' \(did you mean 'LanguageModel'\?\)"),
    ("--weights: unknown feature", translate("topics.jsonl", "--weights", "{w}/w.txt"), {"w.txt": "# tuned\nFoo 1\n"},
     r"w\.txt:2: unknown feature 'Foo'"),
    ("--weights: value not a number", translate("topics.jsonl", "--weights", "{w}/w.txt"), {"w.txt": "Glue x\n"},
     r"w\.txt:1: weight 'x' is not a number"),
    ("--weights: value infinite", translate("topics.jsonl", "--weights", "{w}/w.txt"), {"w.txt": "Glue inf\n"},
     r"w\.txt:1: weight 'inf' is not finite"),
    ("--weights: three fields", translate("topics.jsonl", "--weights", "{w}/w.txt"), {"w.txt": "Glue 1 2\n"},
     r"w\.txt:1: expected 'name value'"),
    ("--weights: feature twice", translate("topics.jsonl", "--weights", "{w}/w.txt"), {"w.txt": "Glue 1\nGlue 2\n"},
     r"w\.txt:2: feature 'Glue' appears twice"),
    ("--weights: missing file", translate("topics.jsonl", "--weights", "{w}/absent.txt"), {},
     r"absent\.txt: no such weights file"),
    ("bowfd: unknown decoder feature", bowfd("--weights", "{w}/w.txt"), {"w.txt": "IR_default 1.6\nSMT:EgivenFF -0.5\n"},
     r"w\.txt:2: unknown feature 'EgivenFF' \(did you mean 'EgivenF'\?\)"),
    ("bowfd: unknown weight", bowfd("--weights", "{w}/w.txt"), {"w.txt": "IR_default 1.6\nFoo 1\n"},
     r"w\.txt:2: unknown BOW-FD weight 'Foo'"),
    ("bowfd: no IR_default", bowfd("--weights", "{w}/w.txt"), {"w.txt": "SMT:Glue 1\n"},
     r"w\.txt: no IR_default line"),
]

NPZ_CASES = [
    ("lexical table truncated", search("--psq", "lambda=1:0:0", method="psq"),
     {"model/lex.e_given_f.npz": cut("model/lex.e_given_f.npz", 200)},
     r"lex\.e_given_f\.npz: cannot read the lexical table \(.*truncated or not a numpy file\?\)"),
    ("lexical table empty", search(method="psq"), {"model/lex.e_given_f.npz": b""},
     r"lex\.e_given_f\.npz: cannot read the lexical table"),
    ("lexical table is text", search(method="psq"), {"model/lex.e_given_f.npz": "src tgt 0.5\n"},
     r"lex\.e_given_f\.npz: cannot read the lexical table"),
    ("lexical table of other arrays", search(method="psq"), {"model/lex.e_given_f.npz": foreign_npz},
     r"lex\.e_given_f\.npz: not a lexical table"),
    ("boosting model truncated", ["rerank", "--method", "boost", "--model", "{w}/boost.npz", "--topics",
                                  "{w}/topics.jsonl", "--corpus", "{w}/corpus.jsonl", "--output", "{w}/old.trec"],
     {"boost.npz": lambda w: foreign_npz(w)[:100]}, r"boost\.npz: cannot read the boosting model"),
    ("boosting model of other arrays", ["rerank", "--method", "boost", "--model", "{w}/boost.npz", "--topics",
                                        "{w}/topics.jsonl", "--corpus", "{w}/corpus.jsonl", "--output", "{w}/old.trec"],
     {"boost.npz": foreign_npz}, r"boost\.npz: not a clirplug boosting model"),
    ("search boost: model truncated", ["search", "--method", "boost", "--model", "{w}/boost.npz", "--topics",
                                       "{w}/topics.jsonl", "--corpus", "{w}/corpus.jsonl", "--output", "{w}/old.trec"],
     {"boost.npz": lambda w: foreign_npz(w)[:40]}, r"boost\.npz: cannot read the boosting model"),
]

BM25_METHODS = ["bm25", "dt", "psq", "dt-mira"]
OPTION_CASES = [
    *[(f"search {method} --k1 -1", search("--k1", "-1", method=method), {}, r"BM25 k1 must be a finite number >= 0, got -1")
      for method in BM25_METHODS],
    *[(f"search {method} --b 1.5", search("--b", "1.5", method=method), {}, r"BM25 b must lie in \[0, 1\], got 1\.5")
      for method in BM25_METHODS],
    ("search --k1 nan", search("--k1", "nan"), {}, r"--k1: expected a finite number, got nan"),
    ("search --k1 inf", search("--k1", "inf"), {}, r"--k1: expected a finite number, got inf"),
    ("search --b -0.1", search("--b", "-0.1"), {}, r"BM25 b must lie in \[0, 1\], got -0\.1"),
    ("search --b nan", search("--b", "nan"), {}, r"--b: expected a finite number, got nan"),
    ("rerank bowfd --k1 -1", bowfd("--k1", "-1"), {}, r"BM25 k1 must be a finite number >= 0, got -1"),
    ("rerank bowfd --b 2", bowfd("--b", "2"), {}, r"BM25 b must lie in \[0, 1\], got 2"),
    ("train mira --k1 -1", ["train", "mira", "--model", "{w}/model", "--index", "{w}/index", "--topics",
                            "{w}/topics.jsonl", "--qrels", "{w}/qrels.txt", "--output", "{w}/old.json", "--k1", "-1"],
     {}, r"BM25 k1 must be a finite number >= 0, got -1"),
    ("train mira --b 2", ["train", "mira", "--model", "{w}/model", "--index", "{w}/index", "--topics",
                          "{w}/topics.jsonl", "--qrels", "{w}/qrels.txt", "--output", "{w}/old.json", "--b", "2"],
     {}, r"BM25 b must lie in \[0, 1\], got 2"),
    ("train bowfd --k1 -1", ["train", "bowfd", "--model", "{w}/model", "--index", "{w}/index", "--topics",
                             "{w}/topics.jsonl", "--qrels", "{w}/qrels.txt", "--candidates", "{w}/a.trec",
                             "--output", "{w}/old.weights", "--k1", "-1"], {}, r"BM25 k1 must be a finite number >= 0"),
    ("train boost --ray-address without --executor ray",
     ["train", "boost", "--topics", "{w}/topics.jsonl", "--qrels", "{w}/qrels.txt", "--corpus", "{w}/corpus.jsonl",
      "--output", "{w}/boost.npz", "--ray-address", "head:6379"], {}, r"--ray-address needs --executor ray"),
    ("search --hits 0", search("--hits", "0"), {}, r"--hits must be at least 1, got 0"),
    ("fuse --depth 0", fuse("--depth", "0"), {}, r"--depth must be at least 1, got 0"),
    ("fuse --kappa 1.5", fuse("--kappa", "1.5"), {}, r"--kappa must lie in \[0, 1\], got 1\.5"),
    ("fuse --kappa with three runs", fuse("--kappa", "0.5", runs=("a.trec", "b.trec", "a.trec")), {},
     r"--kappa and --tune-on need exactly two runs, got 3"),
    ("fuse --tune-runs without --tune-on", fuse("--tune-runs", "{w}/a.trec", "{w}/b.trec"), {},
     r"--tune-runs needs --tune-on QRELS"),
    ("eval --permutations 0", evaluate() + ["--permutations", "0"], {}, r"--permutations must be at least 1, got 0"),
    ("eval unknown measure", evaluate() + ["--measures", "MAP Bogus@3"], {}, r"unknown measure 'Bogus@3'"),
    ("translate --nbest 0", translate("topics.jsonl", "--nbest", "0"), {}, r"--nbest must be at least 1, got 0"),
    ("rerank --depth 0", bowfd("--depth", "0"), {}, r"--depth must be at least 1, got 0"),
    ("search --psq unknown option", search("--psq", "lamda=1:0:0", method="psq"), {}, r"--psq: unknown option 'lamda'"),
]

# Commands that write a file the user names, with the option naming it; "-" is standard output for the
# options of STDOUT_OPTIONS. Every output is checked before any input is read: the workspace's index only
# looks like one, and train weights would decode with the model before writing.
WRITERS = {
    "search": (["search", "--index", "{w}/index", "--topics", "{w}/topics.jsonl"], "--output"),
    "fuse": (["fuse", "--runs", "{w}/a.trec", "{w}/b.trec"], "--output"),
    "translate": (["translate", "--model", "{w}/model", "--input", "{w}/topics.jsonl"], "--output"),
    "rerank": ([*BOWFD, "--candidates", "{w}/a.trec"], "--output"),
    "rerank --explain": (bowfd(), "--explain"),
    "train lm": (["train", "lm", "--text", "{w}/text.en"], "--output"),
    "train grammar": (["train", "grammar", "--kind", "hiero", "--model", "{w}/model"], "--output"),
    "train weights": (["train", "weights", "--model", "{w}/model", "--src", "{w}/text.en", "--tgt", "{w}/text.en"],
                      "--output"),
    "train boost": (["train", "boost", "--topics", "{w}/topics.jsonl", "--qrels", "{w}/qrels.txt", "--corpus",
                     "{w}/corpus.jsonl"], "--output"),
    "train bowfd": (["train", "bowfd", "--model", "{w}/model", "--index", "{w}/index", "--topics", "{w}/topics.jsonl",
                     "--qrels", "{w}/qrels.txt", "--candidates", "{w}/a.trec"], "--output"),
    "train mira": (["train", "mira", "--model", "{w}/model", "--index", "{w}/index", "--topics", "{w}/topics.jsonl",
                    "--qrels", "{w}/qrels.txt"], "--output"),
    "train mira --searches": (["train", "mira", "--model", "{w}/model", "--index", "{w}/index", "--topics",
                               "{w}/topics.jsonl", "--qrels", "{w}/qrels.txt", "--output", "{w}/old.json"], "--searches"),
}
STDOUT_OPTIONS = {"search", "fuse", "translate", "rerank"}
NOT_REGULAR = r"which writing would replace; name a regular file"
TARGETS = [
    ("an existing folder", "{w}/out", {}, r"{option} {w}/out: is a folder; name the file to write"),
    ("the working folder", ".", {}, r"{option} \.: is a folder"),
    ("a folder path", "{w}/new/", {}, r"{option} {w}/new/: is a folder"),
    ("a file under a file", "{w}/old.txt/run", {}, r"{option} {w}/old\.txt/run: {w}/old\.txt is not a folder"),
    ("a symbolic link", "{w}/link", {"link": symlink("old.txt")}, rf"{{option}} {{w}}/link: is a symbolic link, {NOT_REGULAR}"),
    ("a FIFO", "{w}/fifo", {"fifo": FIFO}, rf"{{option}} {{w}}/fifo: is a FIFO \(named pipe\), {NOT_REGULAR}"),
    ("standard output", "-", {}, r"{option} -: this option cannot write to standard output; name a file"),
]
# Commands that write into a folder the user names
FOLDER_WRITERS = {
    "train align": (["train", "align", "--src", "{w}/text.en", "--tgt", "{w}/text.en"], "--output"),
    "translate --forest": (translate(), "--forest"),
}
FOLDER_TARGETS = [
    ("a file", "{w}/old.txt", {}, r"{option} {w}/old\.txt: is a file, not a folder"),
    ("a symbolic link to a file", "{w}/link", {"link": symlink("old.txt")},
     r"{option} {w}/link: is a symbolic link, not a folder"),
    ("a FIFO", "{w}/fifo", {"fifo": FIFO}, r"{option} {w}/fifo: is a FIFO \(named pipe\), not a folder"),
    ("a folder under a file", "{w}/old.txt/model", {}, r"{option} {w}/old\.txt/model: {w}/old\.txt is not a folder"),
    ("standard output", "-", {}, r"{option} -: this option cannot write to standard output; name a folder"),
]
TUNED = ["--tune-on", "{w}/qrels.txt"]
PATH_CASES = [
    (f"{command}: {option} {what}", [*argv, option, target], files, message.replace("{option}", option))
    for command, (argv, option) in WRITERS.items() for what, target, files, message in TARGETS
    if not (target == "-" and command in STDOUT_OPTIONS)
] + [
    (f"{command}: {option} {what}", [*argv, option, target], files, message.replace("{option}", option))
    for command, (argv, option) in FOLDER_WRITERS.items() for what, target, files, message in FOLDER_TARGETS
] + [
    ("fuse --curve a folder path", fuse(*TUNED, "--curve", "{w}/new/"), {}, r"--curve {w}/new/: is a folder"),
    ("fuse --curve an existing folder", fuse(*TUNED, "--curve", "{w}/out"), {}, r"--curve {w}/out: is a folder"),
    ("fuse --curve whose .png is a symbolic link", fuse(*TUNED, "--curve", "{w}/c"), {"c.png": symlink("old.txt")},
     rf"--curve {{w}}/c\.png: is a symbolic link, {NOT_REGULAR}"),
    ("fuse --tune-on to standard output without --curve", fuse(*TUNED, "--output", "-"), {},
     r"--tune-on with --output - needs --curve PREFIX"),
    ("search --run-tag with white space", search("--run-tag", "my run"), {},
     r"--run-tag 'my run': a run tag cannot be empty or hold white space"),
    ("search --output whose name, the default run tag, has white space", search("--output", "{w}/my run.trec"), {},
     r"--output {w}/my run\.trec: the run tag taken from its name, 'my run', is empty or holds white space; "
     r"give --run-tag TAG"),
    ("index --index a dangling symbolic link", ["index", "--corpus", "{w}/corpus.jsonl", "--index", "{w}/dangling"],
     {"dangling": symlink("nowhere")}, r"{w}/dangling: already exists; remove it or choose another --index"),
    ("experiment --root naming a file", ["experiment", str(EXPERIMENT), "--root", "{w}/old.txt", "--quiet"], {},
     r"root {w}/old\.txt: is a file, not a folder"),
    ("experiment on a root whose lock is a folder", ["experiment", str(EXPERIMENT), "--root", "{w}/root", "--quiet"],
     {"root/.clirplug.lock/x": ""}, r"{w}/root/\.clirplug\.lock: is a folder, not the root's lock file; remove it"),
] + [
    (f"translate --forest with topic id {tid}", translate("t.jsonl", "--forest", "{w}/forests"),
     {"t.jsonl": lines({"id": tid, "title": "dateien"})},
     rf"{{w}}/t\.jsonl: topic id '{re.escape(tid)}' cannot name a file in --forest {{w}}/forests")
    for tid in ("../../x", "/abs/path", "..")
]

CASES = {"topics": TOPIC_CASES, "qrels": QRELS_CASES, "runs": RUN_CASES, "grammars": GRAMMAR_CASES,
         "weights": WEIGHT_CASES, "npz": NPZ_CASES, "options": OPTION_CASES, "paths": PATH_CASES}


@pytest.mark.parametrize("argv, files, message", [
    pytest.param(argv, files, message, id=f"{kind}: {name}")
    for kind, table in CASES.items() for name, argv, files, message in table
])
def test_refused(workspace, capsys, monkeypatch, argv, files, message):
    monkeypatch.chdir(workspace)
    put(workspace, files)
    check_refused(argv, workspace, capsys, message)


# ---------------------------------------------------------------- accepted, with a warning when something is off

def test_jsonl_topics_need_only_the_searched_field(workspace, capsys):
    put(workspace, {"t.jsonl": lines({"id": "q1", "title": "dateien kopieren"})})
    code, _, err = run_cli(translate("t.jsonl", "--format", "jsonl"), workspace, capsys)
    assert code == 0 and "warning" not in err
    record = json.loads((workspace / "old.txt").read_text())
    assert record["sentences"][0]["nbest"][0]["words"] == ["copy", "files"]


def test_topics_without_the_field_are_named(workspace, capsys):
    put(workspace, {"t.jsonl": lines({"id": "q1", "title": "dateien", "desc": "Dateien kopieren."},
                                     {"id": "q2", "title": "dateien"})})
    code, _, err = run_cli(translate("t.jsonl", "--field", "desc"), workspace, capsys)
    assert code == 0 and "Traceback" not in err
    assert "clirplug: warning: {}: 1 of 2 topics have an empty 'desc' field and get no results (q2)".format(
        workspace / "t.jsonl") in err


def test_a_run_of_other_topics_is_warned_about(workspace, capsys):
    put(workspace, {"other.trec": "x1 Q0 cp.1 1 1.0 o\n"})
    code, out, err = run_cli(evaluate("qrels.txt", "other.trec") + ["--format", "json"], workspace, capsys)
    assert code == 0
    assert f"clirplug: warning: {workspace / 'other.trec'}: no query in common with {workspace / 'qrels.txt'}" in err
    records = json.loads(out, parse_constant=lambda name: pytest.fail(f"bare {name} in the JSON"))
    assert {record["measure"]: record["value"] for record in records}["MAP"] == 0.0


def test_an_existing_output_file_is_replaced_whole(workspace, capsys):
    before = snapshot(workspace)
    code, _, err = run_cli(fuse(), workspace, capsys)
    assert code == 0, err
    after = snapshot(workspace)
    assert after.pop("old.trec") != OLD.encode() and before.pop("old.trec") == OLD.encode()
    assert after == before  # nothing else written, no temporary left


def test_docs_count_the_cases():
    """The table of docs/reliability.md gives the number of rows of each table here."""
    from conftest import documented_counts

    assert {kind: documented_counts()[kind] for kind in CASES} == {kind: len(table) for kind, table in CASES.items()}
