"""Indexing through Anserini: statistics, failure safety, and bad corpus input."""

import gzip
import json
import mmap
import shutil

import numpy as np
import pytest

from clirplug import bm25
from clirplug.errors import ClirplugError
from clirplug.lucene.anserini import index_collection
from clirplug.lucene.index import build_index, index_statistics
from clirplug.lucene.languages import ANALYZERS, LANGUAGES
from clirplug.lucene.query import LuceneScores, term_query
from clirplug.lucene.reader import LENGTH_TABLE, LuceneIndex

from lucene_tiny import TINY_DOCS, write_jsonl

pytestmark = pytest.mark.jvm


def test_statistics_of_tiny_index(tiny_index):
    stats = index_statistics(tiny_index)
    assert stats["documents"] == len(TINY_DOCS)
    assert stats["language"] == "en"
    index = LuceneIndex(tiny_index, progress=False)
    assert sorted(index.docids.tolist()) == sorted(d["id"] for d in TINY_DOCS)
    assert index.avg_doc_length == pytest.approx(stats["total_terms"] / stats["documents"])


def doc_terms(index, docid) -> dict[str, int]:
    """The analyzed term frequencies of ``docid``: its row of ``index.matrix``, which BM25 and PSQ score."""
    row = index.matrix[index.doc_index(docid)]
    return {str(index.terms[c]): int(v) for c, v in zip(row.indices, row.data)}


def lucene_tf(lucene, term, doc) -> str:
    """The ``freq`` of ``term`` in document ``doc`` as Lucene's BM25 explanation states it (from its postings)."""
    return lucene.explain(term_query(term), doc).split("score(freq=", 1)[1].split(")", 1)[0]


def test_title_is_folded_into_the_indexed_text(tiny_index):
    index = LuceneIndex(tiny_index, progress=False)
    lucene = LuceneScores(tiny_index)
    # "concatenate" occurs only in the title of cat.1 ("concatenates" in its contents stems alike)
    for docid, term in (("cat.1", "concaten"), ("ls.1", "list")):  # ls.1: title "list" + contents "lists"
        assert index.tf_matrix([term], [index.doc_index(docid)])[0, 0] == doc_terms(index, docid)[term] == 2
        assert lucene_tf(lucene, term, index.doc_index(docid)) == "2.0"
    lucene.close()


def test_df_and_postings_agree_with_lucene(tiny_index):
    index = LuceneIndex(tiny_index, progress=False)
    lucene = LuceneScores(tiny_index)
    terms = index.terms[:20].tolist() + ["nosuchterm"]
    assert index.df(terms).tolist() == [lucene.df(t) for t in terms]
    docs, tfs = index.postings("file")
    assert len(docs) == lucene.count(term_query("file")) > 1
    for doc, tf in zip(docs.tolist(), tfs.tolist()):
        assert doc_terms(index, index.docids[doc])["file"] == tf
        assert lucene_tf(lucene, "file", doc) == f"{tf:.1f}"
    lucene.close()


def _mapped(array) -> bool:
    while array is not None and not isinstance(array, mmap.mmap):
        array = getattr(array, "base", None)
    return array is not None


def test_document_vectors_are_cached_memory_mapped_and_rebuilt_when_damaged(tiny_index, tmp_path, capsys):
    index_path = tmp_path / "tiny"
    shutil.copytree(tiny_index, index_path)
    shutil.rmtree(index_path / "clirplug", ignore_errors=True)
    built = LuceneIndex(index_path, progress=False)  # reads Lucene's document vectors, writes both caches
    expected = (built.terms.tolist(), built.matrix.toarray(), built.matrix_csc.toarray(), built.df(built.terms).tolist())
    assert (index_path / "clirplug" / "vectors-v1").is_dir() and (index_path / "clirplug" / "postings-v1").is_dir()

    cached = LuceneIndex(index_path, progress=False)
    got = (cached.terms.tolist(), cached.matrix.toarray(), cached.matrix_csc.toarray(), cached.df(cached.terms).tolist())
    assert got[0] == expected[0] and got[3] == expected[3]
    assert np.array_equal(got[1], expected[1]) and np.array_equal(got[2], expected[2])
    assert all(_mapped(a) for a in (cached.matrix.data, cached.matrix.indices, cached.matrix_csc.indptr))

    indices = index_path / "clirplug" / "vectors-v1" / "indices.npy"
    indices.write_bytes(indices.read_bytes()[:100])  # truncated
    damaged = LuceneIndex(index_path, progress=False)
    assert np.array_equal(damaged.matrix.toarray(), expected[1])
    assert "cannot read the index cache" in capsys.readouterr().err
    assert np.array_equal(LuceneIndex(index_path, progress=False).matrix.toarray(), expected[1])  # written again
    assert capsys.readouterr().err == ""


