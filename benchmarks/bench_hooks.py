"""Benchmark: what the hook points cost a forward pass with no hook attached, and what caching costs.

Run by hand (not a test):

    git archive <commit before the hooks> src | tar -x -C /tmp/before
    .venv/bin/python benchmarks/bench_hooks.py --before /tmp/before/src [--repeats 15] [--note "..."]

Two worker processes load the same model, one from this tree's ``src`` and one from ``--before``
(the code without hook points), and the parent asks them in turn, round by round, to time one
forward pass (``PretrainedModel.forward`` without hidden states or attentions: the fused kernel),
so a change of load hits both alike. The goal: the median with hook points is at most 2% above the
median without. The worker of this tree also times, in the same rounds, ``run_with_cache`` of every
point but hook_attn_scores / hook_pattern (the fused kernel kept), of every point (the explicit path),
and ``run_with_hooks`` with one identity hook on every ``hook_z``. Models: SmolLM2-135M (float32, the
IOI prompt of 15 tokens with BOS, and 64 tokens) and all-MiniLM-L6-v2 (float32, 64 tokens), one torch
thread per worker. Each timing is both wall time and the worker's CPU time (``time.process_time``: on a
loaded machine the wall time mostly measures the other processes; the CPU time the work done).

What the points add to a pass with none attached is Python only, so it is also measured directly:
the time of one call of a point with nothing attached and of the attention's check for attached hooks,
each timed 10^5 times, multiplied by their counts in one pass (6 L + 2 points, L checks) and divided by
the pass's CPU time. The 1-minute load average is recorded before and after. Writes
benchmarks/results/hooks-cpu.json and .md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results"
PROMPT = " When Mary and John went to the store, John gave a drink to"
CASES = (("smollm2", 15), ("smollm2", 64), ("minilm", 64))


def _worker(model: str, n: int, hooked: bool) -> None:
    """Serve timing requests on stdin: a line with a quantity name -> a line with seconds."""
    import timeit

    import torch

    from attnlab.pretrained import load_pretrained

    torch.set_num_threads(1)
    torch.manual_seed(0)
    pm = load_pretrained(model, dtype="float32")
    ids = torch.tensor([[1] + pm.tokenizer(PROMPT)["input_ids"]]) if n == 15 else \
        torch.randint(1000, 20000, (1, n))
    assert ids.shape[1] == n, ids.shape

    def plain() -> object:
        return pm.forward(ids, output_hidden_states=False, output_attentions=False)

    run = {"plain": plain}
    if hooked:
        fused = [p for p in pm.hook_points() if not p.endswith(("attn_scores", "pattern"))]
        run["cache_fused"] = lambda: pm.run_with_cache(ids, fused)
        run["cache_all"] = lambda: pm.run_with_cache(ids)
        z = [(p, lambda x, name: x) for p in pm.hook_points() if p.endswith("hook_z")]
        run["hook_z_identity"] = lambda: pm.run_with_hooks(ids, z)
    for f in run.values():  # warm-up
        f()
    overhead = 0.0
    if hooked:
        from attnlab.nn.attention import HOOK_POINTS

        x, point, a = torch.zeros(1, n, 8), pm.model.blocks[0].hook_resid_pre, pm.model.blocks[0].attn
        t_call = timeit.timeit(lambda: point(x), number=100_000) / 100_000
        t_check = timeit.timeit(lambda: any(getattr(a, p).fns for p in HOOK_POINTS), number=100_000) / 100_000
        L = len(pm.model.blocks)
        overhead = (6 * L + 2) * t_call + L * t_check
    print(f"ready {overhead:.9f} " + ",".join(run), flush=True)
    for line in sys.stdin:
        f = run[line.strip()]
        t, c = time.perf_counter(), time.process_time()
        f()
        print(f"{time.perf_counter() - t:.6f} {time.process_time() - c:.6f}", flush=True)


def _start(src: str, model: str, n: int, hooked: bool) -> tuple[subprocess.Popen, list[str], float]:
    """A worker process on the code in ``src``; returns it, the quantities it times, and the Python time
    the hook points add to one pass (0 for the code without them)."""
    env = {**os.environ, "PYTHONPATH": src}
    p = subprocess.Popen([sys.executable, __file__, "--worker", model, str(n), "1" if hooked else "0"], env=env,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline().split()
    assert line and line[0] == "ready", line
    return p, line[2].split(","), float(line[1])


def _ask(p: subprocess.Popen, what: str) -> tuple[float, float]:
    """One timing from worker ``p``: (wall, CPU) seconds."""
    p.stdin.write(what + "\n")
    p.stdin.flush()
    wall, cpu = p.stdout.readline().split()
    return float(wall), float(cpu)


def main() -> dict | None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    ap.add_argument("--before", help="the src directory of the code without hook points")
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--note", default="")
    args = ap.parse_args()
    if args.worker:
        model, n, hooked = args.worker
        _worker(model, int(n), hooked == "1")
        return None
    if not args.before:
        ap.error("--before is required (a src directory of the code before the hook points)")
    load = [os.getloadavg()[0]]
    rows = []
    for model, n in CASES:
        now, quantities, overhead = _start(str(ROOT / "src"), model, n, True)
        before, _, _ = _start(args.before, model, n, False)
        wall: dict[str, list[float]] = {"before": [], **{q: [] for q in quantities}}
        cpu: dict[str, list[float]] = {q: [] for q in wall}
        for _ in range(args.repeats):
            for q, p in [("before", before)] + [(q, now) for q in quantities]:
                w, c = _ask(p, "plain" if q == "before" else q)
                wall[q].append(w)
                cpu[q].append(c)
        for p in (now, before):
            p.stdin.close()
            p.wait()
        med = {q: statistics.median(t) for q, t in wall.items()}
        med_cpu = {q: statistics.median(t) for q, t in cpu.items()}
        rows.append({"model": model, "n": n, "median_wall_s": med, "median_cpu_s": med_cpu,
                     "cpu_ratio_to_before": {q: med_cpu[q] / med_cpu["before"] for q in med_cpu},
                     "cpu_ratio_to_plain": {q: med_cpu[q] / med_cpu["plain"] for q in med_cpu},
                     "hook_points_python_s": overhead, "hook_points_fraction": overhead / med_cpu["plain"]})
        print(model, n, {q: f"{med[q] * 1e3:.1f} ms wall, {med_cpu[q] * 1e3:.1f} ms CPU" for q in med},
              f"points {overhead * 1e6:.0f} us", flush=True)
    load.append(os.getloadavg()[0])
    import torch

    result = {"rows": rows, "repeats": args.repeats, "load_1min_before_after": load, "note": args.note,
              "torch": torch.__version__, "threads": torch.get_num_threads(), "cpu_count": os.cpu_count(),
              "platform": platform.platform()}
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "hooks-cpu.json").write_text(json.dumps(result, indent=1) + "\n")
    lines = ["# Hook points: cost of a forward pass with none attached, and of caching (CPU, float32)", "",
             f"Medians of {args.repeats} interleaved rounds; 1-minute load {load[0]:.1f} before, {load[1]:.1f} after"
             + (f"; {args.note}" if args.note else "") + ".", "",
             "| model | n | before: CPU ms (wall) | hook points, none attached: CPU ms (wall) | CPU ratio | "
             "points' Python time per pass | share of the pass | cache, fused (CPU x plain) | "
             "cache, every point | identity hook on every hook_z |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        m, c, rp = r["median_wall_s"], r["median_cpu_s"], r["cpu_ratio_to_plain"]
        lines.append(f"| {r['model']} | {r['n']} | {c['before'] * 1e3:.1f} ({m['before'] * 1e3:.1f}) | "
                     f"{c['plain'] * 1e3:.1f} ({m['plain'] * 1e3:.1f}) | {r['cpu_ratio_to_before']['plain']:.3f} | "
                     f"{r['hook_points_python_s'] * 1e6:.0f} us | {100 * r['hook_points_fraction']:.2f}% | "
                     f"{rp['cache_fused']:.2f} | {rp['cache_all']:.2f} | {rp['hook_z_identity']:.2f} |")
    (OUT / "hooks-cpu.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return result


if __name__ == "__main__":
    main()
