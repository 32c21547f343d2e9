"""Lexical translation tables ``p(tgt | src)``: lookup, text form (``src tgt prob``) and binary form.

The text form has one entry a line, ``src tgt prob`` separated by single spaces, sorted by
source word then by falling probability. Moses' ``lex.e2f`` / ``lex.f2e`` files put the
predicted word first (``e f p(e|f)``); :meth:`LexicalTable.load_moses` reads those. The binary
form (``.npz``) holds both vocabularies and the CSR matrix and loads in a fraction of a second.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
import scipy.sparse

from clirplug.atomic import atomic_open
from clirplug.errors import ClirplugError
from clirplug.io.npz import read_arrays

FORMAT = "clirplug-lexicon-1"


class LexicalTable:
    """A sparse table ``p(tgt | src)``; row ``src_vocab[k]`` of ``matrix`` is that word's distribution."""

    def __init__(self, src_vocab: list[str], tgt_vocab: list[str], matrix: scipy.sparse.csr_matrix):
        if matrix.shape != (len(src_vocab), len(tgt_vocab)):
            raise ClirplugError(f"lexical table: matrix shape {matrix.shape} does not match the vocabularies")
        self.src_vocab, self.tgt_vocab = list(src_vocab), list(tgt_vocab)
        self.matrix = matrix.tocsr()
        self.matrix.sort_indices()
        self._src_index = {word: k for k, word in enumerate(self.src_vocab)}
        self._tgt_index = {word: k for k, word in enumerate(self.tgt_vocab)}

    def __len__(self) -> int:
        """Number of stored entries."""
        return int(self.matrix.nnz)

    def __contains__(self, src: str) -> bool:
        """Whether ``src`` has at least one translation."""
        row = self._src_index.get(src)
        return row is not None and self.matrix.indptr[row + 1] > self.matrix.indptr[row]

    def translations(self, src: str) -> dict[str, float]:
        """``{tgt: p(tgt | src)}`` by falling probability (ties by word); empty if ``src`` is unknown."""
        row = self._src_index.get(src)
        if row is None:
            return {}
        lo, hi = self.matrix.indptr[row], self.matrix.indptr[row + 1]
        cols, probs = self.matrix.indices[lo:hi], self.matrix.data[lo:hi]
        words = [self.tgt_vocab[c] for c in cols]
        order = sorted(range(len(words)), key=lambda k: (-probs[k], words[k]))
        return {words[k]: float(probs[k]) for k in order}

    def prob(self, src: str, tgt: str) -> float:
        """``p(tgt | src)``, 0.0 when the pair is not in the table."""
        row, col = self._src_index.get(src), self._tgt_index.get(tgt)
        if row is None or col is None:
            return 0.0
        return float(self.matrix[row, col])

    @classmethod
    def from_entries(cls, entries: Iterable[tuple[str, str, float]], where: str = "entries") -> LexicalTable:
        """Build a table from ``(src, tgt, prob)`` triples; a repeated pair is an error."""
        src_index: dict[str, int] = {}
        tgt_index: dict[str, int] = {}
        rows, cols, probs = [], [], []
        for src, tgt, prob in entries:
            rows.append(src_index.setdefault(src, len(src_index)))
            cols.append(tgt_index.setdefault(tgt, len(tgt_index)))
            probs.append(prob)
        matrix = scipy.sparse.coo_matrix(
            (np.asarray(probs, dtype=np.float64), (np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64))),
            shape=(len(src_index), len(tgt_index)),
        )
        keys = np.asarray(rows, dtype=np.int64) * max(len(tgt_index), 1) + np.asarray(cols, dtype=np.int64)
        if len(np.unique(keys)) != len(keys):
            raise ClirplugError(f"{where}: a (source, target) pair occurs twice")
        return cls(list(src_index), list(tgt_index), matrix.tocsr())

    def entries(self) -> Iterable[tuple[str, str, float]]:
        """All ``(src, tgt, prob)`` entries, sources sorted, then by falling probability."""
        for row in sorted(range(len(self.src_vocab)), key=self.src_vocab.__getitem__):
            lo, hi = self.matrix.indptr[row], self.matrix.indptr[row + 1]
            cols, probs = self.matrix.indices[lo:hi], self.matrix.data[lo:hi]
            src = self.src_vocab[row]
            for k in np.lexsort((cols, -probs)):
                yield src, self.tgt_vocab[cols[k]], float(probs[k])

    def save_text(self, path) -> None:
        """Write :meth:`entries` as ``src tgt prob`` lines (atomically)."""
        with atomic_open(path) as out:
            out.writelines(f"{src} {tgt} {prob:.8g}\n" for src, tgt, prob in self.entries())

    @classmethod
    def load_moses(cls, path) -> LexicalTable:
        """Read a Moses ``lex.e2f`` / ``lex.f2e`` file, lines ``x y p(x|y)``, as ``p(x | y)`` keyed by ``y``."""
        return cls.from_entries(_read_moses(path), where=str(path))

    def save(self, path) -> None:
        """Write the binary ``.npz`` form (atomically)."""
        with atomic_open(path, "wb") as out:
            np.savez(
                out, format=np.array(FORMAT), src_vocab=np.array("\n".join(self.src_vocab)),
                tgt_vocab=np.array("\n".join(self.tgt_vocab)), indptr=self.matrix.indptr,
                indices=self.matrix.indices, data=self.matrix.data,
            )

    @classmethod
    def load(cls, path) -> LexicalTable:
        """Read a file written by :meth:`save`."""
        npz = read_arrays(path, "lexical table")
        try:
            if str(npz["format"]) != FORMAT:
                raise ClirplugError(f"{path}: not a {FORMAT} file")
            src_vocab = str(npz["src_vocab"]).split("\n") if str(npz["src_vocab"]) else []
            tgt_vocab = str(npz["tgt_vocab"]).split("\n") if str(npz["tgt_vocab"]) else []
            matrix = scipy.sparse.csr_matrix(
                (npz["data"], npz["indices"], npz["indptr"]), shape=(len(src_vocab), len(tgt_vocab)))
        except (KeyError, ValueError, TypeError) as error:
            raise ClirplugError(f"{path}: not a lexical table ({error})") from error
        bad = np.flatnonzero(~((matrix.data >= 0) & (matrix.data <= 1)))  # NaN included
        if len(bad):
            row = int(np.searchsorted(matrix.indptr, bad[0], side="right")) - 1
            raise ClirplugError(f"{path}: p({tgt_vocab[matrix.indices[bad[0]]]!r} | {src_vocab[row]!r}) = "
                                f"{matrix.data[bad[0]]:g} is outside [0, 1] ({len(bad)} such entries)")
        return cls(src_vocab, tgt_vocab, matrix)


