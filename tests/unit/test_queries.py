"""Parallel queries for query-genre tuning: title and desc pairs, the desc line rule, the CLI options."""

import json

import pytest

from clirplug.cli import main
from clirplug.errors import ClirplugError
from clirplug.io.topics import Topic, read_topics
from clirplug.mt.queries import opening_line, page_lines, parallel_queries, write_parallel

pytestmark = pytest.mark.cli

TOPICS = [
    Topic("ls.1", "Verzeichnis-\ninhalte  auflisten", "Listet Dateien auf. Sortiert sie alphabetisch."),
    Topic("cat.1", "Dateien verketten", "Verkettet Dateien. Schreibt sie aus."),
    Topic("gone.1", "fehlt", "Fehlt im Korpus und im Bitext."),
]

# (page id, German line, English line); a line of page cat.1 occurs in the desc of ls.1
BITEXT = [
    ("cat.1", "Listet Dateien auf.", "Lists files."),
    ("cat.1", "cat - Dateien verketten", "cat - concatenate files"),
    ("cat.1", "Verkettet Dateien.", "Concatenate files."),
    ("cat.1", "Schreibt sie aus.", "Print them."),
    ("ls.1", "ls - Verzeichnisinhalte auflisten", "ls - list directory contents"),
    ("ls.1", "Listet Dateien auf. Sortiert sie  alphabetisch.\t Mehr nicht.", "List files. Sort them\u2028alphabetically."),
    ("-", "Listet Dateien auf.", "List files."),
]


def write_collection(folder):
    """The fixture collection as files: corpus, topics, bitext with page ids."""
    docs = [{"id": "ls.1", "title": "list directory\ncontents", "contents": "ls ..."},
            {"id": "cat.1", "title": "", "contents": "concatenate files and print"}]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    (folder / "topics.jsonl").write_text(
        "".join(json.dumps({"id": t.id, "title": t.title, "desc": t.desc}) + "\n" for t in TOPICS), encoding="utf-8")
    for suffix, column in (("ids", 0), ("de", 1), ("en", 2)):
        (folder / f"bitext.{suffix}").write_text("".join(row[column] + "\n" for row in BITEXT), encoding="utf-8")
    return folder


def bitext_paths(folder):
    return folder / "bitext.de", folder / "bitext.en", folder / "bitext.ids"


def test_title_pairs_by_topic_id_skip_topics_without_mate(tmp_path):
    write_collection(tmp_path)
    pairs = parallel_queries(TOPICS, "title", corpus=tmp_path / "corpus.jsonl")
    assert pairs == {
        "ls.1": ("Verzeichnis- inhalte auflisten", "list directory contents"),
        "cat.1": ("Dateien verketten", "concatenate files and print"),  # no title: the contents' start
    }
    assert list(pairs) == ["ls.1", "cat.1"]  # topic order


def test_page_lines_group_by_page_id_normalised_without_unnamed_pages(tmp_path):
    pages = page_lines(*bitext_paths(write_collection(tmp_path)))
    assert set(pages) == {"cat.1", "ls.1"}
    assert [f for f, _ in pages["cat.1"]] == ["Listet Dateien auf.", "cat - Dateien verketten", "Verkettet Dateien.",
                                              "Schreibt sie aus."]
    assert pages["ls.1"][1] == ("Listet Dateien auf. Sortiert sie alphabetisch. Mehr nicht.",
                                "List files. Sort them alphabetically.")
    (tmp_path / "bitext.ids").write_text("cat.1\n")
    with pytest.raises(ClirplugError, match="1 lines, but the bitext has 7"):
        page_lines(*bitext_paths(tmp_path))


