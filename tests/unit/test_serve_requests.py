"""The search service's pure parts: a document's title and snippet, request checks, the listening socket."""

import socket

import pytest

from clirplug.errors import ClirplugError
from clirplug.serve.app import BadRequest, _batch, _k, bind
from clirplug.serve.service import SNIPPET_WORDS, split_document

pytestmark = pytest.mark.unit

LONG = " ".join(f"w{i}" for i in range(SNIPPET_WORDS + 5))


@pytest.mark.parametrize("text, title, snippet", [
    ("remove a user account\nacctdel - remove a user account", "remove a user account", "acctdel - remove a user account"),
    ("no title here", "", "no title here"),  # one line: a document indexed without a title
    ("title\n" + LONG, "title", " ".join(LONG.split()[:SNIPPET_WORDS]) + " ..."),
    ("title\nfirst\nsecond  line", "title", "first second line"),  # the contents' own newlines are spaces
    ("", "", ""),
    (None, "", ""),  # an index that stores no raw text
])
def test_a_document_is_shown_as_its_title_and_first_words(text, title, snippet):
    assert split_document(text) == (title, snippet)


@pytest.mark.parametrize("value, expected", [("10", 10), (1, 1), ("1000", 1000), (" 7 ", 7)])
def test_k_accepts_whole_numbers_from_1_to_1000(value, expected):
    assert _k(value) == expected


@pytest.mark.parametrize("value", ["0", "-1", "1.5", "", "ten", 0, 1001, 2.0, True, None, [3]])
def test_k_refuses_anything_else(value):
    with pytest.raises(BadRequest, match="k must be a whole number from 1 to 1000"):
        _k(value)


def test_a_batch_reads_qids_as_strings_and_k_defaults_to_10():
    body = {"queries": [{"qid": 7, "query": "Datei"}, {"qid": "b", "query": "Bild"}]}
    assert _batch(body) == ([("7", "Datei"), ("b", "Bild")], 10)
    assert _batch({**body, "k": 3})[1] == 3


def test_a_batch_of_more_than_100_queries_is_refused():
    with pytest.raises(BadRequest, match="at most 100 queries a request, got 101"):
        _batch({"queries": [{"qid": i, "query": "x"} for i in range(101)]})


def test_a_busy_port_is_one_error_line():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        with pytest.raises(ClirplugError, match=f"cannot listen on 127.0.0.1:{port} "):
            bind("127.0.0.1", port)


def test_port_0_takes_a_free_port():
    with bind("127.0.0.1", 0) as sock:
        assert sock.getsockname()[1] > 0
