"""Rerankers: rescore the candidate documents of a first-stage run.

Each method is a module registered here by name (the CLI's ``--method`` choices). It
defines ``load(model_path)`` returning a model with ``rerank(topics, collection,
candidates, field=None, depth=None) -> DataFrame`` and ``search(topics, collection,
field=None, depth=1000) -> DataFrame``, and ``read_collection(corpus, model)``.
"""

# method name -> module
RERANKERS = {
    "boost": "clirplug.rerank.boosting",
}
