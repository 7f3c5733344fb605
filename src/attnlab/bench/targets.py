"""What a benchmark run concludes: crossover n per variant, memory slopes, the targets.

Crossover (vs fused SDPA of the same causality): with r(n) = time / time_SDPA at the
measured n, the crossover is the n where r passes 1 for the last time, interpolated
linearly in (log n, log r) between the last measured n with r >= 1 and the next one;
"faster throughout" when r < 1 at every n, "slower throughout" when r >= 1 at the largest.

Memory slope: the least-squares slope of log(peak) against log(n) over the measured n
(1: linear in n, 2: quadratic).

Targets, evaluated at n = TARGET_N (not measured there: status "not measured"):
  causal-linear-speedup   time(sdpa-causal) / time(linear-causal)          >= 5
  window-speedup          time(sdpa) / time(fastest sliding window backend) >= 10
  exact-softmax-overhead  time(softmax) / time(sdpa)                        <= 1.2
  masked-exact-overhead   largest time(masked exact path) / time(its fused reference) <= 1.2
  linear-memory           largest memory slope among the O(n) variants      <= 1.2
  masked-exact-memory     largest memory slope among the masked exact paths <= 1.2
"""

from __future__ import annotations

from typing import Any, Sequence

import math

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


def loglog_slope(xs: list[float], ys: list[float]) -> float | None:
    """Least-squares slope of log y against log x (None with fewer than 2 points)."""
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys) if x > 0 and y is not None and y > 0]
    if len({p[0] for p in pts}) < 2:
        return None
    mx = sum(p[0] for p in pts) / len(pts)
    my = sum(p[1] for p in pts) / len(pts)
    return sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)


def memory_slopes(rows: list[dict]) -> dict[str, float | None]:
    out = {}
    for name in dict.fromkeys(r["variant"] for r in rows):
        ok = [r for r in _ok(rows) if r["variant"] == name and r["peak_mb"]]
        out[name] = loglog_slope([r["n"] for r in ok], [r["peak_mb"] for r in ok])
    return out


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
            "limit": limit, "status": status, "detail": detail}


def _speedup(rows: Sequence[dict], ref: str, fast: str, n: int) -> float | None:
    a, b = _time(rows, ref, n), _time(rows, fast, n)
    return a / b if a and b else None


def evaluate_targets(rows: list[dict], n: int = TARGET_N) -> list[dict]:
    """The targets of the module docstring, each with status pass/FAIL/not measured."""
    lin = _speedup(rows, "sdpa-causal", "linear-causal", n)
    windows = {w: _speedup(rows, "sdpa", w, n) for w in WINDOW_VARIANTS}
    best = max((w for w in windows if windows[w]), key=lambda w: windows[w], default=None)
    exact = _time(rows, "softmax", n), _time(rows, "sdpa", n)
    overhead = exact[0] / exact[1] if all(exact) else None
    all_slopes = memory_slopes(rows)
    slopes = {k: s for k, s in all_slopes.items()
              if s is not None and any(r["variant"] == k and r["order"] == "linear" for r in rows)}
    worst = max(slopes, key=slopes.get, default=None)
    masked = list(dict.fromkeys(r["variant"] for r in rows if r.get("masked")))
    masked_ratios = {m: r["ratio"] for m in masked for r in _ok(rows)
                     if r["variant"] == m and r["n"] == n and r["ratio"]}
    worst_ratio = max(masked_ratios, key=masked_ratios.get, default=None)
    masked_slopes = {m: all_slopes[m] for m in masked if all_slopes.get(m) is not None}
    worst_slope = max(masked_slopes, key=masked_slopes.get, default=None)
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
        _target("linear-memory", f"peak memory of the O(n) variants linear in n (log-log slope <= {SLOPE_LIMIT})",
                slopes[worst] if worst else None, "<=", SLOPE_LIMIT,
                ", ".join(f"{k} {s:.2f}" for k, s in slopes.items())),
        _target("masked-exact-memory",
                f"peak memory of the masked exact paths linear in n (log-log slope <= {SLOPE_LIMIT})",
                masked_slopes[worst_slope] if worst_slope else None, "<=", SLOPE_LIMIT,
                ", ".join(f"{k} {s:.2f}" for k, s in masked_slopes.items())),
    ]
