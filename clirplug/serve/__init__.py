"""``clirplug serve``: a search service over HTTP and its search page.

:mod:`clirplug.serve.service` answers queries with a searcher of :mod:`clirplug.api`;
:mod:`clirplug.serve.app` is the Starlette application (``pip install clirplug[serve]``) and
``static/index.html`` the page it serves at ``/``.
"""
