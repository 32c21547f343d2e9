"""Rerankers: rescore the candidate documents of a first-stage run.

Each method is a module registered here by name (the CLI's ``--method`` choices). It
defines ``load(model_path)`` returning a model with ``rerank(topics, collection,
candidates, field=None, depth=None) -> DataFrame`` and ``search(topics, collection,
field=None, depth=1000) -> DataFrame``, and ``read_collection(corpus, model)``; or it defines
``rerank_run(args, topics) -> DataFrame`` over the parsed command line (bowfd).
"""

# method name -> module
RERANKERS = {
    "boost": "clirplug.rerank.boosting",
    "bowfd": "clirplug.rerank.bowfd",
}
