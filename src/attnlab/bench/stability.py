"""A memory slope decided from repeated rounds, or declared noise.

One peak-memory measurement (memory.py) is the process's resident-set high-water mark,
so it carries the allocator's choices (a freed block kept or handed back): one run's
log-log slope of peak against n can land on either side of a limit (FAVOR+ measured
1.35, then 0.98, in two identical runs). So the slope is measured in rounds: round i
is one peak per n, its slope s_i the least-squares slope of log(peak_i) against log(n)
(targets.py). Over r rounds

    median  m = median(s_1 .. s_r)
    spread  IQR = q3 - q1 of s_1 .. s_r (0 for one round)
    margin  |m - limit|

and the verdict is decided when margin > IQR (or IQR = 0): pass when m <= limit, FAIL
otherwise. The benchmark measures at least MIN_ROUNDS rounds and adds one round at a time
while a verdict is undecided, up to MAX_ROUNDS; one still undecided then is
"inconclusive: noisy": the measurement cannot tell which side of the limit the slope is on.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

MIN_ROUNDS = 3
MAX_ROUNDS = 9
NOISY = "inconclusive: noisy"


@dataclass(frozen=True)
class SlopeVerdict:
    """slopes: one per round; median, spread (IQR) of them; status: pass, FAIL, NOISY or "not measured"."""

    slopes: tuple[float, ...]
    median: float | None
    spread: float | None
    status: str

    @property
    def rounds(self) -> int:
        return len(self.slopes)

    @property
    def decided(self) -> bool:
        return self.status in ("pass", "FAIL")


def loglog_slope(xs: list[float], ys: list[float | None]) -> float | None:
    """Least-squares slope of log y against log x over the points with x, y > 0 (None with fewer
    than 2 distinct x)."""
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys) if x > 0 and y is not None and y > 0]
    if len({p[0] for p in pts}) < 2:
        return None
    mx = sum(p[0] for p in pts) / len(pts)
    my = sum(p[1] for p in pts) / len(pts)
    return sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)


def peak_rounds(row: dict) -> list[float | None]:
    """A row's peaks in MiB, one per round (a row without rounds: its one peak_mb)."""
    return list(row.get("peak_mb_rounds") or [row.get("peak_mb")])


def round_slopes(rows: list[dict], name: str) -> tuple[float, ...]:
    """The slope of each round of variant ``name`` over its ok rows (rounds every n has)."""
    ok = [r for r in rows if r["variant"] == name and r["status"] == "ok"]
    if not ok:
        return ()
    rounds = min(len(peak_rounds(r)) for r in ok)
    slopes = (loglog_slope([r["n"] for r in ok], [peak_rounds(r)[i] for r in ok]) for i in range(rounds))
    return tuple(s for s in slopes if s is not None)


def slope_verdict(slopes: tuple[float, ...], limit: float) -> SlopeVerdict:
    """The verdict of the module docstring on ``slopes`` (one per round) against ``slope <= limit``."""
    if not slopes:
        return SlopeVerdict((), None, None, "not measured")
    if len(slopes) == 1:
        m, spread = slopes[0], 0.0
    else:
        q1, m, q3 = statistics.quantiles(sorted(slopes), n=4, method="inclusive")
        spread = q3 - q1
    decided = spread == 0 or abs(m - limit) > spread
    status = ("pass" if m <= limit else "FAIL") if decided else NOISY
    return SlopeVerdict(tuple(slopes), m, spread, status)


def wants_rounds(verdict: SlopeVerdict) -> bool:
    """Whether another round is to be measured: fewer than MIN_ROUNDS, or undecided below MAX_ROUNDS."""
    if verdict.status == "not measured" or verdict.rounds >= MAX_ROUNDS:
        return False
    return verdict.rounds < MIN_ROUNDS or not verdict.decided
