"""Experiments: every method on a collection, cached stages, one report (``clirplug experiment``).

``config`` reads and checks the YAML config, ``stages`` holds the stage kinds and the
methods a config can name, ``runner`` runs the plan with caching and resume, ``report``
writes the tables. See ``docs/experiments.md``.
"""
