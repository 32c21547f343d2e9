"""Decoding for real, in child processes: n-best lists of a long sentence stay bounded in memory and time, and
Ctrl-C (once or twice, anywhere in decoding, the compiled kernel included) ends ``clirplug translate`` with the
interrupt's one line, exit code 130 and no output half-written (docs/reliability.md, "Decoding")."""

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import OLD

from clirplug.mt.grammar import parse_rule, write_grammar
from clirplug.mt.lexicon import LexicalTable
from clirplug.mt.lm import FALLBACK_DISCOUNTS, estimate, write_arpa

pytestmark = pytest.mark.cli

TIMEOUT = 120  # seconds; each command below takes a few
INTERRUPTED = "clirplug: interrupted; no output was half-written"
# A model where every string has a great many derivations: "wort" translates to "word" by two rules (of other
# features), and so does a pair of them (another segmentation). A 40-word sentence has one string and more
# derivations than memory holds: without a derivation limit a unique 20-best list reads them all (400,000 took
# 2.4 GB and 3 minutes), with cdec's limit of 20 n it stops after 400.
SPURIOUS = """\
[X] ||| wort ||| word ||| EgivenF=0.1 ||| 0-0
[X] ||| wort ||| word ||| EgivenF=0.2 ||| 0-0
[X] ||| wort wort ||| word word ||| EgivenF=0.3 ||| 0-0 1-1
[X] ||| wort [X,1] ||| word [X,1] ||| EgivenF=0.4 ||| 0-0
"""
RSS_BOUND = 1_000_000  # kilobytes: the command takes about 200 MB (mostly numba and numpy), whatever --nbest
# ``python -m clirplug ARGV`` where numba's unpickling (which runs Python code inside each call of the compiled
# cube-pruning kernel: its arguments' types, its kenlm callbacks) sends this process SIGINT at its calls
# number AT (a comma-separated list): Ctrl-C pinned to the moments it used to become a TypeError or a SystemError
SIGNAL_INSIDE_THE_KERNEL = """\
import os, signal, sys
from numba.core import serialize
unpickle, calls, at = serialize._numba_unpickle, [0], {int(n) for n in sys.argv[1].split(",")}
def unpickle_signalled(*args):
    calls[0] += 1
    if calls[0] in at:
        os.kill(os.getpid(), signal.SIGINT)
    return unpickle(*args)
serialize._numba_unpickle = unpickle_signalled
from clirplug.cli import main
sys.argv[1:] = sys.argv[2:]
code = main()
assert calls[0] >= max(at), f"only {calls[0]} calls"
sys.exit(code)
"""


