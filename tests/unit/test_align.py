"""Word alignment: EM against a brute-force reference, the diagonal prior, symmetrization, lexicons, CLI."""

import math
from collections import defaultdict

import numpy as np
import pytest
from scipy.special import digamma

from clirplug.cli import main
from clirplug.errors import ClirplugError
from clirplug.mt import align as align_module
from clirplug.mt.align import NULL, AlignConfig, _diagonal_expectation, train
from clirplug.mt.lexicon import LexicalTable
from clirplug.mt.symmetrize import (
    format_pharaoh,
    grow,
    grow_diag,
    grow_diag_final,
    grow_diag_final_and,
    intersection,
    parse_pharaoh,
    symmetrize,
    union,
)

pytestmark = pytest.mark.cli

# ---------------------------------------------------------------- fixtures

SRC = [
    "das haus ist klein".split(),
    "das haus".split(),
    "das buch ist klein".split(),
    "ein buch".split(),
    "das buch ist ein kleines buch".split(),
    "haus".split(),
]
TGT = [
    "the house is small".split(),
    "the house".split(),
    "the book is small".split(),
    "a book".split(),
    "the book is a small book".split(),
    "the house".split(),
]


def brute_force(src, tgt, config):
    """Pure-Python EM, one word at a time, written from Dyer et al. (2013) eq. 2-3."""
    tgt_words = {e for sentence in tgt for e in sentence}
    theta = {(f, e): 1.0 / len(tgt_words) for s, t in zip(src, tgt) for f in [NULL, *s] for e in t}
    tension = config.tension
    tokens = sum(len(t) for t in tgt)

    def prior(i, m, n, diagonal):
        if not diagonal:
            return [1.0 / (n + 1)] * (n + 1)
        unnormalized = [math.exp(tension * -abs(i / m - j / n)) for j in range(1, n + 1)]
        z = sum(unnormalized)
        return [config.p0] + [(1 - config.p0) * u / z for u in unnormalized]

    schedule = [False] * config.model1_iterations + [True] * config.iterations
    model1 = None
    for number, diagonal in enumerate(schedule, start=1):
        counts = defaultdict(float)
        feature, weights = 0.0, []
        for s, t in zip(src, tgt):
            n, m = len(s), len(t)
            for i, e in enumerate(t, start=1):
                p = prior(i, m, n, diagonal)
                joint = [theta[(f, e)] * p[j] for j, f in enumerate([NULL, *s])]
                total = sum(joint)
                for j, f in enumerate([NULL, *s]):
                    counts[(f, e)] += joint[j] / total
                    if j > 0 and diagonal:
                        feature += joint[j] / total * -abs(i / m - j / n)
                weights.append((i, m, n, 1 - joint[0] / total))
        if diagonal and config.optimize_tension:
            for _ in range(8):
                model_feature = 0.0
                for i, m, n, weight in weights:
                    hs = [-abs(i / m - j / n) for j in range(1, n + 1)]
                    us = [math.exp(tension * h) for h in hs]
                    model_feature += weight * sum(u * h for u, h in zip(us, hs)) / sum(us)
                tension += 20.0 * (feature - model_feature) / tokens
                tension = min(max(tension, 0.1), 14.0)
        totals, sizes = defaultdict(float), defaultdict(int)
        for (f, _), c in counts.items():
            totals[f] += c
            sizes[f] += 1
        if config.variational_bayes:
            a = config.alpha
            theta = {k: math.exp(digamma(c + a) - digamma(totals[k[0]] + a * sizes[k[0]])) for k, c in counts.items()}
        else:
            theta = {k: c / totals[k[0]] for k, c in counts.items()}
        if number == config.model1_iterations:
            model1 = dict(theta)
    alignments = []
    diagonal = config.iterations > 0
    for s, t in zip(src, tgt):
        links = []
        for i, e in enumerate(t, start=1):
            p = prior(i, len(t), len(s), diagonal)
            joint = [theta[(f, e)] * p[j] for j, f in enumerate([NULL, *s])]
            best = max(range(len(joint)), key=lambda j: (joint[j], -j))  # ties: lowest j
            if best > 0:
                links.append((best - 1, i - 1))
        alignments.append(sorted(links))
    return model1, theta, tension, alignments


def as_dict(model):
    return {(model.src_vocab[f], model.tgt_vocab[e]): p for f, e, p in zip(model.pair_src, model.pair_tgt, model.theta)}


