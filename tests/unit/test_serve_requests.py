"""The search service's pure parts: a document's title and contents, request checks and their one-line errors,
the listening socket, the limits."""

import socket

import pytest
from pydantic import ValidationError

from clirplug.errors import ClirplugError
from clirplug.serve.app import Limits, bind
from clirplug.serve.schema import MAX_QUERY_CHARS, SearchRequest, check_k, error_line
from clirplug.serve.service import split_document

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("text, title, contents", [
    ("remove a user account\nacctdel - remove a user account", "remove a user account", "acctdel - remove a user account"),
    ("no title here", "", "no title here"),  # one line: a document indexed without a title
    ("title\nfirst\nsecond  line", "title", "first\nsecond  line"),
    ("", "", ""),
    (None, "", ""),  # an index that stores no raw text
])
def test_a_document_is_its_title_and_contents(text, title, contents):
    assert split_document(text) == (title, contents)


@pytest.mark.parametrize("value, expected", [("10", 10), (1, 1), ("1000", 1000), (" 7 ", 7)])
def test_k_accepts_whole_numbers_from_1_to_1000(value, expected):
    assert check_k(value) == expected


@pytest.mark.parametrize("value", ["0", "-1", "1.5", "", "ten", 0, 1001, 2.0, True, None, [3]])
def test_k_refuses_anything_else(value):
    with pytest.raises(ValueError, match="must be a whole number from 1 to 1000"):
        check_k(value)


def test_a_batch_reads_qids_as_strings_and_k_defaults_to_10():
    request = SearchRequest.model_validate({"queries": [{"qid": 7, "query": "Datei"}, {"qid": "b", "query": "Bild"}]})
    assert [(q.qid, q.query) for q in request.queries] == [("7", "Datei"), ("b", "Bild")]
    assert request.k == 10 and request.system is None


def refusal(body) -> str:
    with pytest.raises(ValidationError) as caught:
        SearchRequest.model_validate(body)
    return error_line(caught.value.errors())


@pytest.mark.parametrize("body, message", [
    ({"queries": [{"qid": i, "query": "x"} for i in range(101)]}, "queries: List should have at most 100 items"),
    ({"queries": []}, "queries: List should have at least 1 item"),
    ({}, "queries is missing"),
    ([{"qid": 1, "query": "Datei"}], 'the body must be a JSON object {"queries"'),
    ({"queries": [{"query": "Datei"}]}, "queries[0].qid is missing"),
    ({"queries": [{"qid": True, "query": "Datei"}]}, "queries[0].qid must be a string or an integer, got True"),
    ({"queries": [{"qid": 1, "query": 5}]}, "queries[0].query must be a non-empty string, got 5"),
    ({"queries": [{"qid": 1, "query": "  "}]}, "queries[0].query must be a non-empty string, got '  '"),
    ({"queries": [{"qid": 1, "query": "x" * (MAX_QUERY_CHARS + 1)}]},
     f"queries[0].query has {MAX_QUERY_CHARS + 1:,} characters; a query may have at most {MAX_QUERY_CHARS:,}"),
    ({"queries": [{"qid": 1, "query": "a"}, {"qid": "1", "query": "b"}]}, "queries[1]: qid '1' occurs twice"),
    ({"queries": [{"qid": 1, "query": "a"}], "k": True}, "k must be a whole number from 1 to 1000, got True"),
    ({"queries": [{"qid": 1, "query": "a"}], "k": 10, "size": 3}, "size: Extra inputs are not permitted"),
    ({"queries": [{"qid": 1, "query": "a"}], "system": 3}, "system: Input should be a valid string"),
])
def test_a_bad_batch_is_one_line_naming_where(body, message):
    line = refusal(body)
    assert line.startswith(message) and "\n" not in line


def test_a_query_of_the_limit_is_accepted():
    assert SearchRequest.model_validate({"queries": [{"qid": 1, "query": "x" * MAX_QUERY_CHARS}]}).queries[0].query


def test_a_parameter_is_named_as_such():
    assert error_line([{"type": "missing", "loc": ("query", "q"), "msg": "Field required"}]) == \
        "the parameter q is missing"
    assert error_line([{"type": "value_error", "loc": ("query", "k"),
                        "msg": "Value error, must be a whole number from 1 to 1000, got 0"}]) == \
        "the parameter k must be a whole number from 1 to 1000, got 0"
    assert error_line([{"type": "json_invalid", "loc": ("body", 5), "msg": "JSON decode error",
                        "ctx": {"error": "Expecting ',' delimiter"}}]) == "the body is not JSON: Expecting ',' delimiter"


@pytest.mark.parametrize("values, message", [
    ({"max_body": 0}, "--max-body must be a whole number of bytes >= 1, got 0"),
    ({"time_budget": 0}, "--time-budget must be a positive number of seconds, got 0"),
    ({"time_budget": float("nan")}, "--time-budget must be a positive number of seconds, got nan"),
])
def test_bad_limits_are_refused(values, message):
    with pytest.raises(ClirplugError, match=message):
        Limits(**values)


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
