"""The web application of ``clirplug serve``: a FastAPI app over one or several
:class:`~clirplug.serve.service.SearchService`, served by uvicorn.

Routes (their schema at ``/docs`` and ``/openapi.json``; requests and answers are the pydantic models of
:mod:`clirplug.serve.schema`):

* ``GET /``: the search page (``static/index.html``);
* ``GET /search?q=TEXT&k=10[&system=NAME]``: one query's answer (:meth:`SearchService.search`);
* ``POST /search`` with ``{"queries": [{"qid": ..., "query": ...}, ...], "k": 10[, "system": NAME]}``:
  ``{"results": [...]}``;
* ``GET /doc/{docid}[?system=NAME]``: a document as its system's index stores it;
* ``GET /info``: the systems served (the first is searched by default), their settings in effect and the limits.

Every call into a service (Lucene through the JVM, the decoder and its caches) runs on one worker
thread, in arrival order (:mod:`clirplug.serve.worker`): the searchers are not thread-safe, and a
thread that calls Java stays attached to the JVM, so one long-lived thread is attached once and
detached when the server stops. The event loop stays free meanwhile: the page, ``/info`` and refused
requests are answered at once while a search runs.

Limits (``--max-body``, ``--time-budget``; :class:`Limits`): a body larger than ``max_body`` bytes
is refused with 413 before it is read whole; a request still waiting or running after
``time_budget`` seconds is answered 503, its search taken from the queue or interrupted, and the
worker goes on with the next. A refused request gets a 4xx status and ``{"error": "one line"}``;
an unexpected error a 500, with one line in the log, no traceback. On SIGTERM or Ctrl-C the server
stops taking connections, answers the requests under way with 503 (``the server is stopping``),
interrupts the running search and exits within seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import socket
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import uvicorn
from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from starlette.exceptions import HTTPException
from uvicorn.protocols.http.h11_impl import H11Protocol

from clirplug.errors import ClirplugError
from clirplug.serve import schema
from clirplug.serve.worker import OverBudget, SearchWorker, Stopping

PAGE = Path(__file__).with_name("static") / "index.html"
LOG = logging.getLogger("clirplug.serve")
STOP_SECONDS = 2.0  # how long stopping waits for the answers under way and for the worker thread


@dataclass(frozen=True)
class Limits:
    """What one request may ask: ``max_body`` bytes of body, ``time_budget`` seconds of waiting and searching."""

    max_body: int = 1 << 20
    time_budget: float = 30.0

    def __post_init__(self):
        if isinstance(self.max_body, bool) or not isinstance(self.max_body, int) or self.max_body < 1:
            raise ClirplugError(f"--max-body must be a whole number of bytes >= 1, got {self.max_body!r}")
        if not 0 < self.time_budget < float("inf"):
            raise ClirplugError(f"--time-budget must be a positive number of seconds, got {self.time_budget!r}")


class BadRequest(Exception):
    """A request the service refuses: answered with status 400 (404 for ``not_found``) and the message."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


def _error(status: int, message: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message.splitlines()[0] if message else ""}, status_code=status, headers=headers)


class _BodyLimit:
    """ASGI middleware: a body of more than ``max_body`` bytes (by its Content-Length, or as it arrives) is 413."""

    def __init__(self, app, max_body: int):
        self.app, self.max_body = app, max_body

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        message = f"the body may have at most {self.max_body:,} bytes"
        length = dict(scope["headers"]).get(b"content-length", b"0")
        if length.isdigit() and int(length) > self.max_body:
            return await _error(413, f"{message}, got {int(length):,}", {"Connection": "close"})(scope, receive, send)
        received = 0

        async def limited():
            nonlocal received
            event = await receive()
            if event["type"] == "http.request":
                received += len(event.get("body", b""))
                if received > self.max_body:
                    raise HTTPException(413, f"{message}, got more")
            return event

        await self.app(scope, limited, send)


