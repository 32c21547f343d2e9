"""A six-document English corpus for Lucene tests."""

import json

TINY_DOCS = [
    {"id": "ls.1", "title": "list directory contents",
     "contents": "ls lists information about the files in a directory. Sort entries alphabetically."},
    {"id": "cp.1", "title": "copy files and directories", "contents": "cp copies a source file to a destination file or into a directory."},
    {"id": "mv.1", "title": "move (rename) files", "contents": "mv renames a source file to a destination, or moves files into a directory."},
    {"id": "rm.1", "title": "remove files or directories", "contents": "rm removes each specified file. It does not remove directories by default."},
    {"id": "cat.1", "title": "concatenate files and print on the standard output",
     "contents": "cat concatenates files to standard output. With no file, read standard input."},
    {"id": "grep.1", "title": "print lines that match patterns",
     "contents": "grep searches for patterns in each file and prints each line that matches a pattern."},
]


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path
