"""Topics (queries): read and write JSONL, TREC SGML and TSV topic files.

Formats
-------
``jsonl``
    One JSON object a line: ``{"id"[, "title", "desc", "narr", "lang"]}``; other keys
    are ignored, an absent field is empty. ``id`` may be a string or an integer and is
    kept as a string.
``trec``
    TREC topic SGML: ``<top>``, ``<num> Number: ID``, ``<title>``, ``<desc> Description:``,
    ``<narr> Narrative:``, ``</top>``. Closing field tags are optional (old TREC topics
    omit them): a field runs up to the next tag. Other fields (``<con>``, ``<fac>``...) are
    skipped. Whitespace inside a field is collapsed to single spaces, the entities
    ``&amp; &lt; &gt; &quot; &apos;`` are unescaped.
``tsv``
    ``qid<TAB>text`` a line; the text becomes both title and desc.
``hc4``
    The multilingual JSONL topics of HC4 and NeuCLIR, told apart from ``jsonl`` by their content
    (a first line with ``topic_id`` and ``topics``): ``{"topic_id", "topics": [{"lang", "source",
    "topic_title", "topic_description"[, "topic_narrative"]}, ...][, "narratives": {lang:
    text or {label: text}}]}``. The topic language (:func:`clirplug.languages.topic_language`; default ``en``)
    picks the entry of ``topics``: the original or the human translation in that language, or
    with ``LANG:mt`` its machine translation. narr is the entry's ``topic_narrative``, else the
    ``narratives`` of that language, or the only one (HC4's are English, one per document
    language); the texts of a per-relevance mapping are joined.
``irds:<id>``
    Not a file: the queries of an ir_datasets dataset (:mod:`clirplug.irds`), in the topic
    language when one is given.

Ids always stay strings (``"ls.1"``, ``"301"``); a duplicate id, or one that cannot be a
column of a TREC run (white space, control characters), is an error naming file and line.
"""

import json
import re
import unicodedata
from pathlib import Path
from typing import NamedTuple

from clirplug.atomic import atomic_open
from clirplug.errors import ClirplugError, warn, where
from clirplug.io.jsonl import json_records
from clirplug.languages import iso639_3, topic_language

FIELDS = ("title", "desc", "narr")
class Topic(NamedTuple):
    """One topic: its id and the three classic TREC fields."""

    id: str
    title: str
    desc: str
    narr: str = ""


def topic_field(topic: Topic, field: str) -> str:
    """Return ``field`` (one of ``title``, ``desc``, ``narr``) of ``topic``.

    Raises
    ------
    ClirplugError
        When ``field`` is not a topic field; the message lists the choices.
    """
    _check_field(field)
    return getattr(topic, field)


def _check_field(field):
    if field not in FIELDS:
        raise ClirplugError(f"unknown topic field {field!r}: choose one of {', '.join(FIELDS)}")


# ----------------------------------------------------------------------------- reading


def _read_jsonl(path, text, lang):
    for lineno, record in json_records(text.splitlines(), path):
        values = {}
        for key in ("id", *FIELDS):
            value = record.get(key, None if key == "id" else "")
            if value is None:
                raise ClirplugError(f"{where(path, lineno)}: missing field {key!r}")
            if key == "id" and isinstance(value, int) and not isinstance(value, bool):
                value = str(value)
            if not isinstance(value, str):
                raise ClirplugError(
                    f"{where(path, lineno)}: field {key!r} must be a string, got {type(value).__name__}"
                )
            values[key] = check_text(value, f"{where(path, lineno)}: field {key!r}")
        if not values["id"].strip():
            raise ClirplugError(f"{where(path, lineno)}: empty topic id")
        yield lineno, Topic(values["id"].strip(), values["title"], values["desc"], values["narr"])


def _machine(entry) -> bool:
    """Whether an HC4/NeuCLIR topic entry is a machine translation (as ir_datasets tells them apart)."""
    return iso639_3(str(entry.get("lang", ""))) != "eng" and entry.get("source") not in ("original", "human translation")


