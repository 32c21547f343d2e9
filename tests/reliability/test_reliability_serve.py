"""``clirplug serve`` against careless and hostile clients, for real: the server a child process on 127.0.0.1
(``python -m clirplug serve --port 0``) over a small Lucene index and the tiny model, spoken to over sockets.

Every refusal is a 4xx with one line of JSON and leaves no traceback in the server's log; a request over
its time budget is answered 503 and the worker is free for the next; other clients are answered while a
long request runs; SIGTERM and SIGINT stop the server within 5 s, a request in flight included.
"""

import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from conftest import DOCS, jsonl

pytestmark = pytest.mark.jvm

REPO = Path(__file__).resolve().parents[2]
STOP_SECONDS = 5.0  # the promise: stopped within 5 s of SIGTERM or Ctrl-C


@pytest.fixture(scope="module")
def lucene_index(tmp_path_factory):
    from clirplug.lucene.index import build_index

    folder = tmp_path_factory.mktemp("serve")
    (folder / "corpus.jsonl").write_text(jsonl(DOCS), encoding="utf-8")
    build_index(folder / "corpus.jsonl", folder / "index", language="en", progress=False)
    return folder / "index"


class Server:
    """``clirplug serve`` in a child process; its URL, and its log once stopped."""

    def __init__(self, index: Path, model: Path, *flags: str):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "clirplug", "serve", "--index", str(index), "--model", str(model), "--method", "dt",
             "--port", "0", *flags], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert " on http://" in line, line + self.proc.communicate(timeout=30)[1]
        self.url = line.split(" on ")[1].split()[0].rstrip("/")
        self.host, self.port = "127.0.0.1", int(self.url.rsplit(":", 1)[1])
        self.log = ""

    def stop(self, signum=signal.SIGTERM) -> float:
        """Send ``signum``; the seconds until the process ended (its exit code must be 0, its log without traceback)."""
        start = time.monotonic()
        self.proc.send_signal(signum)
        out, self.log = self.proc.communicate(timeout=30)
        took = time.monotonic() - start
        assert self.proc.returncode == 0, self.log
        assert out.strip().endswith("clirplug serve: stopped"), out
        assert "Traceback" not in self.log and "Exception" not in self.log, self.log
        return took


@pytest.fixture(scope="module")
def server(lucene_index, model_template):
    served = Server(lucene_index, model_template, "--time-budget", "20")
    yield served
    served.stop()


