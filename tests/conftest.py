"""Shared fixtures (paths to the conformance data and to the manclir-de collection) and the test tiers.

Every test module names its tier in ``pytestmark`` (docs/testing.md): ``unit`` (pure Python),
``cli`` (runs clirplug commands) or ``jvm`` (starts the JVM). The suite runs them in that order, and
a ``unit`` or ``cli`` test that starts the JVM fails.
"""

import signal
import sys
import warnings
from pathlib import Path

import pytest

import clirplug  # noqa: F401, I001 - first, so that numpy's AVX-512 paths are off in the tests too (clirplug/__init__.py)

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


def _shared_folder(*parts):
    path = SHARED.joinpath(*parts)
    if not path.is_dir():
        pytest.skip(f"{path} is absent: this test needs the shared data beside the repository")
    return path


@pytest.fixture(scope="session", autouse=True)
def ctrl_c_reaches_children():
    """A shell without job control starts background commands with SIGINT ignored, which children inherit (and
    Python then installs no KeyboardInterrupt handler): the tests that press Ctrl-C on a child need it back."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def manclir_de() -> Path:
    """The manclir-de collection folder (skips with a message where it is absent)."""
    return _shared_folder("data", "manclir-de")


@pytest.fixture(scope="session")
def trec_eval_fixtures() -> Path:
    """trec_eval's own test fixtures with its expected outputs."""
    return _shared_folder("conformance", "trec_eval")


@pytest.fixture(scope="session")
def cdec_clef06() -> Path:
    """Real cdec per-query grammars and n-best lists (CLEF 2006 en-fr)."""
    return _shared_folder("conformance", "cdec-clef06-en-fr")


@pytest.fixture(scope="module")
def ray_cluster():
    """A Ray instance on this machine with 2 CPUs and a small object store, stopped after the module.

    Its workers import the tests' own modules (and this checkout's clirplug) through ``PYTHONPATH``.
    """
    import os

    import ray

    from clirplug.executor import native_signal_handlers_kept

    paths = [str(REPO), str(REPO / "tests" / "unit"), str(REPO / "tests" / "integration"), os.environ.get("PYTHONPATH", "")]
    with native_signal_handlers_kept():  # the session's JVM keeps its own handlers
        ray.init(num_cpus=2, object_store_memory=200 * 1024 * 1024, include_dashboard=False, log_to_driver=False,
                 runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(filter(None, paths))}})
    yield ray
    with native_signal_handlers_kept():
        ray.shutdown()


# ----------------------------------------------------------------------------- tiers

TIERS = ("unit", "cli", "jvm")  # fastest first, the order the suite runs them in
_JVM_BEFORE = pytest.StashKey[bool]()


def tier(item) -> str | None:
    """The heaviest tier among a test's markers (its module's ``pytestmark`` and its own)."""
    names = {mark.name for mark in item.iter_markers()}.intersection(TIERS)
    return max(names, key=TIERS.index) if names else None


def _jvm_started() -> bool:
    return "jnius" in sys.modules  # clirplug.lucene._jvm imports jnius when it starts the JVM, and only then


def pytest_collection_modifyitems(items):
    # a stable sort keeps each module's tests together and in order; running every unit and cli test
    # before the first jvm test is also what lets the check below see which test starts the JVM
    items.sort(key=lambda item: TIERS.index(tier(item) or "unit"))


# ----------------------------------------------------------------------------- workers (make test: pytest -n auto)

# The modules whose tests use the session's demo run (tests/integration/conftest.py's ``demo`` fixture, over a
# minute): under pytest-xdist one worker runs them all, so that the demo runs once; checked by the fixture below.
DEMO_MODULES = frozenset(f"tests/integration/{name}.py" for name in (
    "test_api_demo", "test_demo_map", "test_experiment", "test_experiment_ray", "test_serve", "test_serve_browser",
    "test_systems"))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """With ``-n`` (``--dist load``, the default): whole modules to each worker (their module fixtures set up
    once), and the demo's modules to one worker."""
    from xdist.scheduler import LoadScopeScheduling

    if config.getoption("dist") != "load":
        return None

    class ModuleScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::")[0]
            return "demo" if module in DEMO_MODULES else module

    return ModuleScheduling(config, log)


@pytest.fixture(autouse=True)
def _demo_modules_are_listed(request):
    """Fail a test of a module outside :data:`DEMO_MODULES` that uses the demo run (it would run it again)."""
    if "demo" in request.fixturenames and request.path.parent.name == "integration":
        module = request.path.relative_to(REPO).as_posix()
        assert module in DEMO_MODULES, f"{module} uses the demo run: add it to DEMO_MODULES in tests/conftest.py"


