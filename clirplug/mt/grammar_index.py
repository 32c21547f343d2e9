"""An index of a grammar file by source phrase: the rules a restriction admits, found without scanning the file.

``<grammar>.index``, beside the grammar, holds the grammar's lines in file order, compressed in blocks of
about :data:`BLOCK` bytes (zlib; a phrase's lines, mostly neighbours, are read from a few blocks), and a table
from phrases to lines: each rule line is listed under every terminal run of its source side (the runs
:meth:`~clirplug.mt.grammar.SourcePhrases.admits` requires to be phrases), a source side without terminals
under the empty phrase, with the number of its phrases. A rule admitted by a restriction has all its runs
among the restriction's phrases: the lines listed under the restriction's phrases as many times as they have
phrases. These are read in file order, which gives the scan's rules (:func:`~clirplug.mt.grammar.iter_grammar`)
in the scan's order, without reading the others. Phrases are keyed by a 64-bit hash; a collision could only
add a rule whose source side is in no sentence, which no decoder applies.

The file: a magic line, the blocks of lines (UTF-8, each ending in a newline), the arrays (little-endian, 8-byte
aligned), a JSON header naming their offsets, their CRC-32 and the grammar's size and modification time,
and the header's length and CRC-32 (4 bytes each). An index whose header does not match its grammar or its own length is
not used. The index knows no grammar syntax: :mod:`clirplug.mt.grammar` gives each line's phrases.
"""

from __future__ import annotations

import array
import hashlib
import json
import mmap
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from clirplug.atomic import atomic_open

MAGIC = b"clirplug grammar index 2\n"
BLOCK = 1 << 15  # bytes of lines compressed together
# in file order, after the blocks: the phrase keys (sorted), their entries' bounds, the entries (line numbers,
# counted from 0 over the indexed lines), each line's offset in the uncompressed lines (and the end), each
# block's first line (and the number of lines), each block's offset (and the end), each line's number in the file,
# each line's number of phrases
_ARRAYS = ("keys", "bounds", "entries", "starts", "block_lines", "blocks", "linenos", "phrase_counts")
_OPEN: dict[tuple, GrammarIndex] = {}  # (index path, grammar version) -> its index, opened once per process


def index_path(path: Path) -> Path:
    """``<grammar>.index``: where the index of the grammar file ``path`` is kept."""
    return path.with_name(path.name + ".index")


def phrase_key(phrase: str) -> int:
    """The 64-bit key of a phrase (its tokens joined by single spaces)."""
    return int.from_bytes(hashlib.blake2b(phrase.encode("utf-8"), digest_size=8).digest(), "little")


class GrammarIndex:
    """An open index (memory-mapped): :meth:`lines` of some phrases."""

    def __init__(self, path: Path, version: tuple[str, int, int]):
        """Open the index at ``path``; ``ValueError`` when it is damaged or not the index of ``version``."""
        with open(path, "rb") as handle:
            self._map = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        size = len(self._map)
        if size < len(MAGIC) + 8 or self._map[: len(MAGIC)] != MAGIC:
            raise ValueError("not a grammar index")
        length, crc = int.from_bytes(self._map[size - 8 : size - 4], "little"), self._map[size - 4 :]
        if zlib.crc32(self._map[size - 8 - length : size - 8]).to_bytes(4, "little") != crc:
            raise ValueError("a damaged index")
        header = json.loads(self._map[size - 8 - length : size - 8])
        if header["length"] != size or (header["size"], header["mtime_ns"]) != version[1:]:
            raise ValueError("a stale or damaged index")
        arrays = header[_ARRAYS[0]][0]
        if zlib.crc32(memoryview(self._map)[arrays : size - 8 - length]) != header["crc32"]:  # the blocks check themselves
            raise ValueError("a damaged index")
        self.text = header["text"]
        for name in _ARRAYS:
            offset, count, dtype = header[name]
            setattr(self, name, np.frombuffer(self._map, dtype=dtype, count=count, offset=offset))

    def lines(self, phrases: Iterable[str], new: Iterable[str] | None = None) -> list[tuple[int, str]]:
        """``(line number, line)`` of every line whose phrases are all among ``phrases`` and, with ``new``, one
        of them among ``new``, in file order; ``ValueError`` when a block of lines is damaged."""
        try:
            return list(self._lines(self._listed(phrases, new)))
        except (zlib.error, UnicodeDecodeError) as error:
            raise ValueError(f"a damaged index: {error}") from error

    def _entries(self, phrases: Iterable[str]) -> np.ndarray:
        """The line ids listed under ``phrases``, each once per phrase (phrases of one key counted once)."""
        wanted = np.unique(np.fromiter(map(phrase_key, phrases), dtype=np.uint64))
        if not len(wanted) or not len(self.keys):
            return np.zeros(0, dtype=np.uint64)
        positions = np.minimum(np.searchsorted(self.keys, wanted), len(self.keys) - 1)
        found = positions[self.keys[positions] == wanted].tolist()
        return np.concatenate([self.entries[self.bounds[p] : self.bounds[p + 1]] for p in found]
                              or [np.zeros(0, dtype=np.uint64)])

    def _listed(self, phrases: Iterable[str], new: Iterable[str] | None) -> np.ndarray:
        """The ids of the lines :meth:`lines` reads, ascending."""
        ids, counts = np.unique(self._entries(phrases), return_counts=True)
        ids = ids[counts == self.phrase_counts[ids]]
        if new is not None:
            ids = ids[np.isin(ids, self._entries(new))]
        return ids

    def _lines(self, ids: np.ndarray) -> Iterator[tuple[int, str]]:
        in_block = np.searchsorted(self.block_lines, ids, side="right") - 1
        starts, blocks, text = self.starts, self.blocks, self.text
        begins, ends = starts[ids].tolist(), (starts[ids + 1] - 1).tolist()  # each line without its newline
        current, data, base = -1, b"", 0
        for number, begin, end, b in zip(self.linenos[ids].tolist(), begins, ends, in_block.tolist()):
            if b != current:  # ids ascend: each block is decompressed once
                current, base = b, int(starts[self.block_lines[b]])
                data = zlib.decompress(self._map[text + int(blocks[b]) : text + int(blocks[b + 1])])
            yield number, data[begin - base : end - base].decode("utf-8")