def request(url: str, body: bytes | None = None, headers: dict | None = None, timeout: float = 60):
    """(status, JSON answer, seconds) of a GET, or of a POST of ``body``."""
    start = time.monotonic()
    sent = urllib.request.Request(url, data=body, headers=headers or {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(sent, timeout=timeout) as answer:
            return answer.status, json.loads(answer.read()), time.monotonic() - start
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read()), time.monotonic() - start


def raw(server: Server, data: bytes) -> tuple[int, dict]:
    """Send ``data`` as it is on a socket; the answer's status and JSON body."""
    with socket.create_connection((server.host, server.port), timeout=30) as sock:
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


def search(query: str, k: int = 3) -> str:
    return "/search?" + urllib.parse.urlencode({"q": query, "k": k})


def slow_batch(queries: int = 100, seed: int = 0) -> bytes:
    """A batch that takes the tiny model seconds (about 0.2 s a query): queries of 4,000 characters of unknown
    words."""
    rng = random.Random(seed)
    words = (" ".join("".join(rng.choice("bcdfghklmnprstvwz") for _ in range(rng.randint(5, 12))) for _ in range(500))
             for _ in range(queries))
    return json.dumps({"queries": [{"qid": i, "query": text[:4000]} for i, text in enumerate(words)]}).encode()


def one_line(answer: dict) -> str:
    assert list(answer) == ["error"] and "\n" not in answer["error"], answer
    return answer["error"]


HEAD = b"POST /search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
MALFORMED = [
    ("bad JSON", b'{"queries": [{"qid": 1, "query": "kopieren"}', "the body is not JSON: Expecting ',' delimiter"),
    ("deeply nested JSON", b"[" * 200_000, "the body is not JSON: nested too deeply"),
    ("nested JSON in a valid shape", b'{"queries": [{"qid": 1, "query": ' + b"[" * 50_000 + b"]" * 50_000 + b"}]}",
     "the body is not JSON: nested too deeply"),
    ("not UTF-8", b"{\xff}", "the body is not JSON: 'utf-8' codec can't decode"),
    ("a string query id list", b'{"queries": [{"qid": [1], "query": "kopieren"}]}',
     "queries[0].qid must be a string or an integer, got [1]"),
    ("a number as query", b'{"queries": [{"qid": 1, "query": 5}]}', "queries[0].query must be a non-empty string"),
    ("k a string", b'{"queries": [{"qid": 1, "query": "kopieren"}], "k": "ten"}', "k must be a whole number"),
    ("an array body", b'[{"qid": 1, "query": "kopieren"}]', 'the body must be a JSON object {"queries"'),
    ("an unknown key", b'{"queries": [{"qid": 1, "query": "kopieren"}], "hits": 3}', "hits: Extra inputs"),
    ("an unknown system", b'{"queries": [{"qid": 1, "query": "kopieren"}], "system": "x"}', "unknown system 'x'"),
]


@pytest.mark.parametrize("body, message", [pytest.param(*case[1:], id=case[0]) for case in MALFORMED])
def test_a_malformed_body_is_400_with_one_line(server, body, message):
    status, answer, _ = request(server.url + "/search", body)
    assert status == 400 and one_line(answer).startswith(message), answer


@pytest.mark.parametrize("chunks", [
    b"zz\r\n{}\r\n0\r\n\r\n",  # a chunk size that is not hexadecimal
    b"5\r\n{\"que\r\n3\r\nrie\r\nZZ\r\n",  # a chunk that does not end where its size says
    b"-2\r\n{}\r\n0\r\n\r\n",  # a negative size
])
def test_a_malformed_chunked_body_is_400_with_one_line(server, chunks):
    status, answer = raw(server, HEAD + b"Transfer-Encoding: chunked\r\n\r\n" + chunks)
    assert status == 400 and one_line(answer).startswith("malformed HTTP request")


def test_a_body_over_the_limit_is_413(server):
    # refused by its Content-Length, before the body is read (the client need not send it)
    status, answer = raw(server, HEAD + b"Content-Length: 2000000\r\n\r\n" + b'{"queries": [')
    assert status == 413 and one_line(answer) == "the body may have at most 1,048,576 bytes, got 2,000,000"
    chunked = b"".join(b"%x\r\n%s\r\n" % (60_000, b"a" * 60_000) for _ in range(20)) + b"0\r\n\r\n"
    status, answer = raw(server, HEAD + b"Transfer-Encoding: chunked\r\n\r\n" + chunked)  # no Content-Length
    assert status == 413 and one_line(answer).startswith("the body may have at most 1,048,576 bytes")


def test_a_query_over_the_limit_is_400(server):
    status, answer, _ = request(server.url + search("kopieren " * 500))
    assert status == 400 and one_line(answer) == "the parameter q has 4,500 characters; a query may have at most 4,000"
    status, answer, _ = request(server.url + search("dateien kopieren"))
    assert status == 200 and answer["hits"][0]["docid"] == "cp.1"


def test_other_clients_are_answered_while_a_long_request_runs(server):
    """The long batch holds the worker; the page, /info and refusals do not wait for it."""
    outcome = {}
    long = threading.Thread(target=lambda: outcome.update(long=request(server.url + "/search", slow_batch(15))))
    long.start()
    time.sleep(0.5)
    try:
        for path, status in [("/info", 200), ("/", None), ("/search?k=3", 400), ("/nowhere", 404)]:
            start = time.monotonic()
            if status is None:
                with urllib.request.urlopen(server.url + path, timeout=10) as page:
                    assert page.status == 200
            else:
                assert request(server.url + path, timeout=10)[0] == status
            assert time.monotonic() - start < 1.0, path
        assert long.is_alive(), "the batch ended before the other clients were answered: not a long request"
    finally:
        long.join(120)
    assert outcome["long"][0] == 200 and len(outcome["long"][1]["results"]) == 15


def test_a_request_over_its_time_budget_is_503_and_the_worker_is_freed(lucene_index, model_template):
    """The batch would take some 20 s; it is answered at 3 s, and a short request is answered again well before the
    batch could have ended (the first may still wait for the batch's interruption on a loaded machine)."""
    served = Server(lucene_index, model_template, "--time-budget", "3")
    try:
        status, answer, took = request(served.url + "/search", slow_batch(seed=1))
        assert status == 503 and one_line(answer).startswith("the request took more than its time budget of 3 s")
        assert took < 4.5
        start = time.monotonic()
        while True:
            status, answer, _ = request(served.url + search("dateien verschieben"))
            if status == 200 or time.monotonic() - start > 8:
                break
        assert status == 200 and answer["hits"][0]["docid"] == "mv.1"
    finally:
        served.stop()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_stops_the_server_within_5_s_with_a_request_in_flight(lucene_index, model_template, signum):
    served = Server(lucene_index, model_template)
    outcome = {}

    def ask():
        try:
            outcome["answer"] = request(served.url + "/search", slow_batch(seed=2))
        except (urllib.error.URLError, ConnectionError) as error:  # closed before an answer: also a stop
            outcome["answer"] = (None, {"error": str(error)}, None)

    asking = threading.Thread(target=ask)
    asking.start()
    time.sleep(1.0)
    assert served.proc.poll() is None and asking.is_alive()
    took = served.stop(signum)
    asking.join(10)
    assert took < STOP_SECONDS
    status, answer, _ = outcome["answer"]
    assert (status, answer) == (503, {"error": "the server is stopping"})
    assert not os.path.exists(f"/proc/{served.proc.pid}")