@pytest.fixture(scope="module")
def spurious(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("spurious") / "model"
    folder.mkdir()
    write_grammar([parse_rule(line) for line in SPURIOUS.splitlines()], folder / "grammar.hiero.gz")
    write_arpa(estimate([["word"] * 5], 3, FALLBACK_DISCOUNTS), folder / "lm.arpa")
    LexicalTable.from_entries([("wort", "word", 1.0)]).save(folder / "lex.e_given_f.npz")
    return folder


# Runs argv[2:] and writes its peak resident memory (kB) to argv[1]. A child started by a large process (the test
# process) inherits that process's high-water mark in its own ru_maxrss; one started by this small one does not.
_MEASURER = """
import os, sys
pid = os.posix_spawn(sys.argv[2], sys.argv[2:], os.environ)
_, status, usage = os.wait4(pid, 0)
open(sys.argv[1], "w").write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_measured(argv, cwd: Path) -> tuple[int, str, str, int, float]:
    """Run ``argv``: (exit code, stdout, stderr, peak resident memory in kB, seconds)."""
    out, err, peak = cwd / "child.out", cwd / "child.err", cwd / "child.peak"
    start = time.monotonic()
    with open(out, "w") as stdout, open(err, "w") as stderr:
        proc = subprocess.Popen([sys.executable, "-c", _MEASURER, peak, *argv], cwd=cwd, stdout=stdout, stderr=stderr,
                                start_new_session=True)
    try:
        code = proc.wait(TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        pytest.fail(f"{argv} ran for more than {TIMEOUT} s")
    return code, out.read_text(), err.read_text(), int(peak.read_text()), time.monotonic() - start


@pytest.mark.parametrize("options", [["--nbest", "20"], ["--nbest", "20", "--derivations"]],
                         ids=["distinct strings", "derivations"])
def test_a_20_best_list_of_a_40_word_sentence_is_bounded(spurious, tmp_path, options):
    """``translate --nbest 20`` (distinct strings, the default) used to read every derivation of the sentence
    looking for 20 strings: past 4 GB, then MemoryError. It reads at most 20 n derivations, as cdec does."""
    (tmp_path / "long.txt").write_text(" ".join(["wort"] * 40) + "\n")
    code, out, err, rss, seconds = run_measured(
        [sys.executable, "-m", "clirplug", "translate", "--model", spurious, "--input", "long.txt", "--no-cache",
         "--quiet", *options], tmp_path)
    assert code == 0 and not err, err
    lines = [line.split("\t") for line in out.splitlines()]
    assert {line[4] for line in lines} == {" ".join(["word"] * 40)}  # the one string the model can make
    assert len(lines) == (1 if "--derivations" not in options else 20)
    assert rss < RSS_BOUND, f"{rss} kB"
    assert seconds < TIMEOUT


def test_the_api_and_the_decoder_read_a_bounded_number_of_derivations(spurious):
    from clirplug.api import TranslationModel
    from clirplug.mt.translator import Translator

    start = time.monotonic()
    assert len(TranslationModel(spurious, cache=False).translate(" ".join(["wort"] * 40), nbest=20)) == 1
    assert len(Translator(spurious, cache=False).decoder.translate(["wort"] * 40, 20, unique=True)) == 1
    assert time.monotonic() - start < 30


@pytest.fixture
def long_input(tmp_path, model_template) -> Path:
    """The tiny model and 400 lines of 40 words, known and unknown (each a new LM state): decoding takes a while."""
    import shutil

    shutil.copytree(model_template, tmp_path / "model")
    rng = random.Random(0)
    words = ["dateien", "kopieren", "verschieben", "verzeichnis", "in", "löschen"] + [f"wort{i}" for i in range(200)]
    (tmp_path / "long.txt").write_text("".join(" ".join(rng.choices(words, k=40)) + "\n" for _ in range(400)))
    (tmp_path / "old.txt").write_text(OLD)
    return tmp_path


def check_interrupted(code: int, out: str, err: str, folder: Path) -> None:
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert (code, err.strip()) == (130, INTERRUPTED), err
    assert (folder / "old.txt").read_text() == OLD  # the earlier output as it was
    assert not [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("calls", ["1", "1,2", "80", "80,81"],
                         ids=["passing the arguments", "twice, passing the arguments", "in a kenlm callback",
                              "twice, in a kenlm callback"])
def test_ctrl_c_inside_the_compiled_kernel(long_input, calls):
    """Ctrl-C while numba runs Python code inside the kernel's call: a ``TypeError: can't unbox a Dict as a
    <NULL>`` or a ``SystemError: <class 'kenlm.State'> returned a result with an exception set`` before.
    It takes effect when the sentence's chart is filled."""
    proc = subprocess.run([sys.executable, "-c", SIGNAL_INSIDE_THE_KERNEL, calls, "translate", "--model", "model",
                           "--input", "long.txt", "--output", "old.txt", "--no-cache", "--quiet"],
                          cwd=long_input, capture_output=True, text=True, timeout=TIMEOUT)
    check_interrupted(proc.returncode, proc.stdout, proc.stderr, long_input)


def test_ctrl_c_twice_while_decoding(long_input):
    """Two Ctrl-C a millisecond apart, once the first sentence is decoded: the second one used to cut the first
    one's clean-up short (a ``KeyboardInterrupt`` traceback, or the process killed by SIGINT)."""
    proc = subprocess.Popen([sys.executable, "-m", "clirplug", "translate", "--model", "model", "--input",
                             "long.txt", "--output", "old.txt", "--forest", "forests", "--no-cache", "--quiet"],
                            cwd=long_input, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + TIMEOUT
    while not (long_input / "forests" / "1.0.json.gz").exists():  # written once the first sentence is decoded
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.001)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=TIMEOUT)
    check_interrupted(proc.returncode, out, err, long_input)

