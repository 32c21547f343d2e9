"""``clirplug serve``: a search service over HTTP and its search page.

:mod:`clirplug.serve.service` answers queries with a searcher of :mod:`clirplug.api`, with query-biased snippets
(:mod:`clirplug.serve.snippets`); :mod:`clirplug.serve.app` is the FastAPI application (``pip install
clirplug[serve]``), whose requests and answers are the pydantic models of :mod:`clirplug.serve.schema` and whose
searches run on the worker thread of :mod:`clirplug.serve.worker`; ``static/index.html`` is the page it serves at ``/``.
"""
