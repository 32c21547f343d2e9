"""Topic files: JSONL, TREC SGML and TSV readers and writers."""

import json

import pytest

from clirplug.errors import ClirplugError
from clirplug.io.topics import Topic, read_topics, topic_field, write_topics

pytestmark = pytest.mark.unit

TREC = """\
<top>
<num> Number: ls.1 </num>
<title> Verzeichnisinhalte   auflisten </title>
<desc> Description:
Listet Dateien &amp; Ordner auf, z.B. &lt;dir&gt;.
</desc>
<narr> Narrative:
Alles über ls.
</narr>
</top>

<top>
<num> Number: 301
<title> International Organized Crime
<desc> Description:
Identify organizations.
<narr> Narrative:
A relevant document must name one.
</top>
"""


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_trec_with_and_without_closing_tags(tmp_path):
    topics = read_topics(write(tmp_path, "t.trec", TREC))
    assert topics == [
        Topic("ls.1", "Verzeichnisinhalte auflisten", "Listet Dateien & Ordner auf, z.B. <dir>.", "Alles über ls."),
        Topic("301", "International Organized Crime", "Identify organizations.", "A relevant document must name one."),
    ]


def test_jsonl_ids_stay_strings_and_extra_keys_are_ignored(tmp_path):
    lines = [
        {"id": "ls.1", "title": "t", "desc": "d", "lang": "de"},
        {"id": 301, "title": "t2", "desc": "d2", "narr": "n2"},
    ]
    path = write(tmp_path, "t.jsonl", "\n".join(json.dumps(line) for line in lines) + "\n\n")
    assert read_topics(path) == [Topic("ls.1", "t", "d", ""), Topic("301", "t2", "d2", "n2")]


def test_tsv_text_is_title_and_desc(tmp_path):
    path = write(tmp_path, "t.tsv", "ls.1\tDateien auflisten\n\n002\tzwei\n")
    assert read_topics(path) == [Topic("ls.1", "Dateien auflisten", "Dateien auflisten"), Topic("002", "zwei", "zwei")]


@pytest.mark.parametrize("fmt", ["jsonl", "trec", "tsv"])
def test_write_then_read_round_trips(tmp_path, fmt):
    topics = [Topic("ls.1", "a & <b>", "c > d", "e"), Topic("2", "x", "y", "")]
    path = tmp_path / f"out.{fmt}"
    write_topics(topics, path, format=fmt)
    expected = [Topic(t.id, t.title, t.title) for t in topics] if fmt == "tsv" else topics
    assert read_topics(path) == expected
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left behind


def test_manclir_jsonl_and_trec_agree(manclir_de):
    jsonl = read_topics(manclir_de / "topics.dev.jsonl")
    assert len(jsonl) == 249
    assert read_topics(manclir_de / "topics.dev.trec") == jsonl


def test_topic_field():
    topic = Topic("1", "t", "d", "n")
    assert [topic_field(topic, f) for f in ("title", "desc", "narr")] == ["t", "d", "n"]
    with pytest.raises(ClirplugError, match=r"'body'.*title, desc, narr"):
        topic_field(topic, "body")


BAD = [
    ("t.jsonl", '{"id": "1", "title": "a", "desc": "b"}\n{"id": "2", "title": "a"\n', r"t\.jsonl:2: invalid JSON"),
    ("t.jsonl", '{"id": "1", "title": "a", "desc": "b"}\n\n{"title": "a"}\n', r"t\.jsonl:3: missing field 'id'"),
    ("t.jsonl", '{"id": "1", "title": 5, "desc": "b"}\n', r"t\.jsonl:1: field 'title' must be a string"),
    ("t.jsonl", '["1", "a"]\n', r"t\.jsonl:1: expected a JSON object"),
    ("t.jsonl", '{"id": "1", "title": "a", "desc": "b"}\n{"id": "1", "title": "c", "desc": "d"}\n',
     r"t\.jsonl:2: duplicate topic id '1' \(first at line 1\)"),
    ("t.tsv", "1\ta\n2\tb\tc\n", r"t\.tsv:2: expected 2 tab-separated fields"),
    ("t.tsv", "1\ta\n1\tb\n", r"t\.tsv:2: duplicate topic id '1'"),
    ("t.tsv", "1\ta\n\tb\n", r"t\.tsv:2: empty topic id"),
    ("t.trec", "<top>\n<num> Number: 1\n<title> a\n", r"t\.trec:1: <top> is never closed"),
    ("t.trec", "<top>\n<title> a </title>\n</top>\n", r"t\.trec:1: topic without <num>"),
    ("t.trec", "<top>\n<num> 1 </num>\n</top>\n<top>\n<num> 2\n<top>\n", r"t\.trec:6: <top> inside the topic opened at line 4"),
    ("t.trec", "<top>\n<num> 1 </num>\n</top>\nstray text\n<top>\n<num> 2\n</top>\n", r"t\.trec:4: text outside <top>"),
    ("t.trec", "<top>\n<num> 1 </num>\n</top>\n</top>\n", r"t\.trec:4: </top> without <top>"),
    ("t.trec", "<top>\n<num> 1 </num>\n<title> a\n<title> b\n</top>\n", r"t\.trec:4: second <title>"),
    ("t.trec", "<top>\n<num> 1 </num>\n</top>\n<top>\n<num> Number: 1\n</top>\n", r"t\.trec:4: duplicate topic id '1'"),
]


