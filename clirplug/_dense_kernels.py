"""Compiled (numba) kernel of :mod:`clirplug.dense`: the cosines of its numpy reference code, bit for bit.

Each product of two float32 values is exact in float64, and the sums add the same terms in the same order
(halving the columns), so the compiled and the numpy code round to the same float32 on every processor
(tested against each other). Compiled machine code is cached (:func:`clirplug.compiled.compiled`).
"""

import numpy as np

from clirplug.compiled import compiled


@compiled
def cosines(embeddings, vector, out):
    """``out[i]``: row ``i`` of ``embeddings`` (float32) times ``vector`` (float64), summed by halving the columns."""
    rows, width = embeddings.shape
    terms = np.empty(width, np.float64)
    for row in range(rows):
        for column in range(width):
            terms[column] = np.float64(embeddings[row, column]) * vector[column]
        left = width
        while left > 1:
            half = (left + 1) // 2
            for column in range(left - half):
                terms[column] += terms[column + half]
            left = half
        out[row] = np.float32(terms[0])
