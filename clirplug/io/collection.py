"""An ir_datasets dataset written as a collection folder (``docs/experiments.md``)."""

import json
import sys
from pathlib import Path

from clirplug.atomic import atomic_open
from clirplug.corpus import read_corpus
from clirplug.io.topics import read_topics, write_topics
from clirplug.irds import PREFIX, irds_document_count, irds_qrels, load_dataset


def write_collection(dataset_id: str, folder, splits, lang: str | None = None, progress: bool = True) -> None:
    """Write ``dataset_id`` into ``folder`` in the layout of a collection folder (``docs/experiments.md``).

    ``corpus.jsonl`` holds the documents of ``dataset_id``; ``topics.<split>.jsonl`` the topics of
    ``<dataset_id>/<split>`` in the topic language ``lang``, and ``qrels.<split>.txt`` its qrels when it
    has some. ``irds.json`` records what was written: files written for the same id and language
    are kept, the corpus and each split once.
    """
    from tqdm import tqdm

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    marker = folder / "irds.json"
    made = {"irds": dataset_id, "lang": lang}
    try:
        recorded = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        recorded = None
    if recorded != made:
        for old in [folder / "corpus.jsonl", *folder.glob("topics.*.jsonl"), *folder.glob("qrels.*.txt")]:
            old.unlink(missing_ok=True)
        with atomic_open(marker) as handle:
            handle.write(json.dumps(made) + "\n")
    corpus = folder / "corpus.jsonl"
    if not corpus.is_file():
        docs = tqdm(read_corpus(PREFIX + dataset_id), desc=f"{PREFIX}{dataset_id}", unit=" docs",
                    total=irds_document_count(dataset_id), disable=None if progress else True, file=sys.stderr)
        with atomic_open(corpus) as handle:
            for doc in docs:
                handle.write(json.dumps({"id": doc.id, "title": doc.title, "contents": doc.contents},
                                        ensure_ascii=False) + "\n")
    for split in dict.fromkeys(splits):
        split_id = f"{dataset_id}/{split}"
        topics = folder / f"topics.{split}.jsonl"
        if not topics.is_file():
            write_topics(read_topics(PREFIX + split_id, lang=lang), topics)
        qrels = folder / f"qrels.{split}.txt"
        if not qrels.is_file() and load_dataset(split_id, "queries").has_qrels():
            lines = [f"{qid} 0 {docid} {relevance}\n" for qid, docid, relevance in irds_qrels(split_id)]
            with atomic_open(qrels) as handle:
                handle.writelines(lines)
