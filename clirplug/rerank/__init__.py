"""Rerankers: rescore the candidate documents of a first-stage run.

Each method is a module registered here by name (the CLI's ``--method`` choices). It defines
``rerank_run(topics, candidates, **options) -> DataFrame``, the reranked run frame, with its own
keyword options (``clirplug.cli.rerank`` maps the command line onto them). The boosting module
(:mod:`clirplug.boost`, which also searches the whole collection) defines ``load(model_path)``
returning a model with ``rerank(topics, collection, candidates, field=None, depth=None)`` and
``search(topics, collection, field=None, depth=1000)``, and ``read_collection(corpus, model)``,
for callers that keep the model and collection loaded.
"""

# method name -> module
RERANKERS = {
    "boost": "clirplug.boost",
    "bowfd": "clirplug.rerank.bowfd",
}
