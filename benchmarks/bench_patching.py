"""Benchmark: the IOI residual-stream patching grid on SmolLM2-135M, batched, against single passes.

Run by hand (not a test):

    .venv/bin/python benchmarks/bench_patching.py [--threads 1,2] [--chunk-sizes 16,32,64] [--loop-cells 6]

Clean " When Mary and John went to the store, John gave a drink to", corrupted with " Mary" in the second
name's place (15 tokens each with the BOS ``<|im_start|>`` that ``to_tokens`` prepends), metric the logit
difference " Mary" - " John" at the last position. The grid patches ``blocks.{l}.hook_resid_pre`` for every
block l = 0..29 and the last block's ``hook_resid_post`` (31 rows) at each of the 15 positions: 465 patched
runs, float32, timed end to end (``attnlab.patching.patch_resid_pre``: the clean and corrupted passes and
the batched patched passes), wall and process CPU time, for each torch thread count and chunk size given.
The unbatched route, one whole forward pass per cell with one hook (``run_with_hooks``), is timed on
``--loop-cells`` cells and scaled to the 465 cells for the ratio; the batched cells are compared with them.
The goal: the grid in <= 30 s on 2 cores. The head-output grid (``patch_heads``, hook_z, 30 x 9) is
timed once at the first thread count. The 1-minute load average is recorded before and after.
Writes benchmarks/results/patching-cpu.json and .md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import torch

from attnlab.patching import LogitDiff, patch_heads, patch_resid_pre
from attnlab.pretrained import load_pretrained

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results"
CLEAN = " When Mary and John went to the store, John gave a drink to"
CORRUPTED = " When Mary and John went to the store, Mary gave a drink to"


def _timed(fn):  # noqa: ANN001, ANN202 - a benchmark helper
    """(fn(), wall seconds, process CPU seconds)."""
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def _single(pm, clean_cache, corrupted, metric, name, p):  # noqa: ANN001, ANN202
    """One whole forward pass with ``name`` at position ``p`` overwritten by the clean value."""

    def write(x, _name):  # noqa: ANN001, ANN202
        x = x.clone()
        x[:, p] = clean_cache[name][:, p]
        return x

    return metric(pm.run_with_hooks(corrupted, [(name, write)])[:, -1]).item()


def main() -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", default="1,2", help="torch thread counts, comma-separated")
    ap.add_argument("--chunk-sizes", default="16,32,64", help="patched runs per forward pass (at the first thread count)")
    ap.add_argument("--loop-cells", type=int, default=6, help="cells timed one whole pass each")
    ap.add_argument("--note", default="")
    args = ap.parse_args()
    threads = [int(t) for t in args.threads.split(",")]
    chunks = [int(c) for c in args.chunk_sizes.split(",")]
    load = [os.getloadavg()[0]]
    pm, load_s, _ = _timed(lambda: load_pretrained("smollm2", dtype="float32"))
    clean, corrupted = pm.to_tokens(CLEAN), pm.to_tokens(CORRUPTED)
    assert clean.shape == corrupted.shape == (1, 15), (clean.shape, corrupted.shape)
    metric = LogitDiff.from_text(pm, " Mary", " John")
    runs, res = [], None
    for i, t in enumerate(threads):
        torch.set_num_threads(t)
        for chunk in chunks if i == 0 else chunks[-1:]:
            res, wall, cpu = _timed(lambda: patch_resid_pre(pm, clean, corrupted, metric, include_final=True,
                                                            chunk_size=chunk))
            runs.append({"threads": t, "chunk_size": chunk, "wall_s": wall, "cpu_s": cpu})
            print(f"grid {tuple(res.grid.shape)}: {t} thread(s), chunk {chunk}: {wall:.1f} s wall, {cpu:.1f} s CPU",
                  flush=True)
    torch.set_num_threads(threads[0])
    heads, heads_wall, heads_cpu = _timed(lambda: patch_heads(pm, clean, corrupted, metric, activation="z"))
    print(f"heads {tuple(heads.grid.shape)}: {heads_wall:.1f} s wall", flush=True)
    _, cache = pm.run_with_cache(clean, names_filter=list(res.hook_names))
    cells = [(30, 14), (29, 10), (20, 12), (15, 10), (5, 10), (0, 10)][:args.loop_cells]
    loop, errs = [], []
    for l, p in cells:
        v, wall, cpu = _timed(lambda: _single(pm, cache, corrupted, metric, res.hook_names[l], p))
        loop.append({"layer_row": l, "position": p, "wall_s": wall, "cpu_s": cpu})
        errs.append(abs(v - res.grid[l, p].item()))
    per_cell = sorted(c["wall_s"] for c in loop)[len(loop) // 2]
    per_cell_cpu = sorted(c["cpu_s"] for c in loop)[len(loop) // 2]
    load.append(os.getloadavg()[0])
    best = min(r["wall_s"] for r in runs)
    n_cells = res.grid.numel()
    result = {"grid_shape": list(res.grid.shape), "cells": n_cells, "runs": runs, "loop_cells": loop,
              "loop_median_wall_s_per_cell": per_cell, "loop_median_cpu_s_per_cell": per_cell_cpu,
              "loop_estimate_wall_s": per_cell * n_cells, "loop_estimate_cpu_s": per_cell_cpu * n_cells,
              "ratio_loop_to_best_grid_wall": per_cell * n_cells / best,
              "max_abs_grid_minus_loop_float32": max(errs), "clean": res.clean, "corrupted": res.corrupted,
              "recovered": {"layer0_pos10": res.recovered[0, 10].item(), "final_pos14": res.recovered[30, 14].item()},
              "heads_z_grid_shape": list(heads.grid.shape), "heads_z_wall_s": heads_wall, "heads_z_cpu_s": heads_cpu,
              "heads_z_threads": threads[0], "model_load_s": load_s, "load_1min_before_after": load, "note": args.note, "torch": torch.__version__,
              "cpu_count": os.cpu_count(), "platform": platform.platform(), "processor": platform.processor()}
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "patching-cpu.json").write_text(json.dumps(result, indent=1) + "\n")
    lines = ["# Patching: the IOI residual grid on SmolLM2-135M (CPU, float32)", "",
             f"Grid {res.grid.shape[0]} x {res.grid.shape[1]} = {n_cells} patched runs (blocks.{{l}}.hook_resid_pre for "
             f"l = 0..29 and blocks.29.hook_resid_post, 15 positions), end to end with the clean and corrupted passes. "
             f"{os.cpu_count()} cores, 1-minute load {load[0]:.1f} before, {load[1]:.1f} after (a loaded machine)"
             + (f"; {args.note}" if args.note else "") + ".", "",
             "| torch threads | chunk size | wall s | CPU s |", "|---|---|---|---|"]
    lines += [f"| {r['threads']} | {r['chunk_size']} | {r['wall_s']:.1f} | {r['cpu_s']:.1f} |" for r in runs]
    lines += ["", f"Unbatched (one whole pass per cell, {threads[0]} thread(s)): median {per_cell * 1e3:.0f} ms wall "
              f"({per_cell_cpu * 1e3:.0f} ms CPU) per cell over {len(loop)} cells, so {per_cell * n_cells:.0f} s for "
              f"the grid: {per_cell * n_cells / best:.1f}x the best batched wall time. Batched cells against those "
              f"passes: max |difference| {max(errs):.1e} (float32). Clean logit difference {res.clean:.3f}, corrupted "
              f"{res.corrupted:.3f}; recovered fraction 1 at layer 0 position 10 ({res.recovered[0, 10]:.4f}) and "
              f"at the final stream's last position ({res.recovered[30, 14]:.4f}).", "",
              f"Head outputs (hook_z, one head at every position, {heads.grid.shape[0]} x {heads.grid.shape[1]} = "
              f"{heads.grid.numel()} patched runs, {threads[0]} thread(s), chunk 32): {heads_wall:.1f} s wall "
              f"({heads_cpu:.1f} s CPU)."]
    (OUT / "patching-cpu.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return result


if __name__ == "__main__":
    main()
