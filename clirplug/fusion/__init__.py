"""Rank fusion: combine several runs of the same topics into one.

Each method is a function ``fuse(runs, weights=None, depth=1000) -> DataFrame`` in its
own module, registered here by name (the CLI's ``--method`` choices). Modules are
imported on first use so that ``clirplug --help`` stays fast. ``learned``
(:mod:`clirplug.fusion.learned`) takes four weights per run, learned by an experiment.
"""

import importlib

# method name -> "module:function"
FUSERS = {
    "borda": "clirplug.fusion.borda:fuse",
    "rrf": "clirplug.fusion.rrf:fuse",
    "combsum": "clirplug.fusion.comb:combsum",
    "combmnz": "clirplug.fusion.comb:combmnz",
    "learned": "clirplug.fusion.learned:fuse",
}
LEARNED = "learned"  # the fuser whose weights are learned (clirplug.fusion.learned), not tuned with kappa


# method name -> ("module:function" giving each run's contribution at weight 1, whether the
# weighted sum is multiplied by the number of runs holding the document): every method is
# such a weighted sum, which lets a kappa grid reuse the contributions (clirplug.fusion.tune)
PARTS = {
    "borda": ("clirplug.fusion.borda:parts", False),
    "rrf": ("clirplug.fusion.rrf:parts", False),
    "combsum": ("clirplug.fusion.comb:parts", False),
    "combmnz": ("clirplug.fusion.comb:parts", True),
}


def get_parts(name):
    """Return ``(parts function, by_hits)`` of the method registered as ``name`` (see ``PARTS``)."""
    from clirplug.errors import ClirplugError

    get_fuser(name)  # the same check and message for an unknown name
    if name not in PARTS:
        raise ClirplugError(f"the {name} fusion has no kappa: its weights are learned (an experiment's fuser: {name})")
    module_name, function = PARTS[name][0].split(":")
    return getattr(importlib.import_module(module_name), function), PARTS[name][1]


def get_fuser(name):
    """Return the fusion function registered as ``name``.

    Raises
    ------
    ClirplugError
        When ``name`` is not registered; the message lists the choices.
    """
    from clirplug.errors import ClirplugError

    if name not in FUSERS:
        raise ClirplugError(f"unknown fusion method {name!r}: choose one of {', '.join(FUSERS)}")
    module_name, function = FUSERS[name].split(":")
    return getattr(importlib.import_module(module_name), function)


def fuse(method, runs, weights=None, depth=1000):
    """Fuse ``runs`` with the method registered as ``method`` (see ``FUSERS``)."""
    return get_fuser(method)(runs, weights=weights, depth=depth)


def check_fusion_weights(method, weights, count):
    """The weights of ``count`` runs for ``method``: one non-negative weight per run (None: the method's default),
    or for ``learned`` four per run of any sign (:func:`clirplug.fusion.learned.check_weights`)."""
    if method == LEARNED:
        return importlib.import_module("clirplug.fusion.learned").check_weights(weights, count)
    return None if weights is None else importlib.import_module("clirplug.fusion._common").check_weights(weights, count, 1.0)