CONFIGS = [
    AlignConfig(model1_iterations=3, iterations=0, variational_bayes=False),
    AlignConfig(model1_iterations=2, iterations=3, variational_bayes=False, optimize_tension=False),
    AlignConfig(model1_iterations=2, iterations=3, variational_bayes=False),
    AlignConfig(model1_iterations=2, iterations=3),  # fast_align -d -o -v
    AlignConfig(model1_iterations=0, iterations=2, p0=0.2, tension=1.5, alpha=0.5),
]

# ---------------------------------------------------------------- EM


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("chunk", [align_module.CHUNK_LINKS, 7])
def test_em_matches_brute_force(config, chunk, monkeypatch):
    monkeypatch.setattr(align_module, "CHUNK_LINKS", chunk)  # 7 forces one chunk per pair
    result = train(SRC, TGT, config)
    model1, theta, tension, alignments = brute_force(SRC, TGT, config)
    got = as_dict(result.model)
    assert got.keys() == theta.keys()
    for key, value in theta.items():
        assert got[key] == pytest.approx(value, abs=1e-9, rel=1e-9)
    assert result.model.tension == pytest.approx(tension, abs=1e-9)
    if model1 is not None:
        got1 = as_dict(result.model1)
        for key, value in model1.items():
            assert got1[key] == pytest.approx(value, abs=1e-9, rel=1e-9)
    assert result.alignments == alignments


def test_em_learns_the_obvious_translations():
    result = train(SRC, TGT, AlignConfig(model1_iterations=5, iterations=5, variational_bayes=False))
    table = result.model.table()
    for f, e in [("haus", "house"), ("buch", "book"), ("das", "the"), ("klein", "small")]:
        assert next(iter(table.translations(f))) == e
    assert result.alignments[0] == [(0, 0), (1, 1), (2, 2), (3, 3)]
    likelihoods = [h.log_likelihood for h in result.history]
    model1_part = likelihoods[:5]
    assert all(b >= a - 1e-9 for a, b in zip(model1_part, model1_part[1:]))  # EM never decreases it


def test_diagonal_prior_normalizes_and_closed_form_expectation():
    rng = np.random.default_rng(0)
    for _ in range(200):
        m, n = rng.integers(1, 60, size=2)
        i = int(rng.integers(1, m + 1))
        tension = float(rng.uniform(0.1, 14))
        p0 = 0.08
        h = np.array([-abs(i / m - j / n) for j in range(1, n + 1)])
        prior = np.concatenate(([p0], (1 - p0) * np.exp(tension * h) / np.exp(tension * h).sum()))
        assert prior.sum() == pytest.approx(1.0, abs=1e-12)
        expected = float((np.exp(tension * h) * h).sum() / np.exp(tension * h).sum())
        closed = _diagonal_expectation(np.array([i / m]), np.array([float(n)]), tension)[0]
        assert closed == pytest.approx(expected, abs=1e-10)


def test_prior_used_in_training_normalizes():
    direction = align_module._Direction(SRC, TGT, AlignConfig())
    for chunk in direction.chunks:
        prior, _ = direction._prior(chunk, True, 3.7)
        np.testing.assert_allclose(np.add.reduceat(prior, chunk.starts), 1.0, atol=1e-12)


def test_empty_sides_and_bad_input():
    result = train([["a"], [], ["a", "b"]], [["x"], ["y"], []], AlignConfig(model1_iterations=1, iterations=1))
    assert result.alignments == [[(0, 0)], [], []]
    with pytest.raises(ClirplugError, match="2 source sentences but 1"):
        train([["a"], ["b"]], [["x"]])
    with pytest.raises(ClirplugError, match="no sentence pair has words"):
        train([["a"], []], [[], ["x"]])
    with pytest.raises(ClirplugError, match="p0"):
        AlignConfig(p0=1.5)


# ---------------------------------------------------------------- symmetrization
# Worked by hand (source, target) links; see the comments for the reasoning.

FWD = [(0, 0), (3, 2), (4, 3)]  # p(e|f): targets 0, 2, 3 choose sources 0, 3, 4
REV = [(0, 0), (3, 3), (1, 4), (2, 3)]  # p(f|e): sources 0, 3, 1, 2 choose targets 0, 3, 4, 3


def test_intersection_and_union_by_hand():
    assert intersection(FWD, REV) == [(0, 0)]
    assert union(FWD, REV) == [(0, 0), (1, 4), (2, 3), (3, 2), (3, 3), (4, 3)]