def word_by_word(model_dir, lang: str = "de") -> Callable[[str], list[str]]:
    """``line -> words``: word-by-word translation with a model folder's ``lex.e_given_f.npz``, each token of the
    line (tokenized as the folder's source side) by its most probable translation ``p(e|f)``, a token without one
    copied (the baseline among an experiment's translation outputs)."""
    from clirplug.mt.preprocess import preprocessor

    table = LexicalTable.load(Path(model_dir) / "lex.e_given_f.npz")
    tokenize = preprocessor(lang, model_dir)
    return lambda line: [next(iter(table.translations(token)), token) for token in tokenize(line)]


def _read_moses(path):
    """Yield ``(y, x, p(x|y))`` of each ``x y p(x|y)`` line of a Moses lexical table."""
    try:
        handle = open(path, encoding="utf-8")
    except OSError as error:
        raise ClirplugError(f"{path}: cannot open ({error.strerror})") from error
    with handle:
        for lineno, line in enumerate(handle, start=1):
            fields = line.split()
            if not fields:
                continue
            try:
                if len(fields) != 3:
                    raise ValueError
                prob = float(fields[2])
            except ValueError:
                raise ClirplugError(f"{path}:{lineno}: expected 'word word probability'") from None
            if not 0.0 <= prob <= 1.0:
                raise ClirplugError(f"{path}:{lineno}: probability {fields[2]} is outside [0, 1]")
            yield fields[1], fields[0], prob