def _hc4_narrative(narratives, code) -> str:
    """The narrative of language ``code``, else the only one (HC4's are English, one per document language)."""
    if not isinstance(narratives, dict):
        return ""
    value = narratives.get(code, next(iter(narratives.values())) if len(narratives) == 1 else None)
    if isinstance(value, dict):
        return " ".join(text for text in value.values() if isinstance(text, str))
    return value if isinstance(value, str) else ""


def _read_hc4(path, text, lang):
    code, machine = topic_language(lang or "en")
    wanted = f"{code} machine translation" if machine else f"{code} original or human translation"
    for lineno, record in json_records(text.splitlines(), path):
        topic_id, entries = record.get("topic_id"), record.get("topics")
        if isinstance(topic_id, int) and not isinstance(topic_id, bool):
            topic_id = str(topic_id)
        if not isinstance(topic_id, str) or not topic_id.strip():
            raise ClirplugError(f"{where(path, lineno)}: 'topic_id' must be a non-empty string")
        if not isinstance(entries, list) or not all(isinstance(entry, dict) for entry in entries):
            raise ClirplugError(f"{where(path, lineno)}: 'topics' must be a list of objects (lang, source, topic_title, ...)")
        matches = [entry for entry in entries if iso639_3(str(entry.get("lang", ""))) == code and _machine(entry) == machine]
        if not matches:
            have = ", ".join(f"{entry.get('lang')} ({entry.get('source')})" for entry in entries) or "none"
            raise ClirplugError(f"{where(path, lineno)}: topic {topic_id!r} has no {wanted} (it has: {have}); "
                                "choose another topic language")
        entry = min(matches, key=lambda entry: entry.get("source") != "original")
        values = {}
        for key in ("topic_title", "topic_description", "topic_narrative"):
            value = entry.get(key, "")
            if not isinstance(value, str):
                raise ClirplugError(f"{where(path, lineno)}: {key!r} of the {code} topic must be a string, "
                                    f"got {type(value).__name__}")
            values[key] = value
        narr = values["topic_narrative"] or _hc4_narrative(record.get("narratives"), code)
        yield lineno, Topic(topic_id.strip(), values["topic_title"], values["topic_description"], narr)


def _read_tsv(path, text, lang):
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 2:
            raise ClirplugError(f"{where(path, lineno)}: expected 2 tab-separated fields (qid, text), got {len(fields)}")
        qid, query = fields[0].strip(), fields[1].strip()
        if not qid:
            raise ClirplugError(f"{where(path, lineno)}: empty topic id")
        yield lineno, Topic(qid, query, query)


_TAG = re.compile(r"<(/?)([A-Za-z]+)\s*>")
_PREFIX = {"num": "Number:", "title": "Topic:", "desc": "Description:", "narr": "Narrative:"}
_ENTITIES = {"&lt;": "<", "&gt;": ">", "&quot;": '"', "&apos;": "'", "&amp;": "&"}
_ENTITY = re.compile("|".join(_ENTITIES))


def _clean(field, raw):
    text = " ".join(raw.split())
    prefix = _PREFIX.get(field)
    if prefix and text.lower().startswith(prefix.lower()):
        text = text[len(prefix):].lstrip()
    return _ENTITY.sub(lambda match: _ENTITIES[match.group()], text)


