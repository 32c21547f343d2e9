"""clirplug's build: its e5 engine (an optional compiled extension) and, in a wheel, Anserini's jar.

The e5 engine (clirplug/e5engine/e5.c) is compiled at install and loaded by clirplug.dense with ctypes. The build
is optional: without a C compiler (or off x86-64 with AVX2 and FMA) clirplug installs without it, and the dense
peer cannot run (clirplug.dense says so in one line). The engine spells out every float operation in a fixed
order, so that its vectors are the same on every processor; the compiler must neither fuse nor reorder them: no
-ffast-math, -ffp-contract=off.

A wheel (``pip wheel``, ``python -m build --wheel``) bundles Anserini's fat jar (Apache-2.0, as Pyserini
redistributes it) in clirplug/lucene/jars/, beside its notice, so that ``pip install clirplug`` needs no pyserini
(whose declared dependencies pull torch). The jar is taken from, in this order: ``$CLIRPLUG_ANSERINI_JAR`` (the jar
or a folder holding it), the pyserini package of the Python running the build (``--no-build-isolation``), the
pyserini of this checkout's ``.venv`` (``make install``). An editable install (``pip install -e .``) bundles
nothing: clirplug then finds the jar in the installed pyserini (clirplug/lucene/_jvm.py).
"""
import glob
import importlib.util
import os
import shutil
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
JAR_GLOB = "anserini-*-fatjar.jar"


def _anserini_jar() -> Path:
    folders = []
    override = os.environ.get("CLIRPLUG_ANSERINI_JAR")
    if override:
        if Path(override).is_file():
            return Path(override)
        folders.append(Path(override))
    spec = importlib.util.find_spec("pyserini")  # found, never imported (pyserini imports its dense stack)
    if spec is not None and spec.submodule_search_locations:
        folders += [Path(p) / "resources" / "jars" for p in spec.submodule_search_locations]
    folders += [Path(p) for p in sorted(glob.glob(str(HERE / ".venv/lib/python*/site-packages/pyserini/resources/jars")))]
    for folder in folders:
        jars = sorted(folder.glob(JAR_GLOB))
        if jars:
            return jars[-1]
    raise SystemExit("clirplug's wheel bundles Anserini's jar, which this build did not find: set CLIRPLUG_ANSERINI_JAR "
                     "to pyserini's resources/jars/anserini-*-fatjar.jar (pip install --no-deps pyserini==1.6.0)")


class BuildPyWithJar(build_py):
    """build_py that also copies Anserini's jar into clirplug/lucene/jars/ of a wheel (not of an editable install)."""

    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        jar = _anserini_jar()
        target = Path(self.build_lib) / "clirplug" / "lucene" / "jars"
        target.mkdir(parents=True, exist_ok=True)
        for old in target.glob(JAR_GLOB):
            old.unlink()
        self.announce(f"bundling {jar}", level=2)
        shutil.copyfile(jar, target / jar.name)


setup(cmdclass={"build_py": BuildPyWithJar}, ext_modules=[Extension(
    "clirplug._e5engine", sources=["clirplug/e5engine/e5.c"],
    depends=["clirplug/e5engine/e5.h"],
    extra_compile_args=["-O3", "-mavx2", "-mfma", "-ffp-contract=off", "-fno-math-errno", "-fopenmp"],
    extra_link_args=["-fopenmp"], libraries=["m"], optional=True)])
