"""Benchmark: forward time and peak memory of every attention variant against the fused call
that computes the same thing (SDPA plain, causal, or with a key-padding mask).

Run by hand (not a test):  .venv/bin/python benchmarks/bench_attention.py [--quick] [--repeats R]

Workload: q, k, v of shape (B=1, H=8, n, d_head=64), float32, n = 512 ... 16384
(--quick: 512 ... 4096), every variant of attnlab.bench.variants (fused SDPA plain,
causal and key-padded, compiled FlexAttention, attnlab's softmax path with and without
weights and with causal, key-padding and causal + key-padding masks,
sliding window w=256 by gather and by FlexAttention, BigBird and Longformer graphs,
linear attention elu+1 non-causal and causal chunked, FAVOR+, Linformer k'=256,
unnormalized attention). Variants that materialise n x n are skipped above 8192.
The float32 matmul ceiling (2048 x 2048) is measured in the same run.

Writes benchmarks/results/attention_speed.json (every row, crossovers, memory slopes,
targets, thread count and load average) and attention_speed.png (time against n,
log-log) and attention_speed_memory.png, and prints the targets at n = 8192.
The full run takes several minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from attnlab.bench import PRESETS, BenchConfig, parse_n_list, run_bench
from attnlab.bench.report import memory_figure, time_figure
from attnlab.reports.figures import render

RESULTS = Path(__file__).parent / "results"


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", help="comma-separated sequence lengths")
    p.add_argument("--variant", action="append", help="a variant (repeatable; default all)")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--quick", action="store_true", help="n = 512 ... 4096")
    p.add_argument("--out", type=Path, default=RESULTS)
    a = p.parse_args(argv)
    ns = parse_n_list(a.n) if a.n else PRESETS["quick" if a.quick else "full"]
    cfg = BenchConfig(n=ns, variants=tuple(a.variant) if a.variant else None, repeats=a.repeats,
                      threads=a.threads)
    start = time.perf_counter()
    result = run_bench(cfg, progress=lambda what, done, total: print(f"[{done}/{total}] {what}", flush=True))
    out = result.to_dict()
    out["seconds"] = round(time.perf_counter() - start, 1)
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "attention_speed.json").write_text(json.dumps(out, indent=2) + "\n")
    render(time_figure(out["rows"], "attention_speed.png"), a.out)
    render(memory_figure(out["rows"], "attention_speed_memory.png"), a.out)
    _print(out)
    return out


def _print(out: dict) -> None:
    env, c = out["env"], out["ceiling"]
    print(f"\nmatmul ceiling {c['gflops']:.1f} GFLOP/s ({c['dtype']}, {env['threads']} threads); "
          f"load average {env['load_average_1m']:.2f} -> {env['load_average_1m_after']:.2f}; {out['seconds']} s")
    print(f"{'variant':18} {'n':>6} {'ms':>9} {'GFLOP/s':>8} {'%ceil':>6} {'peak MiB':>9} {'vs SDPA':>8}")
    for r in out["rows"]:
        if r["status"] != "ok":
            print(f"{r['variant']:18} {r['n']:>6} {r['status']}: {r['note'][:80]}")
            continue
        print(f"{r['variant']:18} {r['n']:>6} {r['time_ms']:9.2f} {r['gflops']:8.1f} {r['pct_ceiling']:6.1f} "
              f"{(r['peak_mb'] or 0):9.1f} {(r['ratio'] or 0):8.3f}")
    print("\ncrossover n (vs SDPA of the same causality):")
    for k, x in out["crossovers"].items():
        print(f"  {k:18} {x['status']:18} {x['crossover_n'] and round(x['crossover_n'])}")
    print("\ntargets:")
    for t in out["targets"]:
        m = "-" if t["measured"] is None else f"{t['measured']:.3g}"
        print(f"  [{t['status']}] {t['statement']}: {m} ({t['relation']} {t['limit']:g}) {t['detail']}")


if __name__ == "__main__":
    main()