def test_grow_diag_final_and_by_hand():
    # Intersection {0-0}; no union point neighbours it, so grow-diag adds nothing.
    assert grow_diag(FWD, REV) == [(0, 0)]
    # Final, fwd-only points first, in (target, source) order: 3-2 (t2, s3 both free: add),
    # 4-3 (t3, s4 free: add); then rev-only: 2-3 (t3 now taken, s2 free: only "final"
    # adds it), 3-3 (both taken: never), 1-4 (both free: add).
    assert grow_diag_final_and(FWD, REV) == [(0, 0), (1, 4), (3, 2), (4, 3)]
    assert grow_diag_final(FWD, REV) == [(0, 0), (1, 4), (2, 3), (3, 2), (4, 3)]


def test_final_step_prefers_forward_only_points():
    # fwd-only 1-0 and rev-only 0-0 compete for target 0; symal tries fwd-only first.
    assert grow_diag_final_and([(1, 0)], [(0, 0)]) == [(1, 0)]


def test_grow_sweeps_by_hand():
    # (target, source) points: inverse = fwd = {0-0, 1-2, 2-1, 3-3} (target 0 <- source 0 ...),
    # direct = rev = {0-0, 1-1, 1-2, 2-3}; intersection {(0,0), (1,2)}. Sweep: (0,0) adds
    # diagonal (1,1) (source 1 free); (1,1) adds (2,1) (target 2 free); (1,2) adds (2,3)
    # (source 3 free); (2,3) adds (3,3) (target 3 free). In (source, target) orientation:
    fwd = [(0, 0), (2, 1), (1, 2), (3, 3)]
    rev = [(0, 0), (1, 1), (2, 1), (3, 2)]
    assert grow_diag(fwd, rev) == [(0, 0), (1, 1), (1, 2), (2, 1), (3, 2), (3, 3)]
    # Square neighbours only, in (target, source): sweep 1 visits (0,0) (nothing), then (1,2)
    # adds (1,1) (source 1 free), which sorts before (1,2) and waits for sweep 2, where (1,1)
    # adds (2,1) (target 2 free). (2,3) and (3,3) touch no chosen point squarely. So:
    assert grow(fwd, rev, diagonal=False, final=False) == [(0, 0), (1, 1), (1, 2), (2, 1)]


def test_symmetrize_corpus_and_pharaoh():
    assert symmetrize([FWD, []], [REV, [(0, 0)]], "intersection") == [[(0, 0)], []]
    assert format_pharaoh([(0, 0), (3, 2)]) == "0-0 3-2"
    assert parse_pharaoh("0-0 3-2\n") == [(0, 0), (3, 2)]
    with pytest.raises(ClirplugError, match="f.txt:3"):
        parse_pharaoh("0-0 x-1", "f.txt:3")
    with pytest.raises(ClirplugError, match="unknown method"):
        symmetrize([], [], "grow-fancy")


# ---------------------------------------------------------------- lexical tables


def test_lexical_table_text_binary_and_moses(tmp_path):
    table = LexicalTable.from_entries([("haus", "house", 0.75), ("haus", "home", 0.25), ("NULL", "the", 1.0)])
    assert table.translations("haus") == {"house": 0.75, "home": 0.25}
    assert table.prob("haus", "home") == 0.25 and table.prob("haus", "the") == 0.0
    assert table.prob("boot", "boat") == 0.0 and table.translations("boot") == {}
    assert "haus" in table and "boot" not in table and len(table) == 3
    table.save_text(tmp_path / "lex.txt")
    assert (tmp_path / "lex.txt").read_text() == "NULL the 1\nhaus house 0.75\nhaus home 0.25\n"
    written = [(src, tgt, float(prob)) for src, tgt, prob in map(str.split, (tmp_path / "lex.txt").read_text().splitlines())]
    assert written == list(table.entries())
    table.save(tmp_path / "lex.npz")
    binary = LexicalTable.load(tmp_path / "lex.npz")
    assert binary.translations("haus") == table.translations("haus") and len(binary) == 3
    (tmp_path / "lex.e2f").write_text("house haus 0.75\nhome haus 0.25\n")  # Moses: e f p(e|f)
    assert LexicalTable.load_moses(tmp_path / "lex.e2f").translations("haus") == {"house": 0.75, "home": 0.25}


def test_lexical_table_errors(tmp_path):
    (tmp_path / "bad.e2f").write_text("house haus 0.5\nhouse haus\n")
    with pytest.raises(ClirplugError, match="bad.e2f:2"):
        LexicalTable.load_moses(tmp_path / "bad.e2f")
    (tmp_path / "dup.e2f").write_text("house haus 0.5\nhouse haus 0.5\n")
    with pytest.raises(ClirplugError, match="twice"):
        LexicalTable.load_moses(tmp_path / "dup.e2f")
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(ClirplugError, match="junk.npz"):
        LexicalTable.load(tmp_path / "junk.npz")