def test_opening_line_rule():
    lines = [("ls - Dateien auflisten", "ls - list files"),
             ("Listet Dateien auf.", "List files."),        # first paragraph, inside the desc
             ("Sortiert sie. Zeigt mehr.", "Sorts. Shows more."),
             ("Listet Dateien auf. Sortiert", "x")]
    # desc over two paragraphs: the first line that lies inside it
    assert opening_line("Listet Dateien auf. Sortiert sie.", lines) == ("Listet Dateien auf.", "List files.")
    # desc ending inside a paragraph: the line that begins with the whole desc
    assert opening_line("Sortiert  sie.", lines[2:]) == ("Sortiert sie. Zeigt mehr.", "Sorts. Shows more.")
    # first paragraph missing from the bitext: a later paragraph of the desc
    assert opening_line("Vorwort. Sortiert sie. Zeigt mehr.", lines) == lines[2]
    # a line holding the desc only in its middle, or an empty desc, matches nothing
    assert opening_line("Dateien auf.", lines) is None
    assert opening_line(" ", lines) is None
    assert opening_line("Listet Dateien auf.", [("Listet Dateien auf.", "")]) is None


def test_desc_pairs_use_the_topic_page_only_and_skip_topics_without_line(tmp_path):
    write_collection(tmp_path)
    pairs = parallel_queries(TOPICS, "desc", bitext=bitext_paths(tmp_path))
    assert pairs == {
        "ls.1": ("Listet Dateien auf. Sortiert sie alphabetisch. Mehr nicht.", "List files. Sort them alphabetically."),
        "cat.1": ("Verkettet Dateien.", "Concatenate files."),
    }


def test_subset_of_topic_ids(tmp_path):
    write_collection(tmp_path)
    assert list(parallel_queries(TOPICS, "desc", bitext=bitext_paths(tmp_path), topic_ids=["cat.1", "gone.1"])) == ["cat.1"]
    assert parallel_queries(TOPICS, "title", corpus=tmp_path / "corpus.jsonl", topic_ids=[]) == {}
    with pytest.raises(ClirplugError, match="1 of the requested topic ids are not among the topics, e.g. 'ls.8'"):
        parallel_queries(TOPICS, "title", corpus=tmp_path / "corpus.jsonl", topic_ids=["ls.1", "ls.8"])


def test_field_and_inputs_are_checked():
    with pytest.raises(ClirplugError, match="choose one of title, desc"):
        parallel_queries(TOPICS, "narr", corpus="c")
    with pytest.raises(ClirplugError, match="need the corpus"):
        parallel_queries(TOPICS, "title", bitext=("a", "b", "c"))
    with pytest.raises(ClirplugError, match="need the bitext"):
        parallel_queries(TOPICS, "desc", corpus="c")


def test_write_parallel_writes_line_aligned_files_atomically(tmp_path):
    write_parallel([("a\nb", "x  y"), ("c", "z\u2028w")], tmp_path / "q.de", tmp_path / "q.en")
    assert (tmp_path / "q.de").read_text(encoding="utf-8") == "a b\nc\n"
    assert (tmp_path / "q.en").read_text(encoding="utf-8") == "x y\nz w\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["q.de", "q.en"]  # no temporary files left


@pytest.mark.parametrize("extra, message", [
    ([], "give the tuning text as --src and --tgt, or as parallel queries (--queries)"),
    (["--src", "S"], "give the tuning text as --src and --tgt, or as parallel queries (--queries)"),
    (["--src", "S", "--tgt", "T", "--queries", "Q", "--field", "title", "--corpus", "C"],
     "--src/--tgt and --queries are alternatives: give one of them"),
    (["--src", "S", "--tgt", "T", "--corpus", "C"], "--corpus is an option of --queries, not of --src/--tgt"),
    (["--queries", "Q"], "--queries needs --field (title or desc)"),
    (["--queries", "Q", "--field", "title"], "--field title needs --corpus"),
    (["--queries", "Q", "--field", "desc", "--bitext-src", "D", "--bitext-tgt", "E"], "--field desc needs --bitext-ids"),
    (["--queries", "Q", "--field", "desc", "--corpus", "C"], "--corpus is not used by --field desc"),
])
def test_cli_src_tgt_and_queries_are_exclusive(tmp_path, capsys, extra, message):
    assert main(["train", "weights", "--model", str(tmp_path / "model")] + extra) == 2
    assert capsys.readouterr().err == f"clirplug: error: {message}\n"


