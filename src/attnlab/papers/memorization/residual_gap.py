"""Where a trained fit memorizes: the residual level in the widest gap of the residuals.

memorization-capacity-of-mha §3: a model memorizes T examples when its outputs equal the
T labels, y_hat^(t) = y^(t) for every t. A trained fit never reaches that exactly: float64
L-BFGS stops at a relative residual ||y_hat - y|| / ||y|| somewhere between round-off
(1e-16) and how far its iterations went (1e-9 to 1e-6 at d = 64, n = 32), while a fit that
cannot interpolate stalls orders of magnitude higher (1e-1: a tenth of the labels' norm
unexplained). A fixed level such as 1e-8 cuts through the first group's spread: at the text's
size the attention layer ends at 1.7e-8, 9.2e-9 and 1.2e-8 at T = 511, 640, 768, so 1e-8 calls
T = 640 memorized and T = 511 and 768 not.

The rule (one for every fit of a run, written here once). Take the residuals r_1..r_k in
log10, each clipped to [FLOOR, CEILING] (below FLOOR = 1e-12 every fit has memorized, above
CEILING = 1e-2 none has: a relative residual of a per cent is no interpolation), and add FLOOR
and CEILING themselves as the ends. Sort; the widest gap between neighbours,

    (a, b) = argmax over consecutive (u, v) of  log10 v - log10 u,

separates the fits that memorize from those that do not, and the level is its geometric
middle sqrt(a b). A fit memorizes iff r <= sqrt(a b). The ends make the rule total: residuals
that all lie at the floor give the gap up to CEILING (all memorized), residuals that all
stall give the gap down from FLOOR (none). Where the widest gap is narrower than MIN_DECADES
the residuals do not separate and no count of memorized fits should be trusted
(:attr:`GapThreshold.separates`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

from attnlab.errors import ConfigError

FLOOR = 1e-12  # a relative residual at or below it is memorized by every reading
CEILING = 1e-2  # one at or above it is not: a per cent of ||y|| unexplained
MIN_DECADES = 2.0  # a widest gap narrower than this does not separate two groups


@dataclass(frozen=True)
class GapThreshold:
    """The level in the widest gap of the residuals (module docstring).

    level:   sqrt(lower upper): a fit with residual <= level memorizes
    lower:   the residual (or FLOOR) below the gap: the largest that memorizes
    upper:   the residual (or CEILING) above the gap: the smallest that does not
    decades: log10(upper / lower), the width of the gap
    """

    level: float
    lower: float
    upper: float
    decades: float

    @property
    def separates(self) -> bool:
        """The gap is at least MIN_DECADES wide: the residuals fall into two groups."""
        return self.decades >= MIN_DECADES

    def memorized(self, residual: float) -> bool:
        return float(residual) <= self.level

    def __str__(self) -> str:
        lo = f"{self.lower:.2g}" + (" (the floor)" if self.lower == FLOOR else "")
        hi = f"{self.upper:.2g}" + (" (the ceiling)" if self.upper == CEILING else "")
        return (f"relative residual <= {self.level:.2g}, the geometric middle of the residuals' widest gap "
                f"({lo} to {hi}, {self.decades:.1f} decades)")


def gap_threshold(residuals: Iterable[float]) -> GapThreshold:
    """The memorization level of a run's relative residuals: the geometric middle of the widest gap
    between consecutive log10 residuals, clipped to [FLOOR, CEILING] with both ends added (module
    docstring). Raises ConfigError on an empty list or a residual that is negative or not a number."""
    rs = [float(r) for r in residuals]
    if not rs:
        raise ConfigError("gap_threshold needs at least one residual")
    if any(not (r >= 0) or math.isinf(r) for r in rs):
        raise ConfigError(f"residuals must be finite numbers >= 0, got {rs}")
    ends = sorted({min(max(r, FLOOR), CEILING) for r in rs} | {FLOOR, CEILING})
    # the widest gap in log10; max keeps the first (lowest) of equally wide gaps
    a, b = max(zip(ends, ends[1:]), key=lambda ab: math.log10(ab[1]) - math.log10(ab[0]))
    return GapThreshold(level=math.sqrt(a * b), lower=a, upper=b, decades=math.log10(b) - math.log10(a))


__all__ = ["CEILING", "FLOOR", "MIN_DECADES", "GapThreshold", "gap_threshold"]
