"""The web application of ``clirplug serve``: a Starlette app over a :class:`~clirplug.serve.service.SearchService`.

Routes:

* ``GET /``: the search page (``static/index.html``);
* ``GET /search?q=TEXT&k=10``: one query's answer (:meth:`SearchService.search`);
* ``POST /search`` with ``{"queries": [{"qid": ..., "query": ...}, ...], "k": 10}``: ``{"results": [...]}``;
* ``GET /info``: the method served (with several systems, their names too).

Served several systems (``clirplug serve --system A --system B``), a search names one by ``system=NAME`` (a GET
parameter, a POST body key); the first answers otherwise.

Requests are answered concurrently, but every call into the service (Lucene through the JVM, the
decoder and its caches) runs on one worker thread, in arrival order: the searchers are not
thread-safe, and a thread that calls Java stays attached to the JVM, so one long-lived thread is
attached once and detached when the server stops. A bad request gets status 400 and
``{"error": "one line"}``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import typing
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse
from starlette.routing import Route

from clirplug.errors import ClirplugError

PAGE = Path(__file__).with_name("static") / "index.html"
MAX_K = 1000
MAX_QUERIES = 100


class BadRequest(Exception):
    """A request the service refuses: answered with status 400 and the message."""


def _k(value) -> int:
    if isinstance(value, str):
        value = int(value) if value.strip().isdigit() else value
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_K:
        raise BadRequest(f"k must be a whole number from 1 to {MAX_K}, got {value!r}")
    return value


def _query(value, where: str) -> str:
    if value is None:
        raise BadRequest(f"{where} is missing")
    if not isinstance(value, str) or not value.strip():
        raise BadRequest(f"{where} must be a non-empty string, got {value!r}")
    return value


def _batch(body) -> tuple[list[tuple[str, str]], int]:
    """The ``(qid, query)`` pairs and ``k`` of a POST body."""
    if not isinstance(body, dict) or not isinstance(body.get("queries"), list) or not body["queries"]:
        raise BadRequest('the body must be a JSON object {"queries": [{"qid": ..., "query": ...}, ...], "k": 10}')
    if len(body["queries"]) > MAX_QUERIES:
        raise BadRequest(f"at most {MAX_QUERIES} queries a request, got {len(body['queries'])}")
    queries, seen = [], set()
    for i, item in enumerate(body["queries"]):
        if not isinstance(item, dict) or isinstance(item.get("qid"), bool) or not isinstance(item.get("qid"), str | int):
            raise BadRequest(f"queries[{i}] must be an object with a string or integer qid, got {item!r}")
        qid = str(item["qid"])
        if qid in seen:
            raise BadRequest(f"queries[{i}]: qid {qid!r} occurs twice")
        seen.add(qid)
        queries.append((qid, _query(item.get("query"), f"queries[{i}].query")))
    return queries, _k(body.get("k", 10))


def create_app(service, *others) -> Starlette:
    """The application answering with ``service`` (a :class:`~clirplug.serve.service.SearchService`), or with one of
    ``others`` named by a request's ``system`` (their ``method``)."""
    from clirplug.lucene import detach_thread

    worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="clirplug-search")
    services = {served.method: served for served in (service, *others)}

    async def answer(queries, k, name=None):
        if name is not None and (not isinstance(name, str) or name not in services):
            raise BadRequest(f"unknown system {name!r}: choose one of {', '.join(services)}")
        try:
            return await asyncio.get_running_loop().run_in_executor(worker, services[name or service.method].search,
                                                                    queries, k)
        except ClirplugError as error:
            raise BadRequest(str(error)) from error

    async def page(request: Request):
        return FileResponse(PAGE, media_type="text/html")

    async def info(request: Request):
        return JSONResponse({"method": service.method, **({"systems": list(services)} if others else {})})

    async def search_get(request: Request):
        params = request.query_params
        query = _query(params.get("q"), "the parameter q")
        return JSONResponse((await answer([("q", query)], _k(params.get("k", "10")), params.get("system")))[0])

    async def search_post(request: Request):
        try:
            body = json.loads(await request.body())
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise BadRequest(f"the body is not JSON: {error}") from None
        return JSONResponse({"results": await answer(*_batch(body), body.get("system"))})

    async def bad_request(request: Request, error: BadRequest):
        return JSONResponse({"error": str(error)}, status_code=400)

    async def http_error(request: Request, error: HTTPException):  # 404, 405
        return JSONResponse({"error": error.detail}, status_code=error.status_code)

    async def server_error(request: Request, error: Exception):
        return JSONResponse({"error": f"internal error: {type(error).__name__}: {error}".splitlines()[0]}, status_code=500)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        yield
        await asyncio.get_running_loop().run_in_executor(worker, detach_thread)
        worker.shutdown()

    routes = [Route("/", page), Route("/info", info), Route("/search", search_get, methods=["GET"]),
              Route("/search", search_post, methods=["POST"])]
    handlers: dict[typing.Any, typing.Callable] = {BadRequest: bad_request, HTTPException: http_error,
                                                  Exception: server_error}
    return Starlette(routes=routes, exception_handlers=handlers, lifespan=lifespan)


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: a free one); a busy or unknown address is a ClirplugError."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError as error:
        raise ClirplugError(f"cannot listen on {host}:{port} ({error.strerror or error})") from None
    return sock


def serve(app, sock: socket.socket) -> None:
    """Answer HTTP on ``sock`` with uvicorn until Ctrl-C (or SIGTERM), then finish the requests under way and return."""
    import uvicorn

    try:
        uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn raises the Ctrl-C it caught once it has shut down: the normal way to stop
        pass


@contextlib.contextmanager
def running(app, host: str = "127.0.0.1"):
    """Serve ``app`` on a free port of ``host`` in a background thread; yields its base URL, stops on exit."""
    import uvicorn

    sock = bind(host, 0)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="clirplug-serve", daemon=True)
    thread.start()
    try:
        while not server.started:
            if not thread.is_alive():
                raise ClirplugError(f"the server on {host} stopped while starting")
            threading.Event().wait(0.05)
        yield f"http://{host}:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join()
        sock.close()
