"""Benchmark and profile: the memorization paper's training steps, the capacity search and the cells.

Run by hand (not a test):  .venv/bin/python benchmarks/bench_memorization_training.py [--repeats 20]

Two workloads, at the text's sizes (memorization-capacity-of-mha App. H and §5.2: d = 64, n = 32
or 64, 100 classes, float32), on the CPU:

1. A step of the capacity search on the authors' model (``memorization.authors-capacity``:
   linear embedding, sinusoidal positions, one attention layer with the query's key masked),
   d_h = d, M = 2 candidate data-set sizes trained together, full batch, at the paper's
   T* ~ 550 (H = 4) and ~ 1300 (H = 8), with the released d_v = 1 and with d_v = 64. Two ways:

   - autograd: ``capacity_search.autograd_loss_and_grads``, the code before this benchmark's
     change (a vmap of ``authors_model`` over the models, then autograd): every query is
     embedded and projected to its H (2 d_h + d_v) query, key and value coordinates;
   - folded: ``authors_folded.authors_loss_and_grads``: the context side computed once per step,
     the embedding folded into eq. (1)'s bilinear form, the backward written out.

   Reported: milliseconds per step (loss + gradients + Adam, best of ``repeats`` runs of a few
   steps), the largest relative difference of the two ways' gradients, a torch.profiler table
   each way at H = 8, d_v = 1, and one search round of 20,000 steps projected from the step.

2. A step of a capacity cell (``capacity_cells``: Fig. 2's grid on the plain eqs. (1)-(6), the
   authors' protocol: minibatch 256, Adam, 3 replicates vmapped) at its largest point (H = 20,
   n = 64, d_h = 64), and the FLOPs it does against a 2048^3 float32 matmul timed in the same
   run: the share of the machine's matmul rate that the step reaches says how much a rewrite
   could win.

Threads: torch.set_num_threads(--threads, default 1, as the search runs one model per core).
Writes results/memorization-training.json and results/memorization-training.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import torch
from torch.func import grad_and_value, vmap

from attnlab.papers.memorization.authors_folded import authors_loss_and_grads
from attnlab.papers.memorization.capacity_search import SearchConfig, autograd_loss_and_grads, init_model
from attnlab.papers.memorization.data import draw_nested_dataset
from attnlab.papers.memorization.losses import classifier_loss
from attnlab.papers.memorization.model import init_attention_classifier
from attnlab.training.optim import adam_init, adam_update

RESULTS = Path(__file__).parent / "results"
D, N, C, M = 64, 32, 100, 2
CASES = [(1, 4, 550), (1, 8, 1300), (64, 4, 550), (64, 8, 1300)]  # (d_v, H, T): App. H's T*
ROUND_STEPS = 20_000  # the paper preset's budget per attempt (memorization.authors-capacity)
CELL = {"R": 3, "H": 20, "n": 64, "d_h": 64, "B": 256}


def search_problem(d_v: int, H: int, T: int):
    sc = SearchConfig(H=H, d=D, n=N, n_classes=C, model="authors", d_v=d_v, keys="context", T_limit=6000,
                      max_steps=ROUND_STEPS)
    X, x, y = draw_nested_dataset(T, N, D, C, 0, torch.float32)
    params = {k: v.expand(M, *v.shape[1:]).clone() for k, v in init_model(sc).items()}
    return params, X, x, y, torch.tensor([T, T * 9 // 10])


def step_fn(way: str, params, X, x, y, T_m):
    state = adam_init(params)

    def step():
        nonlocal params, state
        if way == "autograd":
            _, grads, _ = autograd_loss_and_grads(params, X, x, y, T_m, "context")
        else:
            _, grads, _ = authors_loss_and_grads(params, X, x, y, T_m)
        params, state = adam_update(params, grads, state, 1e-4, inplace=True)
    return step


def best_ms(fn, repeats: int, inner: int = 5) -> float:
    fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(inner):
            fn()
        times.append((time.perf_counter() - t) / inner)
    return 1e3 * min(times)


def profile_table(fn, rows: int = 10, steps: int = 10) -> list[list]:
    from torch.profiler import ProfilerActivity, profile

    fn()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(steps):
            fn()
    events = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    total = sum(e.self_cpu_time_total for e in events)
    return [[e.key, e.count // steps, round(e.self_cpu_time_total / 1e3 / steps, 3),
             f"{e.self_cpu_time_total / total:.0%}"] for e in events[:rows]]


def matmul_gflops() -> float:
    a, b = torch.randn(2048, 2048), torch.randn(2048, 2048)
    a @ b
    t = time.perf_counter()
    for _ in range(3):
        a @ b
    return 3 * 2 * 2048 ** 3 / (time.perf_counter() - t) / 1e9


def cell_step(repeats: int) -> dict:
    R, H, n, d_h, B = (CELL[k] for k in ("R", "H", "n", "d_h", "B"))
    gen = torch.Generator().manual_seed(0)
    params = init_attention_classifier(R, D, n, H, d_h, C, gen)
    E, e, y = torch.rand(R, n, D), torch.rand(R, B, D), torch.randint(0, C, (R, B))
    grad_fn = vmap(grad_and_value(classifier_loss))
    state = adam_init(params)

    def step():
        nonlocal params, state
        grads, _ = grad_fn(params, E, e, y)
        params, state = adam_update(params, grads, state, 1e-4, inplace=True)

    ms = best_ms(step, repeats)
    # capacity_cells.forward_flops, shared context: per example and per model, x 3 for forward + backward
    f_ex = 2 * H * (D * d_h + n * d_h + n * d_h + d_h * D) + 2 * D * C
    flops = 3 * R * (B * f_ex + 2 * H * n * D * 2 * d_h)
    return {**CELL, "ms_per_step": round(ms, 3), "gflop_per_step": flops / 1e9,
            "gflops": round(flops / ms / 1e6, 1), "profile": profile_table(step)}


def main(repeats: int, threads: int) -> dict:
    torch.set_num_threads(threads)
    out = {"device": f"cpu ({platform.processor() or platform.machine()})", "threads": threads,
           "torch": torch.__version__, "load_avg_start": round(os.getloadavg()[0], 2),
           "matmul_gflops": round(matmul_gflops(), 1), "search": [], "profiles": {}}
    for d_v, H, T in CASES:
        params, X, x, y, T_m = search_problem(d_v, H, T)
        ms = {way: best_ms(step_fn(way, {k: v.clone() for k, v in params.items()}, X, x, y, T_m), repeats)
              for way in ("autograd", "folded")}
        _, g_ref, _ = autograd_loss_and_grads(params, X, x, y, T_m, "context")
        _, g_new, _ = authors_loss_and_grads(params, X, x, y, T_m)
        diff = max(float((g_new[k] - g_ref[k]).abs().max() / g_ref[k].abs().max()) for k in g_ref)
        out["search"].append({"d_v": d_v, "H": H, "T": T, "M": M, "autograd_ms": round(ms["autograd"], 3),
                              "folded_ms": round(ms["folded"], 3), "speedup": round(ms["autograd"] / ms["folded"], 2),
                              "round_minutes_autograd": round(ROUND_STEPS * ms["autograd"] / 6e4, 1),
                              "round_minutes_folded": round(ROUND_STEPS * ms["folded"] / 6e4, 1),
                              "gradient_rel_diff_float32": diff})
        if (d_v, H) == (1, 8):
            for way in ("autograd", "folded"):
                out["profiles"][way] = profile_table(step_fn(way, {k: v.clone() for k, v in params.items()},
                                                             X, x, y, T_m))
    out["cell"] = cell_step(repeats)
    out["cell"]["share_of_matmul_rate"] = round(out["cell"]["gflops"] / out["matmul_gflops"], 2)
    out["load_avg_end"] = round(os.getloadavg()[0], 2)
    return out


def markdown(r: dict) -> str:
    lines = [f"# memorization: training steps at the text's sizes ({r['device']}, {r['threads']} thread)", "",
             f"float32, d = {D}, n = {N}, {C} classes, torch {r['torch']}. Float32 2048^3 matmul in the same run: "
             f"{r['matmul_gflops']} GFLOP/s. Load average {r['load_avg_start']} before, {r['load_avg_end']} after.",
             "", "## the capacity search on the authors' model (memorization.authors-capacity)", "",
             f"One step = loss, gradients and Adam for M = {M} candidate T trained together (T and 0.9 T), "
             f"full batch. A round is {ROUND_STEPS:,} steps (the paper preset's budget per attempt).", "",
             "| d_v | H | T | autograd ms / step | folded ms / step | speed-up | round, autograd (min) | "
             "round, folded (min) | gradient rel. diff (float32) |", "|---|---|---|---|---|---|---|---|---|"]
    for s in r["search"]:
        lines.append(f"| {s['d_v']} | {s['H']} | {s['T']} | {s['autograd_ms']} | {s['folded_ms']} | "
                     f"{s['speedup']}x | {s['round_minutes_autograd']} | {s['round_minutes_folded']} | "
                     f"{s['gradient_rel_diff_float32']:.1e} |")
    lines += ["", "In float64 the two ways agree to 1e-10 relative "
              "(tests/papers/memorization/test_authors_folded.py); the float32 difference above is rounding."]
    for way, rows in r["profiles"].items():
        lines += ["", f"## profile: H = 8, d_v = 1, T = 1300, {way} (torch.profiler, per step)", "",
                  "| operator | calls | self CPU ms | share |", "|---|---|---|---|"]
        lines += [f"| `{k}` | {c} | {ms} | {share} |" for k, c, ms, share in rows]
    c = r["cell"]
    lines += ["", "## a capacity cell's step (capacity_cells, the authors' protocol)", "",
              f"Plain eqs. (1)-(6), H = {c['H']}, n = {c['n']}, d_h = d_v = {c['d_h']}, {c['R']} replicates "
              f"vmapped, minibatch {c['B']}: {c['ms_per_step']} ms per step, {c['gflop_per_step']:.2f} GFLOP, "
              f"{c['gflops']} GFLOP/s = {c['share_of_matmul_rate']:.0%} of the 2048^3 matmul's rate.", "",
              "| operator | calls | self CPU ms | share |", "|---|---|---|---|"]
    lines += [f"| `{k}` | {n} | {ms} | {share} |" for k, n, ms, share in c["profile"]]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    result = main(args.repeats, args.threads)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "memorization-training.json").write_text(json.dumps(result, indent=1))
    (RESULTS / "memorization-training.md").write_text(markdown(result))
    print(markdown(result))