class _OneLineErrors:
    """ASGI middleware: an exception no handler answered is a 500 with one line, logged as one line."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = False

        async def sending(event):
            nonlocal started
            started = started or event["type"] == "http.response.start"
            await send(event)

        try:
            await self.app(scope, receive, sending)
        except Exception as error:  # noqa: BLE001 - one line instead of a traceback
            line = f"{type(error).__name__}: {error}".splitlines()[0]
            LOG.error("clirplug serve: internal error answering %s %s: %s", scope.get("method"), scope.get("path"), line)
            if not started:
                await _error(500, f"internal error: {line}")(scope, receive, send)


def create_app(service, *others, limits: Limits = Limits()) -> FastAPI:
    """The application answering with ``service`` (a :class:`~clirplug.serve.service.SearchService`), or with one of
    ``others`` named by a request's ``system`` (their ``method``), within ``limits``."""
    from clirplug.lucene import detach_thread

    services = {served.method: served for served in (service, *others)}

    @contextlib.asynccontextmanager
    async def lifespan(app):
        app.state.worker = SearchWorker(on_exit=detach_thread)
        app.state.loop = asyncio.get_running_loop()
        yield
        await asyncio.get_running_loop().run_in_executor(None, app.state.worker.close, STOP_SECONDS)

    app = FastAPI(title="clirplug serve", summary="cross-language search over a Lucene index", lifespan=lifespan,
                  description="Searches in the source language; documents in the index's language. The search page "
                              "is at /.")

    def chosen(name: str | None):
        if name is None:
            return service
        if name not in services:
            raise BadRequest(f"unknown system {name!r}: choose one of {', '.join(services)}")
        return services[name]

    async def on_worker(call, *args):
        """``call(*args)`` on the worker thread within the time budget."""
        worker: SearchWorker = app.state.worker
        future = worker.submit(call, *args)
        wrapped = asyncio.wrap_future(future)
        try:
            done, _ = await asyncio.wait({wrapped}, timeout=limits.time_budget)
            if not done:
                worker.cancel(future, OverBudget(f"the request took more than its time budget of "
                                                 f"{limits.time_budget:g} s (--time-budget); its search was stopped"))
            return await wrapped
        except asyncio.CancelledError:
            worker.cancel(future, Stopping("the request was cancelled"))
            raise
        except ClirplugError as error:
            raise BadRequest(str(error)) from None

    @app.get("/", include_in_schema=False)
    async def page():
        return FileResponse(PAGE, media_type="text/html")

    @app.get("/info", response_model=schema.Info)
    async def info():
        """The systems served (the first is searched by default), each one's settings in effect, and the limits."""
        return {"method": service.method, "systems": list(services),
                "settings": {name: served.settings() for name, served in services.items()},
                "limits": {"max_body_bytes": limits.max_body, "time_budget": limits.time_budget}}

    @app.get("/search", response_model=schema.Answer, response_model_exclude_unset=True)
    async def search_get(q: Annotated[schema.QueryText, Query()], k: schema.K = 10, system: str | None = None):
        """One query's answer: its translation and the ``k`` best documents."""
        served = chosen(system)
        return (await on_worker(served.search, [("q", q)], k))[0]

    @app.post("/search", response_model=schema.SearchResponse, response_model_exclude_unset=True)
    async def search_post(body: schema.SearchRequest):
        """The answers of a batch of queries, in the order asked."""
        served = chosen(body.system)
        return {"results": await on_worker(served.search, [(q.qid, q.query) for q in body.queries], body.k)}

    @app.get("/doc/{docid:path}", response_model=schema.Document)
    async def document(docid: str, system: str | None = None):
        """A document as the index of the system stores it."""
        served = chosen(system)
        try:
            return await on_worker(served.document, docid)
        except BadRequest as error:
            raise BadRequest(str(error), 404) from None

    @app.exception_handler(BadRequest)
    async def bad_request(request: Request, error: BadRequest):
        return _error(error.status, str(error))

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, error: RequestValidationError):
        errors = error.errors()
        kind = request.headers.get("content-type", "application/json").partition(";")[0].strip().lower()
        if request.method == "POST" and errors and tuple(errors[0].get("loc", ())) == ("body",) and \
                not kind.endswith(("/json", "+json")):
            return _error(400, f"the body must be JSON sent as Content-Type: application/json, got {kind}")
        return _error(400, schema.error_line(errors))

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, error: HTTPException):  # 404, 405, 413, a body that cannot be read
        detail = str(error.detail)
        if error.status_code == 400 and error.__cause__ is not None:  # FastAPI could not parse the body
            cause = error.__cause__
            reason = "nested too deeply" if isinstance(cause, RecursionError) else str(cause)
            detail = f"the body is not JSON: {reason}" if not isinstance(cause, OSError) else "the body was cut off"
        return _error(error.status_code, detail, error.headers)

    @app.exception_handler(OverBudget)
    @app.exception_handler(Stopping)
    async def unavailable(request: Request, error: Exception):
        return _error(503, str(error) or "the server is stopping", {"Connection": "close"})

    app.add_middleware(_BodyLimit, max_body=limits.max_body)
    app.add_middleware(_OneLineErrors)
    return app


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


class _JsonH11(H11Protocol):
    """uvicorn's HTTP/1.1 protocol whose answer to a request it cannot parse (a malformed chunked body, a bad
    header) is one line of JSON, as every other refusal."""

    def send_400_response(self, msg: str) -> None:
        import h11

        body = json.dumps({"error": f"malformed HTTP request: {msg}"}).encode("utf-8")
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                   (b"connection", b"close")]
        for event in (h11.Response(status_code=400, headers=headers, reason=b"Bad Request"), h11.Data(data=body),
                      h11.EndOfMessage()):
            with contextlib.suppress(h11.LocalProtocolError):  # a response already under way: just close
                self.transport.write(self.conn.send(event))
        self.transport.close()


class _Server(uvicorn.Server):
    """uvicorn's server, which on SIGTERM or Ctrl-C also stops the app's search worker (answering the requests
    under way at once), and ignores a second Ctrl-C: uvicorn's forced exit cancelled the shutdown under way and
    logged a traceback."""

    def __init__(self, app: FastAPI):
        super().__init__(uvicorn.Config(app, log_level="warning", http=_JsonH11, lifespan="on",
                                        timeout_graceful_shutdown=math.ceil(STOP_SECONDS)))  # whole seconds
        self.web_app = app

    def handle_exit(self, sig, frame) -> None:
        super().handle_exit(sig, frame)
        self.force_exit = False  # a second Ctrl-C is ignored, as by every command (clirplug.interrupts.stop_once)
        state = self.web_app.state
        if hasattr(state, "worker"):  # from the signal handler: let the event loop take the worker's lock
            state.loop.call_soon_threadsafe(state.worker.stop)


def serve(app: FastAPI, sock: socket.socket) -> None:
    """Answer HTTP on ``sock`` with uvicorn until SIGTERM or Ctrl-C, then answer the requests under way and return."""
    try:
        _Server(app).run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn raises the Ctrl-C it caught once it has shut down: the normal way to stop
        pass


@contextlib.contextmanager
def running(app: FastAPI, host: str = "127.0.0.1"):
    """Serve ``app`` on a free port of ``host`` in a background thread; yields its base URL, stops on exit."""
    sock = bind(host, 0)
    server = _Server(app)
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