def test_cli_tunes_on_parallel_title_queries(tmp_path, capsys):
    from clirplug.mt.features import read_weights
    from clirplug.mt.grammar import parse_rule, write_grammar
    from tests.unit.test_decoder import ARPA, GRAMMAR

    model = tmp_path / "model"
    model.mkdir()
    write_grammar([parse_rule(line) for line in GRAMMAR.splitlines()], model / "grammar.flat.gz")
    (model / "lm.arpa").write_text(ARPA)
    docs = [("p.1", "b a"), ("q.1", "a b c"), ("r.1", "d b"), ("s.1", "b a d")]
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps({"id": i, "title": t, "contents": t}) + "\n" for i, t in docs))
    topics = [("p.1", "x y"), ("q.1", "x w y"), ("r.1", "z x"), ("s.1", "x y z"), ("t.1", "y")]
    (tmp_path / "topics.jsonl").write_text("".join(json.dumps({"id": i, "title": t, "desc": t}) + "\n" for i, t in topics))
    (tmp_path / "fold").write_text("q.1\nr.1\ns.1\nt.1\n")
    assert main(["train", "weights", "--model", str(model), "--kind", "flat", "--queries", str(tmp_path / "topics.jsonl"),
                 "--field", "title", "--corpus", str(tmp_path / "corpus.jsonl"), "--topic-ids", str(tmp_path / "fold"),
                 "--iterations", "2", "--nbest", "20"]) == 0
    err = capsys.readouterr().err
    assert f"clirplug: 3 parallel title queries from {tmp_path / 'topics.jsonl'}, 1 of 4 topics skipped" in err
    assert (model / "weights.flat").read_text().startswith(
        f"# PRO (Hopkins & May 2011) on 3 sentences of the title queries of {tmp_path / 'topics.jsonl'}")
    assert "LanguageModel" in read_weights(model / "weights.flat")


@pytest.mark.manclir
def test_manclir_parallel_query_counts(manclir_de):
    counts = {}
    for split in ("train", "dev"):
        topics = read_topics(manclir_de / f"topics.{split}.jsonl")
        bitext = tuple(manclir_de / f"bitext.{split}.{suffix}" for suffix in ("de", "en", "ids"))
        titles = parallel_queries(topics, "title", corpus=manclir_de / "corpus.jsonl")
        descs = parallel_queries(topics, "desc", bitext=bitext)
        counts[split] = (len(topics), len(titles), len(descs))
        assert all(text and text == " ".join(text.split()) for pair in [*titles.values(), *descs.values()] for text in pair)
    # every topic has its mate; the 4 train topics without a line begin their desc with a paragraph the bitext
    # lacks and end it inside the next one; the dev bitext holds only the first 3000 lines
    assert counts == {"train": (790, 790, 786), "dev": (249, 249, 133)}


def test_the_desc_ceiling_queries_are_the_mates_desc_openings_else_their_titles(tmp_path):
    """The desc ceiling's query of a topic is the English side of its desc opening line in the bitext; a topic whose
    desc the bitext does not align keeps its mate's title (the title ceiling's query)."""
    import pandas as pd

    from clirplug.mt.queries import mate_desc_queries

    write_collection(tmp_path)
    qrels = pd.DataFrame({"qid": ["ls.1", "cat.1", "cat.1"], "docid": ["ls.1", "cat.1", "ls.1"],
                          "relevance": [2, 2, 1]})
    queries, openings = mate_desc_queries(TOPICS, qrels, tmp_path / "corpus.jsonl", bitext_paths(tmp_path))
    assert queries == {"cat.1": "Concatenate files.", "ls.1": "List files. Sort them alphabetically."}
    assert openings == 2
    unaligned = [TOPICS[0], Topic("cat.1", "Dateien verketten", "Ganz anders.")]
    queries, openings = mate_desc_queries(unaligned, qrels, tmp_path / "corpus.jsonl", bitext_paths(tmp_path))
    assert queries == {"cat.1": "concatenate files and print", "ls.1": "List files. Sort them alphabetically."}
    assert openings == 1
