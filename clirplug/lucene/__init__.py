"""Everything that touches the JVM: Lucene indexing, BM25 search and index statistics.

Only this package imports jnius, and only when a function here is first called,
so the rest of clirplug (decoder, PSQ tables, fusion, evaluation) runs without Java.
"""

from clirplug.lucene._jvm import collect_garbage, detach_thread

__all__ = ["collect_garbage", "detach_thread"]
