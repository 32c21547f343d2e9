"""Experiments: every method on a collection, cached stages, one report (``clirplug experiment``).

``config`` reads and checks the YAML config, ``plan`` builds the stage graph, ``kinds``
holds the generic stage kinds, ``planners`` a module per method (its planner and stage
kinds), ``runner`` runs the plan with caching and resume, ``systems`` writes the system
files, ``report`` the tables. See ``docs/experiments.md``.
"""
