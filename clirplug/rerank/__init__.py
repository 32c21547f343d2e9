"""Rerankers: rescore the candidate documents of a first-stage run.

Each method is a module defining ``rerank_run(topics, candidates, **options) -> DataFrame``, the
reranked run frame, with its own keyword options; :data:`clirplug.methods.RUNS` names it for the
method (``clirplug.cli.rerank`` maps the command line onto it). The boosting module
(:mod:`clirplug.boost`, which also searches the whole collection) defines ``load(model_path)``
returning a model with ``rerank(topics, collection, candidates, field=None, depth=None)`` and
``search(topics, collection, field=None, depth=1000)``, and ``read_collection(corpus, model)``,
for callers that keep the model and collection loaded.
"""
