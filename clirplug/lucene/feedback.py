"""RM3's relevance model as Anserini's ``Rm3Reranker`` estimates it, computed in numpy from the index's
document vectors (:class:`clirplug.lucene.reader.LuceneIndex`).

Anserini reads each feedback document's term vector through Lucene, tests every term against a regular
expression and looks up its document frequency, then loads the stored fields of every document of the
expanded search: about 0.1 s a query on manclir-de. Here the terms RM3 may use are marked once per index
and each query costs a few array operations. Every float operation is Java's, in Java's order (float32
sums over the documents in rank order); the Java ``FeatureVector`` code does the rest (normalizing,
interpolating with the query, the order of the expanded query's clauses), so rankings and scores equal
Anserini's (``tests/integration/test_rm3.py``).
"""

import re

import numpy as np

from clirplug.lucene.index import FIELD
from clirplug.lucene.rm3 import Rm3

_FEEDBACK_TERM = re.compile(r"[a-z0-9]{2,20}")  # Rm3Reranker: length 2-20 and, with filterTerms, [a-z0-9]+
MAX_DF_RATIO = np.float32(0.1)  # Rm3Reranker: terms in more than 10% of the documents are left out
MIN_NORM = np.float32(0.001)  # Rm3Reranker: feedback documents of smaller L1 norm are skipped


class RelevanceModel:
    """RM3 feedback over one index: the terms it may use, and the expanded query of a first-stage ranking."""

    def __init__(self, index, reader):
        """``index``: the :class:`~clirplug.lucene.reader.LuceneIndex`, ``reader``: the searcher's Lucene reader."""
        self.index = index
        terms = index.terms.tolist()
        ratio = index.doc_freqs.astype(np.float32) / np.float32(reader.numDocs())
        eligible = np.fromiter((_FEEDBACK_TERM.fullmatch(t) is not None for t in terms), bool, len(terms))
        self._eligible = eligible & (ratio <= MAX_DF_RATIO)
        columns = np.flatnonzero(self._eligible)
        ascii_terms = np.array([terms[i] for i in columns.tolist()], dtype="S20")  # bytes order = Java's String order
        self._order = np.zeros(len(terms), np.int64)  # each eligible term's place in that order
        self._order[columns[np.argsort(ascii_terms, kind="stable")]] = np.arange(len(columns))
        self._java = _java_classes()  # FeatureVector and the query classes, loaded once

    def _document_terms(self, doc: int, fb_terms: int) -> tuple[np.ndarray, np.ndarray]:
        """A feedback document's vector pruned as ``FeatureVector.pruneToSize``: its ``fb_terms`` eligible terms
        of highest frequency (ties in term order), as columns and frequencies."""
        matrix = self.index.matrix
        start, end = matrix.indptr[doc], matrix.indptr[doc + 1]
        cols = matrix.indices[start:end]
        keep = self._eligible[cols]
        cols, tfs = cols[keep], matrix.data[start:end][keep].astype(np.float32)
        top = np.lexsort((self._order[cols], -tfs))[:fb_terms]
        return cols[top], tfs[top]

    def weights(self, lucene_docs, scores, rm3: Rm3) -> tuple[list[str], list[float]]:
        """The relevance model of the first-stage documents ``lucene_docs`` (rank order) and their float32
        ``scores``, before normalizing: its ``rm3.fb_terms`` heaviest terms, heaviest first (ties in term
        order), and their weights (``Rm3Reranker.estimateRelevanceModel`` up to ``scaleToUnitL1Norm``)."""
        documents = [self._document_terms(int(doc), rm3.fb_terms) for doc in lucene_docs[:rm3.fb_docs]]
        if not documents:
            return [], []
        vocabulary = np.unique(np.concatenate([cols for cols, _ in documents]))
        weight = np.zeros(len(vocabulary), np.float32)
        for (cols, tfs), score in zip(documents, np.asarray(scores, np.float32)):
            norm = np.float32(tfs.sum(dtype=np.float64))  # whole numbers: the sum is exact in any order
            if norm > MIN_NORM:
                weight[np.searchsorted(vocabulary, cols)] += (tfs / norm) * score
        top = np.lexsort((self._order[vocabulary], -weight))[:rm3.fb_terms]
        return self.index.terms[vocabulary[top]].tolist(), weight[top].tolist()

    def mixed_model(self, tokens, lucene_docs, scores, rm3: Rm3):
        """The Java ``FeatureVector`` ``Rm3Reranker.rerank`` expands with: the analyzed query ``tokens`` (a Java
        list) interpolated with the relevance model of ``lucene_docs`` by ``rm3.original_query_weight``."""
        feature_vector = self._java[0]
        model = feature_vector()
        for name, value in zip(*self.weights(lucene_docs, scores, rm3)):
            model.addFeatureValue(name, value)  # inserted in pruneToSize's order: Java's HashMap iterates alike
        query = feature_vector.fromTerms(tokens).scaleToUnitL1Norm()
        return feature_vector.interpolate(query, model.scaleToUnitL1Norm(), float(rm3.original_query_weight))

    def expanded_query(self, mixed):
        """The Lucene query ``Rm3Reranker.rerank`` searches for the :meth:`mixed_model` ``mixed``: a clause per
        term, in its order, boosted by its weight."""
        _, boolean_query, boost_query, term_query, term, should = self._java
        builder = boolean_query()
        for name, weight in term_weights(mixed).items():
            builder.add(boost_query(term_query(term(FIELD, name)), weight), should)
        return builder.build()


def term_weights(feature_vector) -> dict[str, float]:
    """The terms and weights of a Java ``FeatureVector``, in its order."""
    names, weights = feature_vector.iterator(), {}
    while names.hasNext():
        name = names.next()
        weights[name] = feature_vector.getValue(name)
    return weights


def _java_classes() -> tuple:
    from clirplug.lucene._jvm import jclass

    return (jclass("io.anserini.util.FeatureVector"), jclass("org.apache.lucene.search.BooleanQuery$Builder"),
            jclass("org.apache.lucene.search.BoostQuery"), jclass("org.apache.lucene.search.TermQuery"),
            jclass("org.apache.lucene.index.Term"), jclass("org.apache.lucene.search.BooleanClause$Occur").SHOULD)
