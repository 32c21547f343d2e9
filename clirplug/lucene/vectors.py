"""Document vectors in a Lucene HNSW index: built by Anserini's ``IndexHnswDenseVectors``, searched with
Lucene's ``KnnFloatVectorQuery``.

The vectors are staged as Anserini's ``JsonDenseVectorCollection`` (one ``{"docid", "vector"}`` line
per document, each float32 written as the exact decimal of its value, so Lucene indexes the same
float32 numbers) and indexed by one thread with ``forceMerge(1)``: one segment, whose graph is the
same on every build. Lucene scores a unit vector pair by its ``DOT_PRODUCT`` similarity,
``(1 + cosine) / 2``.

As other indexes, the build stages and writes in ``.NAME.building`` beside the target, shows
progress, and renames the finished index into place (a killed build is cleaned up by the next one).
"""

import json
import os
import sys
from pathlib import Path

import numpy as np

from clirplug.atomic import no_space_error
from clirplug.errors import ClirplugError
from clirplug.lucene._cache import load_docids
from clirplug.lucene._jvm import java_error_text, java_exception, java_output_to, jclass, to_python_list, wait_for_java
from clirplug.lucene.index import _building, _lucene_progress, check_index, open_reader

VECTOR_FIELD = "vector"  # the field Anserini's DenseVectorDocumentGenerator indexes a vector in
DOCID_KEY = "docid"  # a JsonDenseVectorCollection line's id
NO_MORE_DOCS = 2**31 - 1  # Lucene's DocIdSetIterator.NO_MORE_DOCS


def hnsw_index_name(m: int, ef_construction: int) -> str:
    """The folder name of an HNSW index of these parameters (beside the vectors it holds)."""
    return f"hnsw-m{m}-efc{ef_construction}"


def _stage_vectors(vectors: np.ndarray, docids, folder: Path, index: Path, progress: bool) -> Path:
    from tqdm import tqdm

    folder.mkdir()
    path = folder / "vectors.jsonl"
    with no_space_error(index), open(path, "w", encoding="utf-8") as out:
        for docid, row in tqdm(zip(docids, vectors), total=len(docids), desc="staging vectors", unit=" docs",
                               disable=not progress, file=sys.stderr, leave=False):
            # float64 of a float32 is exact, and its shortest decimal reads back to the same float32
            out.write(json.dumps({DOCID_KEY: docid, VECTOR_FIELD: row.astype(np.float64).tolist()}) + "\n")
    return path


def build_hnsw_index(vectors: np.ndarray, docids, index, m: int, ef_construction: int, progress: bool = True) -> Path:
    """Index the rows of ``vectors`` (unit float32, one per docid) into the Lucene HNSW index ``index``.

    An existing ``index`` is kept as it is (a cache); returns ``index``.
    """
    index = Path(index)
    if index.is_dir():
        return check_index(index)
    if len(docids) != len(vectors) or len(vectors) == 0:
        raise ClirplugError(f"{index}: {len(vectors)} vectors for {len(docids)} docids")
    with _building(index) as work:
        staged = _stage_vectors(np.asarray(vectors, dtype=np.float32), docids, work / "corpus", index, progress)
        if progress:
            print(f"indexing {len(docids)} vectors in Lucene HNSW (M {m}, efConstruction {ef_construction})",
                  file=sys.stderr)
        _run_indexer(work, index, m, ef_construction, len(docids), staged, progress)
        os.rename(work / "index", index)
    return index


def _run_indexer(work: Path, index: Path, m: int, ef_construction: int, count: int, staged: Path,
                 progress: bool) -> None:
    args = jclass("io.anserini.index.IndexHnswDenseVectors$Args")()
    args.collectionClass = "JsonDenseVectorCollection"
    args.generatorClass = "DenseVectorDocumentGenerator"
    args.input = str(staged.parent)
    args.index = str(work / "index")
    args.M = m
    args.efC = ef_construction
    args.threads = 1  # documents added in file order: the same graph on every build
    args.optimize = True
    args.quiet = True
    failure = ""
    with _lucene_progress(staged, progress) as poll, java_output_to(work / "lucene.log") as log:
        try:
            indexer = jclass("io.anserini.index.IndexHnswDenseVectors")(args)
            wait_for_java(indexer.run, poll=poll)
            poll(done=True)
        except java_exception() as error:
            failure = java_error_text(error)
    if failure:
        text = log.read_text(encoding="utf-8", errors="replace")
        raise ClirplugError(f"{index}: Lucene failed ({failure}{'; ' + text.splitlines()[-1] if text else ''})")
    indexed = indexer.getCounters().indexed.get()
    if indexed != count:
        raise ClirplugError(f"{index}: Lucene indexed {indexed} of {count} vectors (see {log})")


class HnswIndex:
    """Approximate nearest neighbours of a query vector in a Lucene HNSW index (:func:`build_hnsw_index`)."""

    def __init__(self, index, docids):
        """Open ``index``; ``docids`` are the vectors' docids in the order they were indexed (rows)."""
        self.index = check_index(index)
        self._reader = open_reader(self.index)
        self._searcher = jclass("org.apache.lucene.search.IndexSearcher")(self._reader)
        self._query = jclass("org.apache.lucene.search.KnnFloatVectorQuery")
        self._complete = jclass("org.apache.lucene.search.ScoreMode").COMPLETE
        self._leaves = [(leaf, leaf.docBase) for leaf in to_python_list(self._reader.leaves())]
        row_of = {docid: row for row, docid in enumerate(docids)}
        lucene_docids = load_docids(self.index, self._reader)
        try:
            self.rows = np.array([row_of[str(docid)] for docid in lucene_docids], dtype=np.int64)
        except KeyError as error:
            raise ClirplugError(f"{self.index}: document {error.args[0]!r} is not among the vectors") from None
        if len(self.rows) != len(docids):
            raise ClirplugError(f"{self.index}: {len(self.rows)} documents for {len(docids)} vectors; remove it to "
                                "rebuild it")

    def search(self, vector: np.ndarray, ef: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``ef`` nearest rows found by HNSW (a beam of ``ef``), in no particular order, and their cosines as
        Lucene computes them (float32, ``2 * score - 1``).

        The query's rewrite runs the graph search; its hits are read through the scorer's iterator, two calls
        returning numbers per hit (reading ``TopDocs.scoreDocs`` makes a Python object of each hit, some fifty times
        slower).
        """
        query = self._searcher.rewrite(self._query(VECTOR_FIELD, np.asarray(vector, dtype=np.float32).tolist(), ef))
        weight = self._searcher.createWeight(query, self._complete, 1.0)
        docs, scores = [], []
        for leaf, base in self._leaves:
            scorer = weight.scorer(leaf)
            if scorer is None:
                continue
            hits = scorer.iterator()
            doc = hits.nextDoc()
            while doc != NO_MORE_DOCS:
                docs.append(base + doc)
                scores.append(scorer.score())
                doc = hits.nextDoc()
        return self.rows[np.array(docs, dtype=np.int64)], 2 * np.array(scores, dtype=np.float32) - 1

    def close(self):
        self._reader.close()