def pytest_collection_finish(session):
    if _jvm_started():
        warnings.warn(pytest.PytestWarning("the JVM started while the tests were collected: "
                                           "no unit or cli test can be caught starting it"))


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_setup(item):
    item.stash[_JVM_BEFORE] = _jvm_started()  # before any fixture of the test is set up
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Fail the setup, call or teardown of a non-jvm test during which the JVM started."""
    report = yield
    if tier(item) != "jvm" and not item.stash.get(_JVM_BEFORE, True) and _jvm_started():
        item.stash[_JVM_BEFORE] = True  # one failure per test
        message = (f"this test started the JVM but its tier is {tier(item) or 'missing'}: "
                   "its module needs `pytestmark = pytest.mark.jvm` (docs/testing.md)")
        if report.failed:
            report.sections.append(("tier", message))
        else:
            report.outcome, report.longrepr = "failed", message
    return report


# ----------------------------------------------------------------------------- ir_datasets

# A tiny hc4/fa in ir_datasets' own layout (its files under $IR_DATASETS_HOME/hc4, named as in its
# etc/downloads.json): ir_datasets reads a file that exists without downloading or checking it.
HC4_DOCS = [
    {"id": "fa-1", "title": "زلزله در ایران", "text": "یک زلزله شدید در شهر کرمان رخ داد"},
    {"id": "fa-2", "title": "انتخابات", "text": "مردم در انتخابات ریاست جمهوری رای دادند"},
    {"id": "fa-3", "title": "قیمت نفت", "text": "قیمت نفت در بازار جهانی افزایش یافت"},
    {"id": "fa-4", "title": "فوتبال", "text": "تیم ملی فوتبال در جام جهانی بازی کرد"},
    {"id": "fa-5", "title": "زلزله ژاپن", "text": "زلزله ای در ژاپن خسارت زیادی به بار آورد و زلزله ادامه داشت"},
]
# topic id -> (English title, description), Persian human translation, Persian machine translation
HC4_TOPICS = {
    "1001": (("Iran earthquake", "Reports on earthquakes in Iran"), ("زلزله ایران", "گزارش زلزله در ایران"),
             ("زمین لرزه ایران", "گزارش های زمین لرزه در ایران")),
    "1002": (("oil price", "How did the price of oil change?"), ("قیمت نفت", "قیمت نفت چگونه تغییر کرد"),
             ("بهای نفت", "بهای نفت چگونه تغییر کرد")),
}
HC4_QRELS = "1001 0 fa-1 3\n1001 0 fa-5 1\n1001 0 fa-2 0\n1002 0 fa-3 3\n1002 0 fa-4 0\n"


def hc4_topic_record(topic_id, english, human, machine) -> dict:
    """One line of an HC4 topic file (the fields ir_datasets' ExctractedCCQueries reads)."""
    def entry(lang, source, title_desc):
        return {"lang": lang, "source": source, "topic_title": title_desc[0], "topic_description": title_desc[1]}

    return {"topic_id": topic_id, "languages_with_qrels": ["fas"],
            "topics": [entry("eng", "original", english), entry("fas", "human translation", human),
                       entry("fas", "Google Translate", machine)],
            "narratives": {"fas": {"very_valuable": f"narrative of {topic_id}", "not_valuable": "other news"}},
            "report": {"text": "report", "url": "https://example.org", "date": "2021-01-01"}}


@pytest.fixture(scope="session")
def irds_home(tmp_path_factory) -> Path:
    """An IR_DATASETS_HOME holding hc4/fa's documents, hc4/fa/dev's topics and qrels."""
    import json

    home = tmp_path_factory.mktemp("ir_datasets")
    hc4 = home / "hc4"
    (hc4 / "fas").mkdir(parents=True)
    docs = [{**doc, "url": f"https://example.org/{doc['id']}", "time": "2021-01-01", "cc_file": "cc"} for doc in HC4_DOCS]
    (hc4 / "fas" / "hc4_docs.jsonl").write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs),
                                                encoding="utf-8")
    (hc4 / "dev.topics.v1-0.jsonl").write_text(
        "".join(json.dumps(hc4_topic_record(qid, *texts), ensure_ascii=False) + "\n" for qid, texts in HC4_TOPICS.items()),
        encoding="utf-8")
    (hc4 / "fas" / "dev.qrels.v1-0.txt").write_text(HC4_QRELS, encoding="utf-8")
    return home
