"""Benchmark: what the exact path's input checks cost against the fused kernel they guard.

Run by hand (not a test):  .venv/bin/python benchmarks/bench_input_checks.py [--repeats 15] [--note "..."]

``softmax_attention`` checks its inputs before computing (:func:`attnlab.ops.softmax.check_qkv`):
every entry finite, and below float64 no logit q . k beyond the dtype's largest value. The checks
must stay, and cost at most 5% of the operator at n >= 512; the exact path with a dense mask must
stay within 1.1x of the matching fused ``F.scaled_dot_product_attention`` call. Measured here, on
q, k, v of shape (B, H, n, d) = (1, 8, n, 64), float32, CPU, for n in 512, 1024, 2048:

- ``checks``: :func:`check_values` alone, as the operator runs it (one ``torch.aminmax`` per tensor);
- ``checks_before``: the form it replaced, in this file for comparison: per tensor
  ``isfinite(x).sum()``, then ``abs().amax()`` of q and k (two reads and two copies of each);
- ``sdpa_causal`` / ``exact_causal``: ``F.scaled_dot_product_attention(q, k, v, is_causal=True)``
  against ``softmax_attention(q, k, v, causal=True)``;
- ``sdpa_masked`` / ``exact_masked``: the same with a dense boolean mask (a random band, every row
  with at least one key) given to both.

Each quantity is timed ``--repeats`` times, the quantities interleaved round by round so that a
change of load hits them alike; the table gives medians and the ratios of medians from the same
run. torch runs on ``--threads`` threads (default 1) and the clock is the process's CPU time
(``time.process_time``): on one thread that is the work a call does, which another job on the
machine barely changes, where wall time on a loaded machine measures the other job too
(``--clock wall`` for wall time). The 1-minute load average is recorded before and after. Writes
benchmarks/results/input-checks-cpu.json and .md. About a minute on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F

from attnlab.ops.softmax import check_values, softmax_attention
from bench_cli_startup import machine as host

RESULTS = Path(__file__).parent / "results"
GOAL_CHECKS = 0.05
"""The checks' share of the operator's time at n >= 512."""
GOAL_MASKED = 1.1
"""The masked exact path against the matching fused call."""


def checks_before(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> float:
    """The value checks as they were: a count of finite entries per tensor, then max|q| max|k| d."""
    for x in (q, k, v):
        if x.numel() - int(torch.isfinite(x).sum()):
            raise ValueError("non-finite")
    return float(q.abs().amax()) * float(k.abs().amax()) * q.shape[-1]


def band_mask(n: int, width: int, generator: torch.Generator) -> torch.Tensor:
    """(n, n) bool: key j allowed for query i when |i - j| < width, thinned at random (diagonal kept)."""
    i = torch.arange(n)
    band = (i[:, None] - i[None, :]).abs() < width
    keep = torch.rand(n, n, generator=generator) < 0.7
    return (band & keep) | torch.eye(n, dtype=torch.bool)


def median_times(fns: dict[str, Callable[[], object]], repeats: int,
                 clock: Callable[[], float] = time.process_time) -> dict[str, float]:
    """Median seconds per call of each function by ``clock``, timed round-robin (one untimed call each
    first)."""
    for f in fns.values():
        f()
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, f in fns.items():
            start = clock()
            f()
            times[name].append(clock() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def machine() -> str:
    """The CPU, its cores, the OS and Python (:func:`bench_cli_startup.machine`), torch and its threads."""
    return f"{host()}, torch {torch.__version__}, torch threads: {torch.get_num_threads()}"


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=15)
    p.add_argument("--sizes", default="512,1024,2048")
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1: CPU time is then the work)")
    p.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    p.add_argument("--out", type=Path, default=RESULTS)
    p.add_argument("--note", default="", help="A sentence on the conditions (e.g. another job holding a core).")
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    clock = time.process_time if a.clock == "cpu" else time.perf_counter
    g = torch.Generator().manual_seed(0)
    load_before = os.getloadavg()[0]
    start = time.perf_counter()
    rows = []
    for n in (int(s) for s in a.sizes.split(",")):
        q, k, v = (torch.randn(1, 8, n, 64, generator=g) for _ in range(3))
        mask = band_mask(n, max(n // 4, 1), g)
        t = median_times({
            "checks": lambda: check_values(q, k, v),
            "checks_before": lambda: checks_before(q, k, v),
            "sdpa_causal": lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True),
            "exact_causal": lambda: softmax_attention(q, k, v, causal=True),
            "sdpa_masked": lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask),
            "exact_masked": lambda: softmax_attention(q, k, v, mask=mask),
        }, a.repeats, clock)
        rows.append({"n": n, **{f"{name}_ms": 1e3 * s for name, s in t.items()},
                     "checks_share": t["checks"] / t["exact_causal"],
                     "checks_before_share": t["checks_before"] / (t["sdpa_causal"] + t["checks_before"]),
                     "causal_ratio": t["exact_causal"] / t["sdpa_causal"],
                     "masked_ratio": t["exact_masked"] / t["sdpa_masked"]})
    result = {"machine": machine(), "shape": "(1, 8, n, 64) float32", "repeats": a.repeats,
              "clock": "CPU time of the process" if a.clock == "cpu" else "wall time",
              "load_before": load_before, "load_after": os.getloadavg()[0],
              "seconds": time.perf_counter() - start, "note": a.note, "rows": rows,
              "goal_checks_share": GOAL_CHECKS, "goal_masked_ratio": GOAL_MASKED,
              "checks_met": all(r["checks_share"] <= GOAL_CHECKS for r in rows if r["n"] >= 512),
              "masked_met": all(r["masked_ratio"] <= GOAL_MASKED for r in rows if r["n"] >= 512)}
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "input-checks-cpu.json").write_text(json.dumps(result, indent=2) + "\n")
    (a.out / "input-checks-cpu.md").write_text(markdown(result))
    print(markdown(result))
    return result


def markdown(r: dict) -> str:
    """The result as the Markdown page stored beside the JSON."""
    lines = [
        "# Input checks of the exact path against the fused kernel",
        "",
        f"Machine: {r['machine']}; 1-minute load {r['load_before']:.2f} -> {r['load_after']:.2f}; "
        f"{r['seconds']:.0f} s in all. q, k, v {r['shape']}; median {r['clock']} of {r['repeats']} interleaved "
        "calls each. "
        "Produced by benchmarks/bench_input_checks.py.",
    ]
    if r["note"]:
        lines.append(f"Conditions: {r['note']}")
    lines += [
        "",
        "| n | checks ms | checks before ms | SDPA causal ms | exact causal ms | checks / exact | "
        "before / (SDPA + before) | exact / SDPA causal | SDPA masked ms | exact masked ms | exact / SDPA masked |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for x in r["rows"]:
        lines.append(
            f"| {x['n']} | {x['checks_ms']:.2f} | {x['checks_before_ms']:.2f} | {x['sdpa_causal_ms']:.2f} | "
            f"{x['exact_causal_ms']:.2f} | {100 * x['checks_share']:.1f}% | {100 * x['checks_before_share']:.1f}% | "
            f"{x['causal_ratio']:.3f} | {x['sdpa_masked_ms']:.2f} | {x['exact_masked_ms']:.2f} | "
            f"{x['masked_ratio']:.3f} |")
    lines += [
        "",
        f"Checks <= {100 * r['goal_checks_share']:.0f}% of the operator at n >= 512: "
        f"{'met' if r['checks_met'] else 'NOT met'} in this run. Masked exact <= {r['goal_masked_ratio']}x "
        f"fused: {'met' if r['masked_met'] else 'NOT met'} in this run.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
