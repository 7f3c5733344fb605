"""Straight-line least squares, computed the same way on every machine.

For points (x_i, y_i), i = 1..m, the fit y = a x + b minimising sum_i (y_i - a x_i - b)^2 is

    a = S_xy / S_xx,   b = ybar - a xbar,   R^2 = 1 - SS_res / SS_tot,

with xbar, ybar the means, S_xy = sum (x_i - xbar)(y_i - ybar), S_xx = sum (x_i - xbar)^2,
SS_res = sum (y_i - a x_i - b)^2 and SS_tot = sum (y_i - ybar)^2.

Every sum is :func:`math.fsum` (correctly rounded), so the result does not depend on the
thread count or the BLAS of the machine, unlike a LAPACK least-squares solve: a run and its
rerun give bitwise-equal slopes, which the experiments' determinism tests assert.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

__all__ = ["LineFit", "linear_fit"]


class LineFit(NamedTuple):
    """y = slope x + intercept; r2 is nan when y is constant (SS_tot = 0)."""

    slope: float
    intercept: float
    r2: float


def linear_fit(x: Sequence[float], y: Sequence[float]) -> LineFit:
    """Least-squares line through (x_i, y_i) (module formulas).

    Args:
        x, y: equal-length sequences of at least 2 finite numbers, x not constant.

    Raises:
        ValueError: lengths differ, fewer than 2 points, or x constant (the slope is undefined).
    """
    xs, ys = [float(v) for v in x], [float(v) for v in y]
    if len(xs) != len(ys):
        raise ValueError(f"linear_fit: x has {len(xs)} points and y has {len(ys)}; pass equal lengths")
    m = len(xs)
    if m < 2:
        raise ValueError(f"linear_fit: a line needs at least 2 points, got {m}")
    xbar, ybar = math.fsum(xs) / m, math.fsum(ys) / m
    sxx = math.fsum((u - xbar) ** 2 for u in xs)
    if sxx == 0:
        raise ValueError("linear_fit: every x is equal, so the slope is undefined; pass at least two distinct x")
    a = math.fsum((u - xbar) * (v - ybar) for u, v in zip(xs, ys)) / sxx
    b = ybar - a * xbar
    ss_tot = math.fsum((v - ybar) ** 2 for v in ys)
    ss_res = math.fsum((v - a * u - b) ** 2 for u, v in zip(xs, ys))
    return LineFit(a, b, 1.0 - ss_res / ss_tot if ss_tot > 0 else float("nan"))
