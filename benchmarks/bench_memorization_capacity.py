"""Benchmark: the largest data set gradient descent memorizes, H = 4 and H = 8, on the CPU.

Run by hand (not a test):  .venv/bin/python benchmarks/bench_memorization_capacity.py [--max-steps S]

Workload (memorization paper, Appendix H): d = 64, n = 32, d_h = d_v = 64, one context
E shared by all T examples, queries and tokens U(0, 1)^d, labels uniform on 100 classes,
the single-layer model of eqs. (1)-(6) (papers.memorization.model). For H = 4 and H = 8,
``attnlab.papers.memorization.capacity_search.search_capacity`` finds the largest T that
full-batch Adam (peak lr 1e-2, 100 warmup steps, cosine decay over the budget) memorizes
(every one of the T labels argmax-correct) within ``--max-steps`` updates per attempt:
nested data sets (the set of size T is the first T examples of one draw), one candidate
T per round (--candidates 1: on 2 cores the GEMMs already use both; two candidates per
round cut the bracket in thirds for twice the work, which pays only with idle
parallelism, e.g. on a GPU), bracketing by a factor up to 2 from 2 x Theorem 1's bound
(smaller when the last success came close to the step budget), then bisection until
the bracket is at most 5% of the largest success wide. An attempt that ends below 50%
training accuracy diverged (lr 1e-2 is close to Adam's stability limit here: 2e-2
diverges) and is retried once at lr 5e-3 before it counts as a failure. The largest
success is re-checked in float64 with attention_classifier (the unfolded eqs. (1)-(6)).

The paper (App. H) reports about 550 (H = 4) and 1300 (H = 8) after 300k Adam steps
(lr 1e-3, batch 256) on a GPU. The target here: both searches on 2 CPU cores in at most
30 minutes in total.

Threads: torch.set_num_threads(--threads, default 2). OMP_WAIT_POLICY=PASSIVE is set
before torch is imported: on a shared machine, OpenMP's spinning threads otherwise
fight the other processes for the cores (measured: a step 10x slower at load 8).

Writes benchmarks/results/memorization_capacity.json and .png; prints a summary table.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import json
import platform
import time
from pathlib import Path

import torch

from attnlab.papers.memorization.model import theorem1_bound
from attnlab.papers.memorization.capacity_search import SearchConfig, search_capacity

PAPER = {4: 550, 8: 1300}  # App. H, 300k Adam steps
RESULTS = Path(__file__).parent / "results" / "memorization_capacity.json"
FIGURE = RESULTS.with_suffix(".png")


def machine_info(threads: int) -> dict:
    return {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
            "cpu_count": os.cpu_count(), "torch": torch.__version__, "threads": threads,
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"), "load_avg_1min_start": os.getloadavg()[0]}


def search_one(H: int, max_steps: int, seed: int, candidates: int) -> dict:
    cfg = SearchConfig(H=H, max_steps=max_steps, lr=1e-2, warmup=100, growth=2.0, candidates=candidates,
                       resolution=0.05, seed=seed)

    def progress(attempts):
        last = attempts[-1]
        print(f"  H={H}: T={[a.T for a in attempts[-2:]]} -> "
              f"{[(a.outcome, a.steps) for a in attempts[-2:]]} ({last.seconds:.1f} s, "
              f"load {os.getloadavg()[0]:.1f})", flush=True)

    res = search_capacity(cfg, progress=progress)
    return {
        "H": H, "bound": theorem1_bound(H, cfg.n, cfg.d_h), "paper_T": PAPER[H],
        "largest_memorized": res.largest_success, "smallest_failure": res.smallest_failure,
        "verified_float64": res.verified_float64, "seconds": res.seconds,
        "attempts": [{"T": a.T, "outcome": a.outcome, "steps": a.steps, "round_seconds": a.seconds,
                      "accuracy": a.accuracy, "loss": a.loss, "lr": a.lr} for a in res.attempts],
        "rounds": res.rounds,
        "config": {"d": cfg.d, "n": cfg.n, "d_h": cfg.d_h, "n_classes": cfg.n_classes, "max_steps": cfg.max_steps,
                   "lr": cfg.lr, "warmup": cfg.warmup, "min_lr_ratio": cfg.min_lr_ratio, "T_start": cfg.T_start,
                   "growth": cfg.growth, "candidates": cfg.candidates, "resolution": cfg.resolution,
                   "diverged_below": cfg.diverged_below,
                   "seed": cfg.seed, "dtype": str(cfg.dtype)},
    }


def draw(results: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=110, layout="constrained")
    Hs = [r["H"] for r in results]
    for i, r in enumerate(results):
        ok = [a for a in r["attempts"] if a["outcome"] == "memorized"]
        bad = [a for a in r["attempts"] if a["outcome"] == "budget"]
        ax.scatter([r["H"] - 0.15] * len(ok), [a["T"] for a in ok], marker="o", color="#009E73",
                   label="memorized" if i == 0 else None, zorder=3)
        ax.scatter([r["H"] - 0.15] * len(bad), [a["T"] for a in bad], marker="x", color="#D55E00",
                   label="not memorized in budget" if i == 0 else None, zorder=3)
    ax.plot(Hs, [r["largest_memorized"] for r in results], "-", color="#0072B2", label="largest T memorized (ours)")
    ax.plot(Hs, [r["paper_T"] for r in results], "s--", color="#CC79A7", label="paper, 300k steps (App. H)")
    ax.plot(Hs, [r["bound"] for r in results], "^:", color="#000000", label="Theorem 1 bound H(n-1)+1")
    ax.set_xlabel("heads H")
    ax.set_ylabel("data-set size T")
    ax.set_yscale("log")
    ax.set_xticks(Hs)
    steps = results[0]["config"]["max_steps"]
    ax.set_title(f"Largest T memorized by full-batch Adam ({steps} steps/attempt), d=64, n=32", fontsize=10)
    ax.legend(fontsize=8)
    fig.savefig(path)
    plt.close(fig)


def main(H_grid=(4, 8), max_steps: int = 1000, threads: int = 2, seed: int = 0, candidates: int = 1,
         write: bool = True) -> dict:
    torch.set_num_threads(threads)
    info = machine_info(threads)
    t0 = time.perf_counter()
    results = []
    for H in H_grid:
        print(f"H={H}: searching (budget {max_steps} steps per attempt)", flush=True)
        results.append(search_one(H, max_steps, seed, candidates))
        if write:  # after each H, so an interrupted run keeps what it found
            _write(results, time.perf_counter() - t0, info, complete=False)
    total = time.perf_counter() - t0
    info["load_avg_1min_end"] = os.getloadavg()[0]
    out = _write(results, total, info, complete=True) if write else _output(results, total, info, True)
    print(f"\n{'H':>3} {'bound':>6} {'paper T':>8} {'ours T':>7} {'failure':>8} {'float64':>8} {'seconds':>8}")
    for r in results:
        print(f"{r['H']:>3} {r['bound']:>6} {r['paper_T']:>8} {r['largest_memorized']:>7} "
              f"{r['smallest_failure']!s:>8} {r['verified_float64']!s:>8} {r['seconds']:>8.1f}")
    print(f"total {total:.1f} s (target <= 1800 s); load average {info['load_avg_1min_start']:.1f} -> "
          f"{info['load_avg_1min_end']:.1f} on {info['cpu_count']} cores")
    return out


def _output(results: list[dict], total: float, info: dict, complete: bool) -> dict:
    return {"complete": complete, "results": results, "total_seconds": total, "target_seconds": 1800,
            "machine": info,
            "paper": {"T_memorized": PAPER, "steps": 300_000, "optimizer": "Adam lr 1e-3, batch 256, GPU"}}


def _write(results: list[dict], total: float, info: dict, complete: bool) -> dict:
    out = _output(results, total, info, complete)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=2) + "\n")
    draw(results, FIGURE)
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--max-steps", type=int, default=1000, help="Adam updates per attempt")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--candidates", type=int, default=1, help="T trained together per round")
    args = ap.parse_args()
    main(max_steps=args.max_steps, threads=args.threads, seed=args.seed, candidates=args.candidates)
