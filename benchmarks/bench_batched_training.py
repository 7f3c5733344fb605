"""Benchmark: 64 small attention models trained together vs one after another.

Run by hand (not a test):  .venv/bin/python benchmarks/bench_batched_training.py [--steps S]

Workload (memorization paper, §5.2 / Appendix A sizes): M = 64 single-layer
attention classifiers (papers.memorization.model, eqs. (1)-(6)) with d = 64, n = 32, H = 4,
d_h = d_v = 16, 100 classes; each model has its own data set of 1024 examples
(queries e uniform on [0, 1)^d, labels uniform on [100]), batch 256, Adam, lr 1e-3,
float32, its own seed. Two layouts of the contexts E (uniform on [0, 1)):

- shared_context:      one E per data set, as in the paper's §5.2 and Appendix H
                       (``model_data``): attention is a GEMM over the batch;
- per_example_context: one E per example, as in Appendix I.1: attention is 16384
                       tiny (32 x 64) products per step, bound by memory traffic.

- batched: ``train_batched`` (one vmap(grad) per step for all 64 models, functional
  Adam on stacked parameters), S steps.
- batched_compiled: the same with ``compile=True`` (torch.compile of the vmapped
  gradient). A cold 1-step call (compilation) and a warm 1-step call (re-tracing
  with caches warm) are timed first; "steady" = (S-step call - warm 1-step call)
  / (S - 1) per step, what a long run pays per step.
- loop:    for each model, S steps of the ordinary PyTorch loop (autograd +
  torch.optim.Adam) with the same minibatch order; same total model-steps.

FLOPs: ``training_flops_per_step`` (attnlab/papers/memorization/model.py, formulas in its docstring:
the forward matmuls as attention_classifier orders them for each layout, times 3
for forward + backward), times steps, times 64 models. The ceiling is a
float32 2048 x 2048 torch.matmul timed in the same run (2 * 2048^3 FLOPs).

Writes benchmarks/results/batched_training.json and prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import torch

from attnlab.training import train_batched
from attnlab.papers.memorization.losses import classifier_loss, classifier_metrics
from attnlab.papers.memorization.model import init_attention_classifier, training_flops_per_step

SIZES = dict(M=64, d=64, n=32, H=4, d_h=16, n_classes=100, T=1024, batch=256)
RESULTS = Path(__file__).parent / "results" / "batched_training.json"


def make_data(M: int, T: int, n: int, d: int, n_classes: int, generator: torch.Generator,
              shared_context: bool):
    """Per-model data, uniform on [0, 1): contexts E, (M, n, d) with one context per data
    set (paper §5.2) or (M, T, n, d) one per example (Appendix I.1); queries e (M, T, d);
    labels y (M, T) uniform on the classes."""
    E = torch.rand(M, *(() if shared_context else (T,)), n, d, generator=generator)
    e = torch.rand(M, T, d, generator=generator)
    y = torch.randint(0, n_classes, (M, T), generator=generator)
    return E, e, y


def matmul_ceiling(size: int = 2048, repeats: int = 5) -> float:
    """Best float32 GFLOP/s of a size x size matmul."""
    a, b = torch.randn(size, size), torch.randn(size, size)
    torch.matmul(a, b)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        torch.matmul(a, b)
        best = min(best, time.perf_counter() - t0)
    return 2 * size**3 / best / 1e9


def run_batched(params, data, steps: int, seeds, compile: bool = False) -> tuple[float, dict]:
    E, e, y = data
    shared_context = E.ndim == 3
    model_data, data = ((E,), (e, y)) if shared_context else ((), data)
    t0 = time.perf_counter()
    result = train_batched(classifier_loss, params, data, model_data=model_data, seeds=seeds,
                           steps=steps,
                           batch_size=SIZES["batch"], optimizer="adam", lr=1e-3,
                           eval_every=steps, metrics_fn=classifier_metrics, compile=compile)
    return time.perf_counter() - t0, result.params


def run_loop(params, data, steps: int, seeds) -> tuple[float, dict]:
    """Each model alone: autograd + torch.optim.Adam, same per-model minibatch order."""
    E, e, y = data
    T, B = e.shape[1], SIZES["batch"]
    finals = []
    t0 = time.perf_counter()
    for m, seed in enumerate(seeds):
        theta = {k: p[m].clone().requires_grad_(True) for k, p in params.items()}
        opt = torch.optim.Adam(theta.values(), lr=1e-3)
        g = torch.Generator().manual_seed(seed)
        perm, pos = None, T // B
        for _ in range(steps):
            if pos == T // B:
                perm, pos = torch.randperm(T, generator=g), 0
            idx = perm[pos * B : (pos + 1) * B]
            pos += 1
            E_batch = E[m] if E.ndim == 3 else E[m, idx]
            loss = classifier_loss(theta, E_batch, e[m, idx], y[m, idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
        finals.append({k: p.detach() for k, p in theta.items()})
    elapsed = time.perf_counter() - t0
    return elapsed, {k: torch.stack([f[k] for f in finals]) for k in finals[0]}


def run_workload(shared_context: bool, steps: int, ceiling: float) -> dict:
    """Batched, compiled-batched and looped training of the 64 models on one data layout."""
    s = SIZES
    gen = torch.Generator().manual_seed(0)
    params = init_attention_classifier(s["M"], s["d"], s["n"], s["H"], s["d_h"], s["n_classes"], gen)
    data = make_data(s["M"], s["T"], s["n"], s["d"], s["n_classes"], gen, shared_context)
    seeds = list(range(s["M"]))
    run_batched(params, data, 2, seeds)  # warm-up (allocator, vmap tracing caches)
    t_batched, p_batched = run_batched(params, data, steps, seeds)
    t_cold, _ = run_batched(params, data, 1, seeds, compile=True)  # compilation + 1 step
    t_warm1, _ = run_batched(params, data, 1, seeds, compile=True)  # re-tracing, warm caches
    t_compiled, p_compiled = run_batched(params, data, steps, seeds, compile=True)
    per_step_compiled = max(t_compiled - t_warm1, 1e-9) / max(steps - 1, 1)  # steady state
    t_loop, p_loop = run_loop(params, data, steps, seeds)
    total = steps * s["M"] * training_flops_per_step(
        s["d"], s["n"], s["H"], s["d_h"], s["n_classes"], s["batch"], shared_context=shared_context)
    return {
        "total_gflop": total / 1e9,
        "batched": {"seconds": t_batched, "gflops": total / t_batched / 1e9},
        "batched_compiled": {"seconds": t_compiled, "gflops": total / t_compiled / 1e9,
                             "first_call_seconds_with_compilation": t_cold,
                             "call_overhead_seconds_warm_cache": t_warm1,
                             "steady_seconds_per_step": per_step_compiled,
                             "steady_gflops": total / steps / per_step_compiled / 1e9},
        "loop": {"seconds": t_loop, "gflops": total / t_loop / 1e9},
        "speedup": t_loop / t_batched,
        "speedup_compiled": t_loop / t_compiled,
        "speedup_compiled_steady": t_loop / steps / per_step_compiled,
        "max_param_diff_vs_loop": max((p[k] - p_loop[k]).abs().max().item()
                                      for k in p_loop for p in (p_batched, p_compiled)),
        "percent_of_ceiling": {name: 100 * total / t / 1e9 / ceiling for name, t in
                               [("batched", t_batched), ("loop", t_loop)]},
    }


def _print(name: str, r: dict, steps: int, ceiling: float) -> None:
    print(f"\n{name}: {SIZES['M']} models x {steps} steps, batch {SIZES['batch']}, "
          f"{r['total_gflop']:.1f} GFLOP")
    print(f"{'':18}{'seconds':>10}{'GFLOP/s':>10}{'% ceiling':>11}")
    c = r["batched_compiled"]
    rows = [(k, r[k]["seconds"], r[k]["gflops"]) for k in ("batched", "batched_compiled", "loop")]
    rows.append(("compiled, steady", c["steady_seconds_per_step"] * steps, c["steady_gflops"]))
    for label, seconds, gflops in rows:
        print(f"{label:18}{seconds:10.2f}{gflops:10.1f}{100 * gflops / ceiling:10.1f}%")
    print(f"speedup over the loop: batched {r['speedup']:.2f}x, compiled {r['speedup_compiled']:.2f}x "
          f"(steady {r['speedup_compiled_steady']:.2f}x; cold compilation + 1 step "
          f"{c['first_call_seconds_with_compilation']:.1f} s); "
          f"max |param diff| vs loop {r['max_param_diff_vs_loop']:.1e}")


def main(steps: int = 20, out: Path = RESULTS) -> dict:
    ceiling = matmul_ceiling()
    load_before = os.getloadavg()[0]
    report = {
        "sizes": SIZES, "steps": steps, "dtype": "float32",
        "threads": torch.get_num_threads(), "torch": torch.__version__,
        "machine": platform.machine(), "matmul_ceiling_gflops": ceiling,
        "shared_context": run_workload(True, steps, ceiling),
        "per_example_context": run_workload(False, steps, ceiling),
        "load_average_1min": {"before": load_before, "after": os.getloadavg()[0]},
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2))
    print(f"float32 matmul ceiling {ceiling:.1f} GFLOP/s; {report['threads']} threads; "
          f"load {load_before:.2f} before, {report['load_average_1min']['after']:.2f} after")
    _print("shared context (paper §5.2)", report["shared_context"], steps, ceiling)
    _print("per-example contexts (App. I.1)", report["per_example_context"], steps, ceiling)
    print(f"\nwrote {out}")
    return report


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20, help="training steps per model")
    main(parser.parse_args().steps)
