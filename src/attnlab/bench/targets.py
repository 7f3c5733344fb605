"""What a benchmark run concludes: crossover n per variant, memory slopes, the targets.

Crossover (vs fused SDPA of the same causality): with r(n) = time / time_SDPA at the
measured n, the crossover is the n where r passes 1 for the last time, interpolated
linearly in (log n, log r) between the last measured n with r >= 1 and the next one;
"faster throughout" when r < 1 at every n, "slower throughout" when r >= 1 at the largest.

Memory slope: the least-squares slope of log(peak) against log(n) over the measured n
(1: linear in n, 2: quadratic), measured in rounds and decided from their median and spread,
or declared noise ("inconclusive: noisy"): stability.py. A memory target fails when one of
its variants' slopes is decided above the limit, is noisy when none is and one is undecided,
and says how many rounds (repeats) decided it.

Targets, evaluated at n = TARGET_N (not measured there: status "not measured"):
  causal-linear-speedup   time(sdpa-causal) / time(linear-causal)          >= 5
  window-speedup          time(sdpa) / time(fastest sliding window backend) >= 10
  exact-softmax-overhead  time(softmax) / time(sdpa)                        <= 1.2
  masked-exact-overhead   largest time(masked exact path) / time(its fused reference) <= 1.2
  linear-memory           largest memory slope among the O(n) variants      <= 1.2
  masked-exact-memory     largest memory slope among the masked exact paths <= 1.2
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from attnlab.bench.stability import NOISY, SlopeVerdict, round_slopes, slope_verdict

TARGET_N = 8192
SLOPE_LIMIT = 1.2
WINDOW_VARIANTS = ("window-flex", "window-gather")
REFERENCES = ("sdpa", "sdpa-causal", "sdpa-padding")


def _ok(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["status"] == "ok"]


def crossover(points: list[tuple[int, float]]) -> dict:
    """points: (n, ratio) pairs; the crossover as in the module docstring."""
    pts = sorted(points)
    if not pts:
        return {"status": "not measured", "crossover_n": None}
    if all(r < 1 for _, r in pts):
        return {"status": "faster throughout", "crossover_n": None, "first_n": pts[0][0]}
    if pts[-1][1] >= 1:
        return {"status": "slower throughout", "crossover_n": None, "last_n": pts[-1][0]}
    i = max(j for j, (_, r) in enumerate(pts) if r >= 1)
    (n0, r0), (n1, r1) = pts[i], pts[i + 1]
    t = math.log(r0) / (math.log(r0) - math.log(r1))  # where log r reaches 0, in [0, 1)
    return {"status": "crosses", "crossover_n": math.exp(math.log(n0) + t * (math.log(n1) - math.log(n0))),
            "between": [n0, n1]}


def crossovers(rows: list[dict]) -> dict[str, dict]:
    out = {}
    for name in dict.fromkeys(r["variant"] for r in rows):
        if name in REFERENCES:
            continue
        pts = [(r["n"], r["ratio"]) for r in _ok(rows) if r["variant"] == name and r["ratio"]]
        out[name] = crossover(pts)
    return out


def memory_slopes(rows: list[dict]) -> dict[str, float | None]:
    """Every variant's memory slope: the median of its rounds' slopes (None: not measured)."""
    return {name: slope_verdict(round_slopes(rows, name), SLOPE_LIMIT).median
            for name in dict.fromkeys(r["variant"] for r in rows)}


def memory_verdicts(rows: list[dict], names: Sequence[str]) -> dict[str, SlopeVerdict]:
    """The slope verdict (stability.py) of each of ``names`` that has a slope."""
    out = {name: slope_verdict(round_slopes(rows, name), SLOPE_LIMIT) for name in names}
    return {name: v for name, v in out.items() if v.status != "not measured"}


def memory_target_variants(rows: list[dict]) -> dict[str, list[str]]:
    """The variants each memory target judges: the O(n) ones and the masked exact paths."""
    names = list(dict.fromkeys(r["variant"] for r in rows))
    return {"linear-memory": [k for k in names if any(r["variant"] == k and r["order"] == "linear" for r in rows)],
            "masked-exact-memory": [k for k in names if any(r["variant"] == k and r.get("masked") for r in rows)]}


def _time(rows: list[dict], name: str, n: int) -> float | None:
    for r in _ok(rows):
        if r["variant"] == name and r["n"] == n:
            return r["time_ms"]
    return None


def _target(name: str, statement: str, measured: Any, relation: str, limit: float, detail: str = "") -> dict:
    if measured is None:
        status = "not measured"
    else:
        status = "pass" if (measured >= limit if relation == ">=" else measured <= limit) else "FAIL"
    return {"target": name, "statement": statement, "measured": measured, "relation": relation,
            "limit": limit, "status": status, "detail": detail, "repeats": None}


def _memory_target(name: str, statement: str, verdicts: dict[str, SlopeVerdict]) -> dict:
    """A slope target: FAIL when a variant is decided above the limit, noisy when one is undecided, else
    pass; measured: the largest median slope; detail: the rounds that decided it and every slope."""
    target = _target(name, statement, None, "<=", SLOPE_LIMIT)
    if not verdicts:
        return target
    statuses = {v.status for v in verdicts.values()}
    status = "FAIL" if "FAIL" in statuses else NOISY if NOISY in statuses else "pass"
    rounds = [v.rounds for v in verdicts.values()]
    repeats = (f"{rounds[0]} memory repeat" + "s" * (rounds[0] != 1) if len(set(rounds)) == 1
               else f"{min(rounds)}-{max(rounds)} memory repeats")
    slopes = ", ".join(f"{k} {v.median:.2f}" + ("" if v.decided else f" (noisy: {min(v.slopes):.2f}-"
                                                  f"{max(v.slopes):.2f})") for k, v in verdicts.items())
    return {**target, "measured": max(v.median for v in verdicts.values()), "status": status,
            "repeats": max(rounds), "detail": f"decided by {repeats}; {slopes}" if status != NOISY
            else f"noisy after {repeats}; {slopes}"}


def _speedup(rows: Sequence[dict], ref: str, fast: str, n: int) -> float | None:
    a, b = _time(rows, ref, n), _time(rows, fast, n)
    return a / b if a and b else None


def evaluate_targets(rows: list[dict], n: int = TARGET_N) -> list[dict]:
    """The targets of the module docstring, each with status pass/FAIL/not measured (a memory target
    also "inconclusive: noisy", and ``repeats``: the most rounds one of its variants took)."""
    lin = _speedup(rows, "sdpa-causal", "linear-causal", n)
    windows = {w: _speedup(rows, "sdpa", w, n) for w in WINDOW_VARIANTS}
    best = max((w for w in windows if windows[w]), key=lambda w: windows[w], default=None)
    exact = _time(rows, "softmax", n), _time(rows, "sdpa", n)
    overhead = exact[0] / exact[1] if all(exact) else None
    masked = list(dict.fromkeys(r["variant"] for r in rows if r.get("masked")))
    masked_ratios = {m: r["ratio"] for m in masked for r in _ok(rows)
                     if r["variant"] == m and r["n"] == n and r["ratio"]}
    worst_ratio = max(masked_ratios, key=masked_ratios.get, default=None)
    judged = memory_target_variants(rows)
    return [
        _target("causal-linear-speedup", f"n={n}: causal linear attention >= 5x faster than fused causal softmax",
                lin, ">=", 5.0),
        _target("window-speedup", f"n={n}: sliding window (w=256) >= 10x faster than full fused attention",
                windows[best] if best else None, ">=", 10.0,
                f"{best}; " + ", ".join(f"{w} {s:.3g}x" for w, s in windows.items() if s) if best else ""),
        _target("exact-softmax-overhead", f"n={n}: the exact softmax path within 1.2x of the fused kernel",
                overhead, "<=", 1.2),
        _target("masked-exact-overhead",
                f"n={n}: every masked exact path (causal, padding, both) within 1.2x of its fused reference",
                masked_ratios[worst_ratio] if worst_ratio else None, "<=", 1.2,
                ", ".join(f"{k} {x:.3g}x" for k, x in masked_ratios.items())),
        _memory_target("linear-memory",
                       f"peak memory of the O(n) variants linear in n (log-log slope <= {SLOPE_LIMIT})",
                       memory_verdicts(rows, judged["linear-memory"])),
        _memory_target("masked-exact-memory",
                       f"peak memory of the masked exact paths linear in n (log-log slope <= {SLOPE_LIMIT})",
                       memory_verdicts(rows, judged["masked-exact-memory"])),
    ]