def test_model_table_rows_sum_to_one():
    result = train(SRC, TGT, AlignConfig(model1_iterations=2, iterations=2))  # VB rows sum < 1
    matrix = result.model.table().matrix
    np.testing.assert_allclose(np.asarray(matrix.sum(axis=1)).ravel(), 1.0, atol=1e-12)
    pruned = result.model.table(min_prob=0.1)
    assert pruned.matrix.data.min() >= 0.1


# ---------------------------------------------------------------- CLI


def test_cli_train_align_writes_the_model_folder_and_resumes(tmp_path, capsys):
    (tmp_path / "b.de").write_text("".join(" ".join(s).capitalize() + ".\n" for s in SRC))
    (tmp_path / "b.en").write_text("".join(" ".join(t).capitalize() + ".\n" for t in TGT))
    (tmp_path / "d.tsv").write_text("Buch\tbook\nBuch\tvolume\nHaus\thouse\nHaus\thome\nHaus\tthe house\nHaus\tthe\n")
    out = tmp_path / "model"
    argv = ["train", "align", "--src", str(tmp_path / "b.de"), "--tgt", str(tmp_path / "b.en"),
            "--out", str(out), "--dictionary", str(tmp_path / "d.tsv"), "--dictionary-max", "2",
            "--model1-iterations", "3", "--iterations", "2"]
    assert main(argv) == 0
    assert (out / "corpus.de").read_text().split("\n")[0] == "das haus ist klein ."
    # "volume" and "home" are not in the English bitext; "the" would be a third kept Haus entry
    assert (out / "dict.de").read_text() == "buch\nhaus\nhaus\n"
    assert (out / "dict.en").read_text() == "book\nhouse\nthe house\n"
    lines = (out / "align.de-en").read_text().split("\n")
    assert len(lines) == len(SRC) + 1 and lines[0] == "0-0 1-1 2-2 3-3 4-4"
    assert len((out / "align.fwd").read_text().split("\n")) == len(SRC) + 1
    forward = LexicalTable.load(out / "lex.e_given_f.npz")
    assert next(iter(forward.translations("haus"))) == "house"
    backward = LexicalTable.load(out / "lex.f_given_e.npz")
    assert next(iter(backward.translations("book"))) == "buch"
    assert (out / "lex.f_given_e.txt").read_text() == "".join(f"{s} {t} {p:.8g}\n" for s, t, p in backward.entries())
    assert (out / "compound.de.tsv").is_file()
    capsys.readouterr()

    assert main(argv) == 0  # everything up to date
    skipped = capsys.readouterr().err
    for stage in ("compound", "preprocess", "align-fwd", "align-rev", "symmetrize"):
        assert f"{stage}: up to date" in skipped

    assert main([*argv[:-1], "3"]) == 0  # more IBM2 iterations: only alignment stages rerun
    rerun = capsys.readouterr().err
    assert "preprocess: up to date" in rerun and "align-fwd: up to date" not in rerun


def test_cli_reports_user_errors(tmp_path, capsys):
    (tmp_path / "a").write_text("x\ny\n")
    (tmp_path / "b").write_text("x\n")
    assert main(["train", "align", "--src", str(tmp_path / "a"), "--tgt", str(tmp_path / "b"),
                 "--out", str(tmp_path / "m")]) == 2
    assert "2 lines but" in capsys.readouterr().err


@pytest.mark.manclir
def test_manclir_first_lines_learn_man_page_vocabulary(manclir_de):
    from clirplug.mt.preprocess import preprocess

    with open(manclir_de / "bitext.train.de", encoding="utf-8") as de, \
            open(manclir_de / "bitext.train.en", encoding="utf-8") as en:
        pairs = [(preprocess(f, "de"), preprocess(e, "en")) for f, e, _ in zip(de, en, range(1000))]
    result = train([f for f, _ in pairs], [e for _, e in pairs], AlignConfig(model1_iterations=3, iterations=2))
    table = result.model.table()
    for german, english in [("datei", "file"), ("verzeichnis", "directory"), ("befehl", "command")]:
        assert next(iter(table.translations(german))) == english
    assert 4.0 < result.model.tension <= 14.0  # the bitext is close to monotone: the tension grows
