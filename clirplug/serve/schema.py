"""The requests and answers of ``clirplug serve`` as pydantic models: checked on the way in, described in the
OpenAPI schema (``/docs``, ``/openapi.json``), and checked on the way out.

A check that fails names where (``queries[1].query``, ``the parameter k``) and what is wrong in one line
(:func:`error_line`); the application answers it with status 400.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

MAX_K = 1000
MAX_QUERIES = 100
MAX_QUERY_CHARS = 4000


def check_k(value) -> int:
    """``k``: a whole number from 1 to :data:`MAX_K` (a digit string too, as a GET parameter is)."""
    if isinstance(value, str):
        value = int(value) if value.strip().isdigit() else value
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_K:
        raise ValueError(f"must be a whole number from 1 to {MAX_K}, got {value!r}")
    return value


def check_query(value) -> str:
    """A query: a string with a non-space character, of at most :data:`MAX_QUERY_CHARS` characters."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"must be a non-empty string, got {value!r}")
    if len(value) > MAX_QUERY_CHARS:
        raise ValueError(f"has {len(value):,} characters; a query may have at most {MAX_QUERY_CHARS:,}")
    return value


def check_qid(value) -> str:
    """A query id: a string or an integer, read as a string."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ValueError(f"must be a string or an integer, got {value!r}")
    return str(value)


K = Annotated[int, BeforeValidator(check_k), Field(description=f"documents per query, 1 to {MAX_K}")]
QueryText = Annotated[str, BeforeValidator(check_query),
                      Field(description=f"the query in the source language, at most {MAX_QUERY_CHARS} characters")]
Qid = Annotated[str, BeforeValidator(check_qid), Field(description="the query's id (a string or an integer)")]


class Query(BaseModel):
    model_config = ConfigDict(extra="forbid")

    qid: Qid
    query: QueryText


class SearchRequest(BaseModel):
    """``POST /search``: a batch of queries for one system."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={
        "examples": [{"queries": [{"qid": "1", "query": "Dateien kopieren"}], "k": 10}]})

    queries: list[Query] = Field(min_length=1, max_length=MAX_QUERIES,
                                 description=f"1 to {MAX_QUERIES} queries, each qid once")
    k: K = 10
    system: str | None = Field(None, description="the system searched (GET /info lists them); the first by default")

    @model_validator(mode="after")
    def _qids_once(self):
        seen: set[str] = set()
        for i, query in enumerate(self.queries):
            if query.qid in seen:
                raise ValueError(f"queries[{i}]: qid {query.qid!r} occurs twice")
            seen.add(query.qid)
        return self


class Target(BaseModel):
    term: str
    p: float


class PsqTerm(BaseModel):
    source: str | None = Field(description="a source token; null for an n-best orphan word")
    targets: list[Target]
    untranslated: bool = Field(description="the token is searched as itself: no translation is known or kept")


class Translation(BaseModel):
    best: str = Field(description="the model's 1-best translation")
    untranslated: list[str] = Field(description="the source words the 1-best copies untranslated")
    psq: list[PsqTerm] | None = Field(None, description="PSQ: the weighted alternatives of each source token")


class TermContribution(BaseModel):
    term: str
    bm25: float = Field(description="the term's BM25 in the document times the times the derivation fires it")
    weight: float
    contribution: float = Field(description="weight times bm25: the term's share of the score")


class DerivationSentence(BaseModel):
    yield_: str = Field(alias="yield")
    score: float
    terms: list[TermContribution]

    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)


class Explanation(BaseModel):
    derivation: str
    score: float
    sentences: list[DerivationSentence]


class Hit(BaseModel):
    rank: int
    docid: str
    score: float
    title: str
    title_highlights: list[tuple[int, int]] = Field(description="[start, end) of the title's matched words")
    snippet: str = Field(description="the window of the contents that best matches the query's translated terms")
    highlights: list[tuple[int, int]] = Field(description="[start, end) of the snippet's matched words")
    derivation: str | None = Field(None, description="a searcher that translates each document: its derivation")
    explanation: Explanation | None = Field(None, description="BOW-FD: the winning derivation's term contributions")


class Answer(BaseModel):
    qid: str
    query: str
    translation: Translation | None
    hits: list[Hit]


class SearchResponse(BaseModel):
    results: list[Answer]


class Document(BaseModel):
    docid: str
    title: str
    contents: str
    fields: dict[str, Any] = Field(description="the record the index stores")


class Limits(BaseModel):
    max_k: int = MAX_K
    max_queries: int = MAX_QUERIES
    max_query_chars: int = MAX_QUERY_CHARS
    max_body_bytes: int
    time_budget: float = Field(description="seconds a request may take")


class Info(BaseModel):
    method: str = Field(description="the system searched by default")
    systems: list[str]
    settings: dict[str, dict[str, Any]] = Field(description="each system's settings in effect")
    limits: Limits


def error_line(errors: Sequence[dict]) -> str:
    """One line for pydantic's first validation error: where, then what."""
    error = errors[0]
    loc = [part for part in error.get("loc", ()) if part != "body"]
    if loc and loc[0] in ("query", "path"):
        where = f"the parameter {loc[-1]}"
    else:
        where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc).lstrip(".")
    kind, message = error.get("type", ""), str(error.get("msg", ""))
    if kind == "json_invalid":
        return f"the body is not JSON: {error.get('ctx', {}).get('error', message)}"
    if kind == "missing":
        return f"{where or 'the body'} is missing"
    message = message.removeprefix("Value error, ")
    if not loc:
        return message if kind == "value_error" else \
            'the body must be a JSON object {"queries": [{"qid": ..., "query": ...}, ...], "k": 10}'
    return f"{where} {message}" if kind == "value_error" else f"{where}: {message}"
