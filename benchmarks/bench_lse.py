"""Benchmark: peak memory and time of the exact weights of a 128-row block, attention_rows
(row log-sum-exp, attnlab.ops.lse), against the materialised softmax(c Q K^T) (n x n).

Run by hand (not a test):  .venv/bin/python benchmarks/bench_lse.py [--n 1024,2048] [--repeats R]

Workload: q, k of shape (1, 1, n, 64), float32, on the CPU, n = 1024 ... 16384; the block is
the last 128 queries, every key allowed (no mask). Two ways to get P[rows, :]:

  rows      attention_rows(q, k, slice(n - 128, n)): the block's L_i from the fused kernel
            (method "auto"), then exp(c q_i . k_j - L_i) for the block only;
  baseline  torch.softmax((q @ k^T) * c, -1)[..., rows, :]: the whole n x n matrix.

Memory is reported two ways (benchmarks/README.md):

  analytic  the bytes of the tensors each path holds at its peak, from their shapes:
            rows     b n 4 (the block's logits, turned into P in place) + b d 4 (the kernel's
                     discarded output) + b 4 (L); the kernel's own per-thread tiles are not
                     counted (they do not depend on n);
            baseline 2 n^2 4 (Q K^T and its scaled copy, then the scaled copy and softmax).
  measured  the resident-set high-water mark of one call above the memory resident before it
            (attnlab.bench.memory.peak_memory): every page written, torch's or not, with the
            allocator's noise (small blocks come from pages already resident and can read 0).

OMP_WAIT_POLICY=PASSIVE is set before torch loads: spinning OpenMP workers are many times
slower when the cores are shared. Every ratio is baseline / rows, both measured in the same
run. Writes
benchmarks/results/lse-cpu.json and benchmarks/results/lse-cpu.md. Under a minute on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402

from attnlab.bench.memory import peak_memory  # noqa: E402
from attnlab.bench.timing import time_call  # noqa: E402
from attnlab.ops import attention_rows  # noqa: E402

RESULTS = Path(__file__).parent / "results"
NS = (1024, 2048, 4096, 8192, 16384)
BLOCK, D = 128, 64


def _mib(x: float | None) -> float | None:
    return None if x is None else x / 2**20


def measure(n: int, repeats: int) -> dict:
    g = torch.Generator().manual_seed(n)
    q = torch.randn(1, 1, n, D, generator=g)
    k = torch.randn(1, 1, n, D, generator=g)
    c = 1 / math.sqrt(D)
    rows = slice(n - BLOCK, n)

    def by_rows():
        return attention_rows(q, k, rows)

    def baseline():
        return torch.softmax((q @ k.transpose(-2, -1)) * c, dim=-1)[..., rows, :]

    err = (by_rows() - baseline()).abs().max().item()
    mem_rows = peak_memory(by_rows)
    mem_base = peak_memory(baseline)
    t_rows = time_call(by_rows, repeats=repeats)
    t_base = time_call(baseline, repeats=max(1, repeats // 2 + 1))
    analytic_rows = 4 * (BLOCK * n + BLOCK * D + BLOCK)
    analytic_base = 4 * 2 * n * n
    return {
        "n": n,
        "rows_ms": 1e3 * t_rows.median_s, "baseline_ms": 1e3 * t_base.median_s,
        "rows_iqr_ms": 1e3 * t_rows.iqr_s, "baseline_iqr_ms": 1e3 * t_base.iqr_s,
        "time_ratio": t_base.median_s / t_rows.median_s,
        "rows_analytic_mib": _mib(analytic_rows), "baseline_analytic_mib": _mib(analytic_base),
        "rows_measured_mib": _mib(mem_rows.bytes), "baseline_measured_mib": _mib(mem_base.bytes),
        "memory_method": mem_rows.method,
        "max_abs_error": err,
        "threads": t_rows.threads,
    }


def slope(xs: list[float], ys: list[float | None]) -> float | None:
    """Least-squares slope of log y against log x (None if any y is missing or <= 0)."""
    if any(y is None or y <= 0 for y in ys):
        return None
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", help="comma-separated sequence lengths (default 1024 ... 16384)")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--out", type=Path, default=RESULTS)
    a = p.parse_args(argv)
    ns = tuple(int(x) for x in a.n.split(",")) if a.n else NS
    start = time.perf_counter()
    load_before = os.getloadavg()[0]
    rows = []
    for n in ns:
        rows.append(measure(n, a.repeats))
        print(f"n={n} done", flush=True)
    xs = [r["n"] for r in rows]
    out = {
        "workload": f"one head, d = {D}, float32, block = last {BLOCK} queries, no mask",
        "device": f"CPU ({platform.processor() or platform.machine()}), {os.cpu_count()} cores, "
                  f"torch {torch.__version__}, {rows[0]['threads']} threads, "
                  f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}",
        "load_average_1m": [load_before, os.getloadavg()[0]],
        "rows": rows,
        "slopes": {key: slope(xs, [r[key] for r in rows]) for key in (
            "rows_analytic_mib", "baseline_analytic_mib", "rows_measured_mib", "baseline_measured_mib",
            "rows_ms", "baseline_ms")},
        "seconds": round(time.perf_counter() - start, 1),
    }
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "lse-cpu.json").write_text(json.dumps(out, indent=2) + "\n")
    text = table(out)
    (a.out / "lse-cpu.md").write_text(text)
    print(text)
    return out


def _f(x: float | None, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def table(out: dict) -> str:
    lines = [
        "# Exact weights of a 128-row block: attention_rows against the n x n softmax",
        "",
        f"Device: {out['device']}; 1-minute load {out['load_average_1m'][0]:.2f} -> "
        f"{out['load_average_1m'][1]:.2f}; {out['seconds']} s in all.",
        f"Workload: {out['workload']}. Produced by benchmarks/bench_lse.py.",
        "",
        "Memory: analytic = bytes of the tensors held at the peak, from their shapes; measured = "
        "resident-set high-water mark of one call above the resident set before it. Time: median "
        "of repeated calls. Ratios: baseline / attention_rows, same run.",
        "",
        "| n | rows ms | softmax ms | time ratio | rows MiB (analytic) | softmax MiB (analytic) "
        "| rows MiB (measured) | softmax MiB (measured) | memory ratio (measured) | max abs diff |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in out["rows"]:
        ratio = None
        if r["rows_measured_mib"] and r["baseline_measured_mib"] is not None:
            ratio = r["baseline_measured_mib"] / r["rows_measured_mib"]
        lines.append(
            f"| {r['n']} | {r['rows_ms']:.2f} | {r['baseline_ms']:.1f} | {r['time_ratio']:.1f} "
            f"| {r['rows_analytic_mib']:.2f} | {r['baseline_analytic_mib']:.0f} "
            f"| {_f(r['rows_measured_mib'], '.2f')} | {_f(r['baseline_measured_mib'], '.0f')} "
            f"| {_f(ratio, '.0f')} | {r['max_abs_error']:.1e} |")
    s = out["slopes"]
    lines += [
        "",
        "Log-log slopes against n (1 = linear, 2 = quadratic): memory analytic "
        f"{_f(s['rows_analytic_mib'], '.2f')} (rows) / {_f(s['baseline_analytic_mib'], '.2f')} (softmax), "
        f"measured {_f(s['rows_measured_mib'], '.2f')} / {_f(s['baseline_measured_mib'], '.2f')}; "
        f"time {_f(s['rows_ms'], '.2f')} / {_f(s['baseline_ms'], '.2f')}.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
