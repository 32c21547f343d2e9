"""Writes erf_table.h: the polynomials of e5.c's GELU, erf(t) on 16 intervals of [0, 4).

Interval i holds t in [i/4, (i+1)/4); its polynomial in s = 8t - (2i + 1) (s in [-1, 1]) interpolates erf at
the 10 Chebyshev points of the interval, computed with mpmath at 40 digits; its largest error on the interval is
below 5e-15. The coefficients are written as hexadecimal floats, so every compiler reads the same doubles.

    python clirplug/e5engine/make_erf_table.py > clirplug/e5engine/erf_table.h
"""

import mpmath
import numpy as np

INTERVALS, DEGREE = 16, 9


def coefficients(i: int) -> np.ndarray:
    """Power-basis coefficients (constant first) of interval ``i``'s polynomial in s."""
    points = np.cos(np.pi * (np.arange(DEGREE + 1) + 0.5) / (DEGREE + 1))
    values = [float(mpmath.erf((mpmath.mpf(2 * i + 1) + mpmath.mpf(float(s))) / 8)) for s in points]
    return np.polynomial.chebyshev.cheb2poly(np.polynomial.chebyshev.chebfit(points, values, DEGREE))


def main() -> None:
    mpmath.mp.dps = 40
    print("/* erf(t) for t in [i/4, (i+1)/4): sum_k ERF_POLY[i][k] s^k, s = 8t - (2i + 1). Written by"
          " make_erf_table.py. */")
    print(f"#define ERF_INTERVALS {INTERVALS}\n#define ERF_DEGREE {DEGREE}")
    print("static const double ERF_POLY[ERF_INTERVALS][ERF_DEGREE + 1] = {")
    for i in range(INTERVALS):
        print("    {" + ", ".join(float(c).hex() for c in coefficients(i)) + "},")
    print("};")


if __name__ == "__main__":
    main()
