"""Translation forests as binary files: the translator's forest cache (``MODEL/cache/*.forest.npz``).

One file holds one :class:`~clirplug.mt.hypergraph.Hypergraph` as a compressed ``.npz`` of arrays, which
loads without rebuilding the graph (its JSON form, :meth:`Hypergraph.save`, is for reading and for other tools):

``heads``, ``tails`` (``E × A``, padded with the node count), ``levels``
    The graph's structure, as the :class:`Hypergraph` holds it.
``data``, ``indices``, ``indptr``
    The ``E × F`` CSR feature matrix; its column names are the header's ``feature_names``.
``shape``
    Each edge's entry in the header's ``shapes``: the distinct ``[template, alignment, rule]`` of the
    edges (the edges of one rule, one per LM state, share theirs), each rule encoded by the caller.
``header``
    UTF-8 JSON: ``format`` (:data:`FORMAT`), ``nodes`` (the labels), ``feature_names``, ``shapes``.

A forest read back is the one written: every label, edge, tail, template, alignment, rule and feature value.
"""

from __future__ import annotations

import json
import zipfile
import zlib
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

from clirplug.atomic import atomic_open
from clirplug.errors import ClirplugError
from clirplug.mt.hypergraph import Hypergraph, _tupled

FORMAT = "clirplug-forest/1"


def save_forest(path, forest: Hypergraph, encode_rule: Callable[[Any], Any] = str) -> None:
    """Write ``forest`` to ``path`` (an ``.npz``) atomically; ``encode_rule`` turns each non-``None`` rule
    into JSON (once per distinct rule object)."""
    encoded: dict[int, Any] = {}
    for rule in forest.rules:
        if rule is not None and id(rule) not in encoded:
            encoded[id(rule)] = encode_rule(rule)
    shapes: dict[str, int] = {}
    shape = np.empty(forest.num_edges, dtype=np.int32)
    for e, (template, alignment, rule) in enumerate(zip(forest.templates, forest.alignments, forest.rules)):
        key = json.dumps([template, alignment, None if rule is None else encoded[id(rule)]], ensure_ascii=False,
                         separators=(",", ":"))
        shape[e] = shapes.setdefault(key, len(shapes))
    header = ('{"format":' + json.dumps(FORMAT) + ',"nodes":' + json.dumps(forest.labels, ensure_ascii=False)
              + ',"feature_names":' + json.dumps(list(forest.feature_names), ensure_ascii=False)
              + ',"shapes":[' + ",".join(shapes) + "]}")
    features = forest.features
    with atomic_open(path, "wb") as out:
        np.savez_compressed(out, header=np.frombuffer(header.encode("utf-8"), dtype=np.uint8),
                            heads=forest.heads.astype(np.int32), tails=forest.tail_matrix.astype(np.int32),
                            levels=forest.levels.astype(np.int32), shape=shape, data=features.data,
                            indices=features.indices, indptr=features.indptr)


def load_forest(path, decode_rule: Callable[[Any], Any] | None = None) -> Hypergraph:
    """The forest :func:`save_forest` wrote to ``path``; ``decode_rule`` maps each non-``None`` rule back.

    Raises
    ------
    ClirplugError
        Naming ``path`` when it cannot be read or is not such a file (of this :data:`FORMAT`).
    """
    try:
        with np.load(path, allow_pickle=False) as arrays:
            header = json.loads(arrays["header"].tobytes())
            if not isinstance(header, dict) or header.get("format") != FORMAT:
                raise ValueError(f"not a forest file of format {FORMAT}")
            heads, tail_matrix, levels, shape = (arrays[name].astype(np.int64)
                                                 for name in ("heads", "tails", "levels", "shape"))
            data, indices, indptr = arrays["data"], arrays["indices"], arrays["indptr"]
        labels, names, shapes = header["nodes"], header["feature_names"], header["shapes"]
        n, m = len(labels), len(heads)
        if (tail_matrix.ndim != 2 or len(tail_matrix) != m or len(levels) != n or len(shape) != m
                or len(indptr) != m + 1 or tail_matrix.min(initial=0) < 0 or tail_matrix.max(initial=n) > n
                or shape.min(initial=0) < 0 or shape.max(initial=-1) >= len(shapes)):
            raise ValueError("its arrays do not fit together")
        features = sp.csr_matrix((data, indices, indptr), shape=(m, len(names)))
        templates, alignments, rules = [], [], []
        for template, alignment, rule in shapes:
            templates.append(tuple(template))
            alignments.append(tuple(map(tuple, alignment)))
            rules.append(decode_rule(rule) if decode_rule is not None and rule is not None else rule)
        picked = shape.tolist()
        return Hypergraph.from_arrays(
            labels=[_tupled(label) for label in labels], heads=heads, tail_matrix=tail_matrix,
            features=features, feature_names=tuple(names), templates=list(map(templates.__getitem__, picked)),
            alignments=list(map(alignments.__getitem__, picked)), rules=list(map(rules.__getitem__, picked)),
            levels=levels)
    except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile, zlib.error) as error:
        raise ClirplugError(f"{path}: cannot read the forest: {error}") from error
