"""Reading and writing TREC-style files: topics, qrels and runs."""

from clirplug.io.qrels import QRELS_COLUMNS, read_qrels
from clirplug.io.runs import RUN_COLUMNS, SCORED_COLUMNS, read_run, run_frame, sort_run, write_run
from clirplug.io.topics import Topic, read_topics, topic_field, write_topics

__all__ = [
    "QRELS_COLUMNS",
    "RUN_COLUMNS",
    "SCORED_COLUMNS",
    "Topic",
    "read_qrels",
    "read_run",
    "read_topics",
    "run_frame",
    "sort_run",
    "topic_field",
    "write_run",
    "write_topics",
]
