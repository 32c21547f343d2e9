"""BM25 as Lucene's ``BM25Similarity`` scores a term, and the two pairs of defaults clirplug uses.

    bm25(t, d) = idf(t) · tf / (tf + k1 (1 - b + b dl / avgdl)),   idf(t) = log(1 + (N - df + 0.5) / (df + 0.5))

with ``dl`` the document's length as Lucene stores it (its decoded length norm) and ``avgdl``
the field's average length (:class:`clirplug.lucene.reader.LuceneIndex` has both). Here it is
computed in float64 (Lucene computes in float32): PSQ's scores (:mod:`clirplug.qt.psq`) and
BOW-FD's IR features (:mod:`clirplug.rerank.bowfd`, with the Robertson/Spärck Jones weight in
place of Lucene's idf) both go through :func:`length_norms` and :func:`score`. BM25 search
itself is Lucene's (:mod:`clirplug.lucene.search`).

Pure arithmetic on numbers or numpy arrays: importing this module loads neither numpy nor Java.
"""

import math

from clirplug.errors import ClirplugError

# Anserini's BM25 defaults (SearchCollection's -bm25.k1/-bm25.b, the values of its regression
# docs): BM25 search, DT, PSQ and MIRA training use them.
ANSERINI_K1 = 0.9
ANSERINI_B = 0.4
# BOW-FD's (Hieber & Riezler 2015, footnote 2): the IR features of BOW-FD reranking.
BOWFD_K1 = 1.2
BOWFD_B = 0.75


def check_bm25(k1: float, b: float, name_of=None) -> None:
    """Raise ``ClirplugError`` unless ``k1`` is finite and at least 0 and ``b`` lies in [0, 1].

    The one check of BM25's parameters, for every method that scores with them (bm25, dt,
    dt-mira, psq, bowfd, mira training); ``name_of(field)`` names the setting in the error
    (``--k1``, ``config.yaml: bm25.k1``).
    """
    def name(field):
        return f"{name_of(field)}: BM25 {field}" if name_of else f"BM25 {field}"

    if not (math.isfinite(k1) and k1 >= 0):
        raise ClirplugError(f"{name('k1')} must be a finite number >= 0, got {k1}")
    if not 0 <= b <= 1:
        raise ClirplugError(f"{name('b')} must lie in [0, 1], got {b}")


def length_norms(doc_lengths, avg_doc_length: float, k1: float, b: float):
    """``k1 (1 - b + b dl / avgdl)`` of each document length ``dl`` (a number or an array)."""
    return k1 * (1 - b + b * doc_lengths / avg_doc_length)


def score(tf, norms, weight=None):
    """``weight · tf / (tf + norms)``, elementwise; without ``weight``, the saturated tf alone.

    ``norms`` are :func:`length_norms` of the documents of ``tf``'s entries; ``weight`` is the
    term's idf, times its count in the query where the query repeats it (an array broadcast
    against ``tf``, or a number). The product is taken before the division, as written.
    """
    return (tf if weight is None else weight * tf) / (tf + norms)


def idf(df, num_docs: int):
    """Lucene's BM25 idf ``log(1 + (N - df + 0.5) / (df + 0.5))`` (natural log), as a float64 array."""
    import numpy as np

    df = np.asarray(df, dtype=np.float64)
    return np.log1p((num_docs - df + 0.5) / (df + 0.5))
