"""The doubly exponential rate of rank collapse, fitted: log10 r_l against 3^l and against l.

Theorem 2.2 of the rank-collapse notes (§2.2) bounds ||res X_L||_{1,inf} by
c^{(3^L - 1)/2} ||res X||^{3^L}: log r_L is then linear in 3^L (doubly exponential decay), where an
exponential decay would be linear in L. Least squares of log10 r_l on 3^l and on l, over the
layers l (from 0) whose r_l is above :data:`FLOOR` (float64 rounding), and the R^2 of each line
say which fits better. Used by rank-collapse.bound on random single-head SANs and on MiniLM's SAN.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from attnlab.analysis.regression import linear_fit
from attnlab.stored import Stored

FLOOR = 1e-13  # relative residuals below this are float64 rounding, left out of the fits


@dataclass(frozen=True)
class DoublyExponentialFit(Stored):
    """Least squares of log10 y_l on 3^l (doubly exponential decay) and on l (exponential), l from 0."""

    points: int  # layers l with y_l > FLOOR, the points fitted
    triple_slope: float | None  # slope of log10 y_l against 3^l (None: fewer than 3 points)
    triple_r2: float | None  # R^2 of that fit (1 where every y is equal; None: fewer than 3 points)
    linear_slope: float | None  # slope of log10 y_l against l (None: fewer than 3 points)
    linear_r2: float | None  # R^2 of that fit (as triple_r2)


def slope_r2(x: list[float], y: list[float]) -> tuple[float | None, float | None]:
    """Slope and R^2 of the least-squares line of y on x; None, None with fewer than 3 points
    (R^2 = 1 where every y is equal, whose R^2 is 0/0)."""
    if len(x) < 3:
        return None, None
    fit = linear_fit(x, y)
    return fit.slope, 1.0 if math.isnan(fit.r2) else fit.r2


def fit_doubly_exponential(ys: list[float]) -> DoublyExponentialFit:
    """Least squares of log10 y_l on 3^l and on l over the points above :data:`FLOOR` (l from 0).

    Slope and R^2 of each fit and how many points were used (None values with < 3 points).
    """
    pts = [(l, math.log10(y)) for l, y in enumerate(ys) if y > FLOOR]
    logs = [v for _, v in pts]
    triple_slope, triple_r2 = slope_r2([3.0**l for l, _ in pts], logs)
    linear_slope, linear_r2 = slope_r2([float(l) for l, _ in pts], logs)
    return DoublyExponentialFit(points=len(pts), triple_slope=triple_slope, triple_r2=triple_r2,
                                linear_slope=linear_slope, linear_r2=linear_r2)