def test_length_norms_decode_lucene_lengths(tiny_index):
    index = LuceneIndex(tiny_index, progress=False)
    exact = np.asarray(index.matrix.sum(axis=1)).ravel()
    # short documents (< 24 tokens... up to 40) are stored exactly by SmallFloat.intToByte4
    small = exact < 24
    assert np.array_equal(index.doc_lengths[small], exact[small])
    assert LENGTH_TABLE[:24].tolist() == list(range(24))
    assert LENGTH_TABLE[255] > 2**30


def test_a_weighted_query_scores_the_weighted_sum_of_its_clauses(tiny_index):
    """weighted_query: Lucene's score is sum_i w_i * score_i (each clause boosted); a phrase clause matches what
    Lucene's own phrase query of the text matches, and the query ranks through Bm25Searcher.search_query."""
    from clirplug.lucene.query import phrase_query, text_phrase_query, weighted_query
    from clirplug.lucene.search import Bm25Searcher

    index = LuceneIndex(tiny_index, progress=False)
    lucene = LuceneScores(tiny_index)
    phrase = index.analyze_phrase("a destination file")
    expressions, weights = [(("file", 0),), (("directori", 0),), phrase], [0.5, 0.3, 0.2]
    query = weighted_query(expressions, weights)
    parts = [phrase_query(e) for e in expressions]
    assert lucene.count(parts[2]) == lucene.count(text_phrase_query("a destination file")) >= 1
    expected = np.array([[lucene.score(part, d) for part in parts] for d in range(index.num_docs)], np.float32)
    summed = (expected * np.array(weights, np.float32)).sum(axis=1)
    scores = np.array([lucene.score(query, d) for d in range(index.num_docs)])
    np.testing.assert_allclose(scores, summed, rtol=1e-6)
    assert (expected[:, 2] > 0).sum() == lucene.count(parts[2]) and (scores > 0).sum() == lucene.count(query)
    searcher = Bm25Searcher(tiny_index)
    ranked = searcher.search_query(query, 10)
    assert [d for d, _ in ranked] == [index.docids[i] for i in sorted(np.flatnonzero(scores), key=lambda i: (-scores[i], index.docids[i]))]
    searcher.close()
    lucene.close()


@pytest.mark.parametrize("k1, b", [(bm25.ANSERINI_K1, bm25.ANSERINI_B), (bm25.BOWFD_K1, bm25.BOWFD_B)])
def test_bm25_from_statistics_equals_lucene_scores(tiny_index, k1, b):
    """clirplug.bm25 over the index's statistics against Lucene's BM25Similarity: every (term, document)
    as Lucene explains it (Lucene computes in float32), and a query's sum as Anserini ranks it."""
    from clirplug.lucene.search import Bm25Searcher

    index = LuceneIndex(tiny_index, progress=False)
    terms = index.terms.tolist()
    ours = bm25.score(index.matrix.toarray().astype(np.float64), index.length_norms(k1, b)[:, None],
                      index.idf(index.df(terms)))
    lucene_scores = LuceneScores(tiny_index, k1, b)
    lucene = np.zeros_like(ours)
    for t, term in enumerate(terms):
        query = term_query(term)
        for d in range(index.num_docs):
            lucene[d, t] = lucene_scores.score(query, d)
    lucene_scores.close()
    np.testing.assert_allclose(ours, lucene, rtol=1e-6, atol=0)

    searcher = Bm25Searcher(tiny_index, k1=k1, b=b)
    query = "files directory standard"
    columns = index.term_columns(index.analyze(query))
    summed = ours[:, columns].sum(axis=1)
    ranked = dict(searcher.search(query, 10))
    for doc, score in ranked.items():
        assert summed[index.doc_index(doc)] == pytest.approx(score, abs=1e-4)  # Anserini rounds to 1e-4
    assert set(ranked) == {index.docids[i] for i in np.flatnonzero(summed > 0)}
    searcher.close()


def test_jsonl_gz_and_folders_are_read(tmp_path):
    folder = tmp_path / "corpus"
    folder.mkdir()
    write_jsonl(folder / "a.jsonl", TINY_DOCS[:3])
    with gzip.open(folder / "b.jsonl.gz", "wt", encoding="utf-8") as handle:
        handle.writelines(json.dumps(d) + "\n" for d in TINY_DOCS[3:])
    stats = build_index(folder, tmp_path / "index", progress=False)
    assert stats["documents"] == len(TINY_DOCS)


