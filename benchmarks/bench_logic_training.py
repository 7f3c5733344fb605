"""Benchmark and profile: one training evaluation of the logic text's §4 model at the text's size.

Run by hand (not a test):  .venv/bin/python benchmarks/bench_logic_training.py [--repeats 7] [--steps 1]

Workload: the §4 model (attnlab.papers.logic.model) at N = 10, M = 50, d = N + M = 60, hidden
width h = max(N^2, d) = 100, batch S = 1000 sequences, float32, one intra-op thread (as
logic.learning trains), two models: the combined system with the lean-1 extra loss (every weight
free) and system 2 (masked).

One evaluation = the loss and its gradient, what torch.optim.LBFGS's closure computes (about 1,100
of them per model in a paper-scale run: 50 steps of 20 iterations plus the line search). Two ways:

- one-pass: the code before this benchmark's change, kept here as the baseline: the whole batch in
  one forward, the LayerNorm written out (mean, var, sqrt, divide), one backward;
- chunked:  ``attnlab.papers.logic.model.chunked_mse``: chunks of 2500 token rows, forward and
  backward one chunk at a time (``attnlab.training.chunked``), torch's fused LayerNorm.

Reported: seconds per evaluation (best of ``repeats``), the matmul FLOPs of one evaluation (forward
+ backward = 3 x the forward's, counted from the shapes) and their rate against a float32 2048^3
matmul at one thread timed in the same run, the largest relative difference of the two gradients,
one L-BFGS step (20 iterations, strong Wolfe, as the experiment runs it) each way, and a
torch.profiler breakdown of one evaluation each way (the operators by self CPU time), and the paper
preset's whole training projected from the measured steps (one process before, one per core now).

Writes results/logic-training.json and results/logic-training.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np
import torch

from attnlab.papers.logic.encoding import random_sequences, targets
from attnlab.papers.logic.experiments.learning import LearningConfig
from attnlab.papers.logic.members import members
from attnlab.papers.logic.model import LN_EPS, chunked_mse, effective, hidden_rows, hidden_width, init_params, masks
from attnlab.papers.logic.penalties import penalties
from attnlab.training.processes import resolve_workers

RESULTS = Path(__file__).parent / "results"
N, M, S = 10, 50, 1000


def one_pass_mse(e: dict, tokens: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
    """The loss as it was computed before chunking: the whole batch at once, the LayerNorm written out."""
    H = hidden_rows(e, tokens, N)
    mu = H.mean(dim=-1, keepdim=True)
    var = H.var(dim=-1, unbiased=False, keepdim=True)
    H = e["gamma"] * (H - mu) / torch.sqrt(var + LN_EPS) + e["beta"]
    S_, M_, d = H.shape
    U = torch.relu(H.reshape(S_ * M_, d) @ e["B"].T + e["b"])
    return (((U @ e["C"][0] + e["c0"]).reshape(S_, M_) - Y) ** 2).mean()


def flops_per_evaluation() -> float:
    """Matmul FLOPs of one forward (2 m k n per product, the products of hidden_rows and the read-out),
    times 3 for forward + backward."""
    d, h = N + M, hidden_width(N, M)
    fwd = 2 * S * M * M * N + 2 * S * M * d * d + 2 * S * M * d * h + 2 * S * M * h
    return 3.0 * fwd


def problem(system: str, lam: tuple[float, float, float]):
    rng = np.random.default_rng([0, 0])
    q = rng.standard_normal((N, N))
    tok = random_sequences(N, M, S, rng)
    tokens, Y = torch.as_tensor(tok), torch.as_tensor(targets(tok, q), dtype=torch.float32)
    p = {k: v.requires_grad_(True) for k, v in
         init_params(N, M, torch.Generator().manual_seed(0), dtype=torch.float32).items()}
    mk = masks(system, N, M, dtype=torch.float32)
    lam_t = torch.tensor(lam, dtype=torch.float32)

    def loss(way: str) -> torch.Tensor:
        e = effective(p, mk)
        err = one_pass_mse(e, tokens, Y) if way == "one-pass" else chunked_mse(e, tokens, Y, N)
        return err + (lam_t * penalties(e, N, M)).sum() if any(lam) else err

    return p, loss


def evaluation(p, loss, way):
    for v in p.values():
        v.grad = None
    value = loss(way)
    value.backward()
    return value


def best_of(fn, repeats: int) -> float:
    fn()
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def lbfgs_step_seconds(system, lam, way, steps: int) -> float:
    p, loss = problem(system, lam)
    opt = torch.optim.LBFGS(list(p.values()), max_iter=20, max_eval=45, history_size=100,
                            line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        value = loss(way)
        value.backward()
        return value

    t = time.perf_counter()
    for _ in range(steps):
        opt.step(closure)
    return (time.perf_counter() - t) / steps


def profile_table(p, loss, way, rows: int = 12) -> list[list]:
    from torch.profiler import ProfilerActivity, profile

    evaluation(p, loss, way)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(3):
            evaluation(p, loss, way)
    ev = sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)
    total = sum(e.self_cpu_time_total for e in ev)
    return [[e.key, e.count // 3, e.self_cpu_time_total / 3 / 1e3, 100 * e.self_cpu_time_total / total]
            for e in ev[:rows]]


def main(repeats: int = 7, steps: int = 1) -> dict:
    torch.set_num_threads(1)
    a = torch.randn(2048, 2048)
    ceiling = 2 * 2048 ** 3 / best_of(lambda: a @ a, 3)
    flops = flops_per_evaluation()
    out = {"device": f"cpu ({platform.processor() or platform.machine()})", "threads": 1,
           "load_1min": os.getloadavg()[0], "sizes": {"N": N, "M": M, "batch": S, "h": hidden_width(N, M)},
           "matmul_ceiling_gflops": ceiling / 1e9, "flops_per_evaluation": flops, "models": {}}
    for name, system, lam in (("combined, lean-1", "combined", (0.1, 0.0, 0.0)), ("system 2", "2", (0.0, 0.0, 0.0))):
        p, loss = problem(system, lam)
        row = {}
        grads = {}
        for way in ("one-pass", "chunked"):
            row[way] = best_of(lambda: evaluation(p, loss, way), repeats)
            evaluation(p, loss, way)
            grads[way] = {k: v.grad.clone() for k, v in p.items()}
        row["grad_rel_diff"] = max(float((grads["chunked"][k] - grads["one-pass"][k]).abs().max()
                                         / grads["one-pass"][k].abs().max().clamp_min(1e-30)) for k in p)
        row["speedup"] = row["one-pass"] / row["chunked"]
        row["gflops"] = {w: flops / row[w] / 1e9 for w in ("one-pass", "chunked")}
        row["lbfgs_step_seconds"] = {w: lbfgs_step_seconds(system, lam, w, steps) for w in ("one-pass", "chunked")}
        row["profile"] = {w: profile_table(p, loss, w) for w in ("one-pass", "chunked")}
        out["models"][name] = row
    # the paper preset's whole training, projected from the measured L-BFGS steps: every model makes
    # `iterations` steps; before, one process trained them one after another; now `workers` processes
    cfg = LearningConfig(scale="paper")
    models = members(cfg)
    workers = resolve_workers(cfg.workers, len(models))
    step = {w: sum(m["lbfgs_step_seconds"][w] for m in out["models"].values()) / len(out["models"])
            for w in ("one-pass", "chunked")}
    out["projection"] = {"models": len(models), "steps": cfg.iterations, "workers": workers,
                         "one-pass_hours": len(models) * cfg.iterations * step["one-pass"] / 3600,
                         "chunked_hours": len(models) * cfg.iterations * step["chunked"] / workers / 3600}
    out["load_1min_after"] = os.getloadavg()[0]
    return out


def markdown(r: dict) -> str:
    lines = [f"# logic §4: one training evaluation at the text's size ({r['device']}, {r['threads']} thread)", "",
             f"N = {r['sizes']['N']}, M = {r['sizes']['M']}, batch {r['sizes']['batch']}, h = {r['sizes']['h']}, "
             f"float32. Matmul FLOPs per evaluation (forward + backward): {r['flops_per_evaluation'] / 1e9:.2f} G; "
             f"float32 2048^3 matmul in the same run: {r['matmul_ceiling_gflops']:.0f} GFLOP/s. "
             f"Load average {r['load_1min']:.2f} before, {r['load_1min_after']:.2f} after.", "",
             "| model | one-pass s / eval | chunked s / eval | speed-up | GFLOP/s one-pass | GFLOP/s chunked "
             "| L-BFGS step one-pass (s) | L-BFGS step chunked (s) | gradient rel. diff |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, m in r["models"].items():
        lines.append(f"| {name} | {m['one-pass']:.3f} | {m['chunked']:.3f} | {m['speedup']:.2f}x | "
                     f"{m['gflops']['one-pass']:.0f} | {m['gflops']['chunked']:.0f} | "
                     f"{m['lbfgs_step_seconds']['one-pass']:.2f} | {m['lbfgs_step_seconds']['chunked']:.2f} | "
                     f"{m['grad_rel_diff']:.1e} |")
    pr = r["projection"]
    lines += ["", f"The paper preset's training ({pr['models']} models x {pr['steps']} L-BFGS steps), projected from "
                  f"the mean step above: one-pass in one process {pr['one-pass_hours']:.1f} h; chunked in "
                  f"{pr['workers']} processes {pr['chunked_hours']:.2f} h."]
    for name, m in r["models"].items():
        for way, rows in m["profile"].items():
            lines += ["", f"## profile: {name}, {way} (torch.profiler, one evaluation)", "",
                      "| operator | calls | self CPU ms | share |", "|---|---|---|---|"]
            lines += [f"| `{k}` | {c} | {ms:.1f} | {pct:.0f}% |" for k, c, ms, pct in rows]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--steps", type=int, default=1, help="L-BFGS steps timed each way")
    args = ap.parse_args()
    res = main(args.repeats, args.steps)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "logic-training.json").write_text(json.dumps(res, indent=2) + "\n")
    (RESULTS / "logic-training.md").write_text(markdown(res))
    print(markdown(res))