def open_index(where: Path, version: tuple[str, int, int]) -> GrammarIndex | None:
    """The index at ``where`` of the file of ``version`` (path, size, modification time); None when it is
    missing, stale or damaged."""
    key = (str(where), version)
    index = _OPEN.get(key)
    if index is None:
        try:
            index = _OPEN[key] = GrammarIndex(where, version)
        except (OSError, ValueError, KeyError, TypeError, IndexError):
            return None
    return index


def write_index(where: Path, version: tuple[str, int, int], lines: Iterable[tuple[int, str, Iterable[str]]]) -> None:
    """Write atomically at ``where`` the index of the file of ``version`` whose non-blank lines are ``lines``:
    ``(line number, line without its newline, the phrases it is listed under)``."""
    keys, line_ids, starts, linenos = array.array("Q"), array.array("Q"), array.array("q", [0]), array.array("q")
    block_lines, blocks, phrase_counts = array.array("q"), array.array("q", [0]), array.array("q")
    offset, pending = 0, []
    with atomic_open(where, "wb") as out:
        out.write(MAGIC)

        def flush():
            compressed = zlib.compress(b"".join(pending))
            out.write(compressed)
            blocks.append(blocks[-1] + len(compressed))
            pending.clear()

        for lineno, line, phrases in lines:
            line_id = len(linenos)
            line_keys = {phrase_key(phrase) for phrase in phrases}
            for key in line_keys:
                keys.append(key)
                line_ids.append(line_id)
            phrase_counts.append(len(line_keys))
            if not pending:
                block_lines.append(line_id)
            data = line.encode("utf-8") + b"\n"
            pending.append(data)
            offset += len(data)
            starts.append(offset)
            linenos.append(lineno)
            if offset - starts[block_lines[-1]] >= BLOCK:
                flush()
        if pending:
            flush()
        block_lines.append(len(linenos))
        keys_array = np.frombuffer(keys, dtype=np.uint64)
        order = np.argsort(keys_array, kind="stable")  # by phrase, each phrase's lines in file order
        sorted_keys = keys_array[order]
        unique, first = np.unique(sorted_keys, return_index=True)
        arrays = {"keys": unique.astype("<u8"), "bounds": np.append(first, len(sorted_keys)).astype("<i8"),
                  "entries": np.frombuffer(line_ids, dtype=np.uint64)[order].astype("<u8"),
                  "starts": np.frombuffer(starts, dtype=np.int64).astype("<i8"),
                  "block_lines": np.frombuffer(block_lines, dtype=np.int64).astype("<i8"),
                  "blocks": np.frombuffer(blocks, dtype=np.int64).astype("<i8"),
                  "linenos": np.frombuffer(linenos, dtype=np.int64).astype("<i8"),
                  "phrase_counts": np.frombuffer(phrase_counts, dtype=np.int64).astype("<i8")}
        header = {"size": version[1], "mtime_ns": version[2], "text": len(MAGIC)}
        position, crc = len(MAGIC) + blocks[-1], None  # crc: of the bytes from the first array to the header
        for name in _ARRAYS:
            padding = b"\0" * (-position % 8)
            out.write(padding)
            position += len(padding)
            header[name] = [position, len(arrays[name]), arrays[name].dtype.str]
            data = arrays[name].tobytes()
            out.write(data)
            crc = zlib.crc32(data) if crc is None else zlib.crc32(padding + data, crc)
            position += len(data)
        header["crc32"] = crc
        length = 0
        while True:  # the header names the file's length, its own included
            body = json.dumps({**header, "length": length}).encode()
            if position + len(body) + 8 == length:
                break
            length = position + len(body) + 8
        out.write(body + len(body).to_bytes(4, "little") + zlib.crc32(body).to_bytes(4, "little"))
    for key in [key for key in _OPEN if key[0] == str(where)]:
        del _OPEN[key]  # the file replaced: opened again