@pytest.mark.parametrize(
    "line, message",
    [
        ("{not json", "docs.jsonl:2: invalid JSON"),
        ('{"id": "x.1"}', "docs.jsonl:2: missing field 'contents'"),
        ('{"contents": "text"}', "docs.jsonl:2: missing field 'id'"),
        ('{"id": "x 1", "contents": "text"}', "docs.jsonl:2: field 'id' must be non-empty without spaces"),
        ('{"id": "x.1", "contents": 5}', "docs.jsonl:2: field 'contents' must be a string"),
        ('{"id": "ls.1", "contents": "again"}', "docs.jsonl:2: duplicate document id 'ls.1'"),
        ('["a list"]', "docs.jsonl:2: expected a JSON object"),
    ],
)
def test_bad_corpus_line_is_named_and_leaves_no_index(tmp_path, line, message):
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text(json.dumps(TINY_DOCS[0]) + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(ClirplugError, match=message.replace("(", r"\(")):
        build_index(corpus, tmp_path / "index", progress=False)
    assert not (tmp_path / "index").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["docs.jsonl"]


def test_existing_target_and_missing_corpus_are_errors(tmp_path, tiny_index):
    with pytest.raises(ClirplugError, match="already exists"):
        build_index(tmp_path, tiny_index, progress=False)
    with pytest.raises(ClirplugError, match="no such corpus"):
        build_index(tmp_path / "absent.jsonl", tmp_path / "index", progress=False)


@pytest.mark.parametrize("language, text, expected", [
    ("de", "Die Verzeichnisse werden angezeigt", ("verzeichnis", "angezeigt")),
    ("fr", "Les répertoires sont affichés", ("repertoir", "afich")),
    ("es", "Los directorios se muestran", ("directori", "muestr")),
])
def test_other_languages_use_their_lucene_analyzer(tmp_path, language, text, expected):
    from clirplug.lucene.search import Bm25Searcher

    corpus = write_jsonl(tmp_path / "docs.jsonl", [{"id": "d.1", "contents": text}, {"id": "d.2", "contents": "x"}])
    stats = build_index(corpus, tmp_path / "index", language=language, progress=False)
    assert stats["language"] == language
    index = LuceneIndex(tmp_path / "index", progress=False)
    terms = doc_terms(index, "d.1")
    assert all(any(t.startswith(e[:5]) for t in terms) for e in expected), terms  # stemmed, stopwords gone
    assert len(terms) == len(expected)
    assert index.analyze(text) == tuple(t for t in index.analyze(text) if t in terms)
    assert [d for d, _ in Bm25Searcher(tmp_path / "index").search(text, 10)] == ["d.1"]


@pytest.mark.parametrize("language", sorted(LANGUAGES))
def test_every_language_gets_anserinis_analyzer(language):
    from clirplug.lucene.index import analyzer_for

    assert analyzer_for(language).getClass().getName() == ANALYZERS[language]


@pytest.mark.parametrize("language, text, expected", [
    ("zh", "防火墙配置", ("防火", "火墙", "墙配", "配置")),  # CJKAnalyzer: overlapping bigrams
    ("ja", "ファイルを削除する", ("ファイル", "削除")),  # Kuromoji: particles and する dropped
    ("fa", "كتاب\u200cهای مفید", ("كتاب", "مفيد")),  # PersianAnalyzer: ZWNJ splits, ها and stopwords gone, Arabic yeh
    ("sw", "Faili Imefutwa", ("Faili", "Imefutwa")),  # WhitespaceAnalyzer: no lowercasing
])
def test_documents_and_queries_are_analyzed_alike(tmp_path, language, text, expected):
    from clirplug.lucene.search import Bm25Searcher

    corpus = write_jsonl(tmp_path / "docs.jsonl", [{"id": "d.1", "contents": text}, {"id": "d.2", "contents": "x"}])
    assert build_index(corpus, tmp_path / "index", language=language, progress=False)["language"] == language
    index = LuceneIndex(tmp_path / "index", progress=False)
    assert sorted(doc_terms(index, "d.1")) == sorted(expected) == sorted(set(index.analyze(text)))
    assert [d for d, _ in Bm25Searcher(tmp_path / "index").search(text, 10)] == ["d.1"]


def test_an_index_built_by_pyserini_is_refused_until_its_language_is_stated(tiny_index, tmp_path, capsys):
    """Without clirplug.json the analyzer is unknown: searched with the English one (as it was), the German queries
    would find nothing."""
    from clirplug.cli import main
    from clirplug.lucene.search import Bm25Searcher

    docs = [{"id": "d.1", "contents": "Die Verzeichnisse werden angezeigt"},
            {"id": "d.2", "contents": "Die Dateien werden kopiert"}, {"id": "d.3", "contents": "Verzeichnis löschen"}]
    (tmp_path / "corpus").mkdir()
    write_jsonl(tmp_path / "corpus" / "docs.jsonl", docs)
    foreign = tmp_path / "pyserini-de"
    index_collection(tmp_path / "corpus", foreign, "de")
    assert not (foreign / "clirplug.json").exists()
    topics = tmp_path / "topics.tsv"
    topics.write_text("1\tDateien löschen\n2\tVerzeichnis\n", encoding="utf-8")
    search = ["search", "--topics", str(topics), "--hits", "5", "--run-tag", "r", "--quiet"]
    capsys.readouterr()
    assert main([*search, "--index", str(foreign), "--output", str(tmp_path / "refused.trec")]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line == (f"clirplug: error: {foreign}: no clirplug.json, so its analyzer is unknown (an index built by "
                    f"Pyserini?); state its language once with `clirplug index --existing --index {foreign} --language LANG`")
    assert not (tmp_path / "refused.trec").exists()
    for reader in (Bm25Searcher, LuceneIndex):
        with pytest.raises(ClirplugError, match="no clirplug.json"):
            reader(foreign)

    assert main(["index", "--existing", "--index", str(foreign)]) == 2  # the language must be stated
    assert "--existing takes --language LANG" in capsys.readouterr().err
    assert main(["index", "--existing", "--index", str(foreign), "--language", "de"]) == 0
    assert "index " + str(foreign) + ": 3 documents" in capsys.readouterr().out
    assert main(["index", "--existing", "--index", str(foreign), "--language", "en"]) == 2
    assert "records the de analyzer, not en" in capsys.readouterr().err
    assert main([*search, "--index", str(foreign), "--output", str(tmp_path / "pyserini.trec")]) == 0
    # the same run as on the index clirplug builds itself; the English analyzer would have found nothing
    build_index(tmp_path / "corpus", tmp_path / "clirplug-de", language="de", progress=False)
    assert main([*search, "--index", str(tmp_path / "clirplug-de"), "--output", str(tmp_path / "clirplug.trec")]) == 0
    run = (tmp_path / "pyserini.trec").read_text()
    assert run == (tmp_path / "clirplug.trec").read_text() and {"d.2", "d.3"} <= set(run.split())
    english = LuceneIndex(tiny_index, progress=False).analyze("Dateien löschen Verzeichnis")  # an English index
    assert len(english) == 3 and LuceneIndex(foreign, progress=False).df(english).tolist() == [0, 0, 0]


def test_damaged_index_metadata_is_one_line(tiny_index, tmp_path):
    import shutil

    from clirplug.lucene.search import Bm25Searcher

    copy = tmp_path / "copy"
    shutil.copytree(tiny_index, copy)
    (copy / "clirplug.json").write_text('{"language": "klingon"}', encoding="utf-8")
    with pytest.raises(ClirplugError, match=r"copy/clirplug.json: 'language' must be one of ar, bn, da, de, en, es, fa"):
        Bm25Searcher(copy)
    (copy / "clirplug.json").write_text('{"language": ', encoding="utf-8")
    with pytest.raises(ClirplugError, match=r"copy/clirplug.json: cannot read the index's metadata"):
        LuceneIndex(copy)


def test_indexing_progress_on_a_terminal(tmp_path):
    """On a terminal, reading the corpus and Lucene's indexing show bars that reach 100%; the index is the
    one a quiet build makes."""
    import fcntl
    import os
    import pty
    import struct
    import subprocess
    import sys
    import termios

    docs = [{"id": f"d{n}", "contents": f"document {n} " + "word " * (n % 50)} for n in range(3000)]
    corpus = write_jsonl(tmp_path / "docs.jsonl", docs)
    master, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # 100 columns wide
    command = [sys.executable, "-m", "clirplug", "index", "--corpus", str(corpus), "--threads", "1"]
    shown = subprocess.Popen([*command, "--index", str(tmp_path / "shown")], stdout=subprocess.PIPE, stderr=terminal)
    os.close(terminal)
    screen = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the terminal closed with the process
            break
        if not chunk:
            break
        screen += chunk
    out, _ = shown.communicate()
    os.close(master)
    assert shown.returncode == 0, screen.decode(errors="replace")
    quiet = subprocess.run([*command, "--index", str(tmp_path / "quiet"), "--quiet"], capture_output=True, text=True)
    assert quiet.returncode == 0 and quiet.stderr.count("\r") == 0
    assert out.decode().replace("shown", "X") == quiet.stdout.replace("quiet", "X")
    text = screen.decode(errors="replace")
    assert "reading corpus: 100%" in text and "3000/3000" in text
    assert "indexing: 100%" in text