def _read_trec(path, text, lang):
    line_starts = [0] + [match.end() for match in re.finditer("\n", text)]

    def lineno_at(offset):
        low, high = 0, len(line_starts)
        while high - low > 1:
            middle = (low + high) // 2
            low, high = (middle, high) if line_starts[middle] <= offset else (low, middle)
        return low + 1

    top_line = None  # line of the open <top>, or None outside a topic
    fields, current, position = {}, None, 0
    for match in _TAG.finditer(text):
        between = text[position:match.start()]
        if top_line is None:
            if between.strip():
                line = lineno_at(position + len(between) - len(between.lstrip()))
                raise ClirplugError(f"{where(path, line)}: text outside <top> ... </top>")
        elif current is not None:
            fields[current] = fields.get(current, "") + between
        position = match.end()
        closing, tag = match.group(1) == "/", match.group(2).lower()
        line = lineno_at(match.start())
        if tag == "top":
            if not closing:
                if top_line is not None:
                    raise ClirplugError(f"{where(path, line)}: <top> inside the topic opened at line {top_line}")
                top_line, fields, current = line, {}, None
                continue
            if top_line is None:
                raise ClirplugError(f"{where(path, line)}: </top> without <top>")
            num = _clean("num", fields.get("num", ""))
            if not num:
                raise ClirplugError(f"{where(path, top_line)}: topic without <num>")
            yield top_line, Topic(num, *(_clean(name, fields.get(name, "")) for name in FIELDS))
            top_line, current = None, None
        elif top_line is None:
            raise ClirplugError(f"{where(path, line)}: <{match.group(1)}{tag}> outside <top> ... </top>")
        elif closing:
            current = None
        else:
            if tag in fields:
                raise ClirplugError(f"{where(path, line)}: second <{tag}> in the topic opened at line {top_line}")
            fields[tag], current = "", tag
    if top_line is not None:
        raise ClirplugError(f"{where(path, top_line)}: <top> is never closed by </top>")
    rest = text[position:]
    if rest.strip():
        raise ClirplugError(f"{where(path, lineno_at(position + len(rest) - len(rest.lstrip())))}: "
                            "text outside <top> ... </top>")


_READERS = {"jsonl": _read_jsonl, "hc4": _read_hc4, "trec": _read_trec, "tsv": _read_tsv}


# file extension -> format; other extensions are told apart by their content
_EXTENSIONS = {".jsonl": "jsonl", ".json": "jsonl", ".trec": "trec", ".sgml": "trec", ".tsv": "tsv"}


