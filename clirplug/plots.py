"""matplotlib, the ``plots`` extra (``pip install 'clirplug[plots]'``): imported on first use, never at start-up.

The report's figures (:mod:`clirplug.experiment.figures`) and the kappa curves' PNGs
(:func:`clirplug.fusion.tune.plot_curve`) draw with it. An experiment without it writes no figures and no kappa PNG;
``clirplug fuse --tune-on`` without it stops before any work with :data:`MISSING`.
"""

import importlib.util

from clirplug.errors import ClirplugError

MISSING = "plots need matplotlib, which is not installed: pip install 'clirplug[plots]'"


def available() -> bool:
    """Whether matplotlib is installed (found, not imported)."""
    return importlib.util.find_spec("matplotlib") is not None


def pyplot():
    """``matplotlib.pyplot`` on the Agg backend; a one-line :class:`ClirplugError` naming the extra without it."""
    try:
        import matplotlib
    except ImportError as error:
        raise ClirplugError(MISSING) from error
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
