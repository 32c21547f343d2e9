"""Query translation for CLIR: direct translation (``dt``, with MIRA-reranked n-best lists in
:mod:`clirplug.qt.mira`) and probabilistic structured queries (``psq``).

PSQ: :mod:`clirplug.qt.psq_tables` builds the per-token translation distributions
(Pr_token, Pr_grammar, Pr_nbest, their interpolation, thresholds, stopwords) and reads and
writes them; :mod:`clirplug.qt.psq` scores them over a Lucene index.
"""