def _is_hc4(text) -> bool:
    """Whether JSONL topics are HC4/NeuCLIR's: a first record with ``topic_id`` and ``topics``."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    try:
        record = json.loads(first)
    except json.JSONDecodeError:
        return False
    return isinstance(record, dict) and "topic_id" in record and "topics" in record


def _sniff(path, text) -> str:
    by_extension = _EXTENSIONS.get(Path(path).suffix.lower())
    start = text.lstrip()[:1]
    format = by_extension or ("jsonl" if start == "{" else "trec" if start == "<" else "tsv")
    return "hc4" if format == "jsonl" and _is_hc4(text) else format


def read_topics(path, format=None, lang=None) -> list[Topic]:
    """Read a topic file in JSONL, HC4/NeuCLIR JSONL, TREC SGML or TSV format, or ``irds:<id>`` topics.

    Parameters
    ----------
    path : str or Path
        The topic file (UTF-8), or ``irds:<id>``, an ir_datasets dataset (:mod:`clirplug.irds`).
    format : {"jsonl", "hc4", "trec", "tsv"}, optional
        Forces a format. By default the extension decides (``.jsonl``/``.json``,
        ``.trec``/``.sgml``, ``.tsv``); for any other extension the content does: a
        first non-blank character ``{`` means JSONL, ``<`` TREC SGML, anything else TSV.
        JSONL whose first line has ``topic_id`` and ``topics`` is HC4/NeuCLIR's.
    lang : str, optional
        Topic language of multilingual topics (HC4/NeuCLIR files, ``irds:`` ids):
        ``LANG`` or ``LANG:mt`` (:func:`clirplug.languages.topic_language`). Default: English for HC4/NeuCLIR
        files, the dataset's own query fields for ``irds:`` ids. Other formats ignore it.

    Returns
    -------
    list of Topic
        In file order.

    Raises
    ------
    ClirplugError
        On malformed input, a duplicate id or an id with white space or control
        characters, naming ``file:line``; on a file without topics.
    """
    from clirplug.irds import irds_id, irds_topics

    dataset_id = irds_id(path)
    if dataset_id is not None:
        # errors name irds:<id>:<position>
        records = ((n, Topic(*fields)) for n, fields in enumerate(irds_topics(dataset_id, lang), 1))
    else:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise ClirplugError(f"{path}: cannot read topics ({error})") from error
        format = format or _sniff(path, text)
        if format not in _READERS:
            raise ClirplugError(f"unknown topic format {format!r}: choose one of {', '.join(_READERS)}")
        records = _READERS[format](path, text, lang)
    topics: list[Topic] = []
    seen: dict[str, int] = {}
    for lineno, topic in records:
        if not topic.id.isprintable() or " " in topic.id:
            raise ClirplugError(f"{where(path, lineno)}: topic id {topic.id!r} contains white space or control "
                                "characters, which a TREC run cannot hold")
        if topic.id in seen:
            raise ClirplugError(f"{where(path, lineno)}: duplicate topic id {topic.id!r} (first at line {seen[topic.id]})")
        seen[topic.id] = lineno
        topics.append(topic)
    if not topics:
        raise ClirplugError(f"{path}: no topics")
    return topics


def check_text(text: str, at: str) -> str:
    """``text``, refused (naming ``at``) when it holds a lone surrogate (JSON's ``"\\ud800"``), which is no
    character: no step after could encode it (the language model failed with a traceback)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise ClirplugError(f"{at}: {text[error.start]!r} is a lone surrogate, not a character") from None
    return text


def is_blank(text: str) -> bool:
    """Whether ``text`` shows nothing: white space and invisible format characters (Unicode category Cf: the
    zero-width space, joiners, direction marks, the byte-order mark) only."""
    return all(char.isspace() or unicodedata.category(char) == "Cf" for char in text)


def require_field(topics, field: str, path) -> None:
    """Refuse ``topics`` (read from ``path``) when none has text in ``field``; warn about those without.

    A topic with an empty query field gets no results, so a run of such topics would be
    silently empty.
    """
    _check_field(field)
    empty = [topic.id for topic in topics if is_blank(getattr(topic, field))]
    if len(empty) == len(topics):
        raise ClirplugError(f"{path}: no topic has a {field!r} field")
    if empty:
        shown = ", ".join(empty[:5]) + (", ..." if len(empty) > 5 else "")
        warn(f"{path}: {len(empty)} of {len(topics)} topics have an empty {field!r} field and get no results ({shown})")


# ----------------------------------------------------------------------------- writing


def _escape(text):
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _format_jsonl(topic, field):
    return json.dumps(topic._asdict(), ensure_ascii=False) + "\n"


def _format_tsv(topic, field):
    text = topic_field(topic, field)
    for value in (topic.id, text):
        if "\t" in value or "\n" in value or "\r" in value:
            raise ClirplugError(f"topic {topic.id!r}: a tab or newline cannot be written to a TSV topic file")
    return f"{topic.id}\t{text}\n"


def _format_trec(topic, field):
    return (
        f"<top>\n<num> Number: {_escape(topic.id)} </num>\n<title> {_escape(topic.title)} </title>\n"
        f"<desc> Description:\n{_escape(topic.desc)}\n</desc>\n<narr> Narrative:\n{_escape(topic.narr)}\n</narr>\n</top>\n\n"
    )


_WRITERS = {"jsonl": _format_jsonl, "tsv": _format_tsv, "trec": _format_trec}


def write_topics(topics, path, format="jsonl", field="title") -> None:
    """Write ``topics`` to ``path`` atomically.

    Parameters
    ----------
    topics : iterable of Topic
    path : str or Path
    format : {"jsonl", "tsv", "trec"}
        ``read_topics`` reads each back (TSV keeps one field, TREC collapses whitespace).
    field : {"title", "desc", "narr"}
        The field written as the text of a TSV file; ignored by the other formats.
    """
    if format not in _WRITERS:
        raise ClirplugError(f"unknown topic format {format!r}: choose one of {', '.join(_WRITERS)}")
    _check_field(field)
    lines = [_WRITERS[format](topic, field) for topic in topics]
    with atomic_open(path) as handle:
        handle.writelines(lines)