@pytest.mark.parametrize("name, text, message", BAD)
def test_malformed_topics_name_file_and_line(tmp_path, name, text, message):
    with pytest.raises(ClirplugError, match=message):
        read_topics(write(tmp_path, name, text))


def test_unreadable_and_unwritable(tmp_path):
    with pytest.raises(ClirplugError, match="cannot read topics"):
        read_topics(tmp_path / "absent.tsv")
    with pytest.raises(ClirplugError, match="tab or newline"):
        write_topics([Topic("1", "a\tb", "c")], tmp_path / "t.tsv", format="tsv")
    with pytest.raises(ClirplugError, match="unknown topic format 'xml'"):
        write_topics([], tmp_path / "t.xml", format="xml")


@pytest.mark.parametrize("text, expected", [
    ('{"id": "1", "title": "a", "desc": "b"}\n', Topic("1", "a", "b")),
    ("\n<top>\n<num> 1\n<title> a\n<desc> b\n</top>\n", Topic("1", "a", "b")),
    ("1\ta\n", Topic("1", "a", "a")),
])
def test_format_is_told_from_content_for_other_extensions(tmp_path, text, expected):
    assert read_topics(write(tmp_path, "topics.txt", text)) == [expected]


# ----------------------------------------------------------------------------- HC4 / NeuCLIR topics

def _hc4_line(topic_id, entries, narratives=None):
    record = {"topic_id": topic_id, "topics": [{"lang": lang, "source": source, "topic_title": title,
                                               "topic_description": f"{title} (description)", **extra}
                                              for lang, source, title, extra in entries]}
    if narratives is not None:
        record["narratives"] = narratives
    return json.dumps(record, ensure_ascii=False) + "\n"


HC4 = (_hc4_line("101", [("eng", "original", "oil price", {}), ("fas", "human translation", "قیمت نفت", {}),
                         ("fas", "machine translation", "بهای نفت", {})],
                 {"fas": {"very_valuable": "Prices.", "not_valuable": "Other."}})
       + _hc4_line(102, [("eng", "original", "earthquake", {}), ("fas", "human translation", "زلزله", {}),
                         ("fas", "machine translation", "زمین لرزه", {})],
                   {"fas": {"very_valuable": "Quakes."}}))
# NeuCLIR 2022: the narrative is in each entry; Russian only as a machine translation
NEUCLIR = _hc4_line("200", [("eng", "original", "ice", {"topic_narrative": "About ice."}),
                            ("rus", "machine translation", "лёд", {"topic_narrative": "Про лёд."})])


@pytest.mark.parametrize("lang, expected", [
    (None, [Topic("101", "oil price", "oil price (description)", "Prices. Other."),
            Topic("102", "earthquake", "earthquake (description)", "Quakes.")]),
    ("eng", [Topic("101", "oil price", "oil price (description)", "Prices. Other."),
             Topic("102", "earthquake", "earthquake (description)", "Quakes.")]),
    ("fa", [Topic("101", "قیمت نفت", "قیمت نفت (description)", "Prices. Other."),
            Topic("102", "زلزله", "زلزله (description)", "Quakes.")]),
    ("fas:mt", [Topic("101", "بهای نفت", "بهای نفت (description)", "Prices. Other."),
                Topic("102", "زمین لرزه", "زمین لرزه (description)", "Quakes.")]),
])
def test_hc4_topics_pick_the_language(tmp_path, lang, expected):
    """The content tells HC4 topics from clirplug's JSONL; the language picks the entry of each topic."""
    for name in ("hc4.jsonl", "topics.txt"):
        assert read_topics(write(tmp_path, name, HC4), lang=lang) == expected


def test_neuclir_topics_carry_their_narratives(tmp_path):
    path = write(tmp_path, "neuclir.jsonl", NEUCLIR)
    assert read_topics(path) == [Topic("200", "ice", "ice (description)", "About ice.")]
    assert read_topics(path, lang="ru:mt") == [Topic("200", "лёд", "лёд (description)", "Про лёд.")]


@pytest.mark.parametrize("text, lang, message", [
    (HC4, "ru", r"hc4\.jsonl:1: topic '101' has no rus original or human translation \(it has: eng \(original\), "
                r"fas \(human translation\), fas \(machine translation\)\)"),
    (NEUCLIR, "ru", r"hc4\.jsonl:1: topic '200' has no rus original or human translation"),
    (NEUCLIR, "en:mt", r"has no eng machine translation"),
    (HC4, "persian", r"topic language 'persian': expected LANG or LANG:mt"),
    (HC4, "fa:ht", r"topic language 'fa:ht'"),
    ('{"topic_id": "1", "topics": "eng"}\n', None, r"hc4\.jsonl:1: 'topics' must be a list of objects"),
    ('{"topic_id": "", "topics": []}\n', None, r"hc4\.jsonl:1: 'topic_id' must be a non-empty string"),
    (HC4 + HC4.splitlines()[0] + "\n", None, r"hc4\.jsonl:3: duplicate topic id '101' \(first at line 1\)"),
])
def test_hc4_topic_errors_name_file_line_and_language(tmp_path, text, lang, message):
    with pytest.raises(ClirplugError, match=message):
        read_topics(write(tmp_path, "hc4.jsonl", text), lang=lang)


def test_plain_jsonl_topics_ignore_the_topic_language(tmp_path):
    path = write(tmp_path, "t.jsonl", '{"id": "1", "title": "a", "desc": "b"}\n')
    assert read_topics(path, lang="fa") == read_topics(path) == [Topic("1", "a", "b")]
