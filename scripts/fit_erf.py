#!/usr/bin/python3
"""The coefficients of dynvm's f32 erf (kernels/codegen/math_ir.cc, emit_erf).

    |x| <  0.921875:  erf(x) = x * P(x^2),          P of degree 5
    |x| >= 0.921875:  erf(x) = 1 - exp(Q(|x|)),     Q of degree 6 on [0.921875, 3.925]

Both are weighted least-squares fits on dense grids, reweighted by Lawson's iteration
towards the minimax (equal-ripple) error, in the error that matters: erf's relative error
(for Q: the error in log(erfc) times erfc / erf). References from mpmath at 30 digits
(Debian's python3-mpmath). Prints the coefficients highest power first (Horner order, as
emit_erf lists them) and the fits' maximum relative errors before f32 rounding.
Run: /usr/bin/python3 scripts/fit_erf.py
"""
import mpmath
import numpy as np

mpmath.mp.dps = 30
SPLIT, TOP = 0.921875, 3.925


def lawson(basis, target, weight, iterations=60):
    """Coefficients minimizing max |basis @ c - target| * weight (approximately)."""
    w = np.ones_like(target)
    for _ in range(iterations):
        c, *_ = np.linalg.lstsq(basis * (weight * w)[:, None], target * weight * w, rcond=None)
        err = np.abs(basis @ c - target) * weight
        w = w * np.sqrt(err / err.max()) + 1e-12
        w /= w.max()
    return c, (np.abs(basis @ c - target) * weight).max()


def main():
    x = np.linspace(1e-4, SPLIT, 4000)
    ratio = np.array([float(mpmath.erf(v) / v) for v in x])  # erf(x) / x = P(x^2)
    p, p_err = lawson(np.vstack([x ** (2 * k) for k in range(6)]).T, ratio, 1 / ratio)
    a = np.linspace(SPLIT, TOP, 6000)
    log_erfc = np.array([float(mpmath.log(mpmath.erfc(v))) for v in a])
    erfc = np.exp(log_erfc)
    q, q_err = lawson(np.vstack([a ** k for k in range(7)]).T, log_erfc, erfc / (1 - erfc))
    print("P (of x^2):", ", ".join(repr(float(c)) for c in p[::-1]), f"  max rel {p_err:.2g}")
    print("Q (of |x|):", ", ".join(repr(float(c)) for c in q[::-1]), f"  max rel {q_err:.2g}")


if __name__ == "__main__":
    main()
