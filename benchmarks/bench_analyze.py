"""Benchmark: ``attnlab analyze --model MODEL`` end to end, as a user runs it, and where its time goes.

Run by hand (not a test):
    .venv/bin/python benchmarks/bench_analyze.py [--model minilm|smollm2] [--repeats 3] [--compare-src DIR]

Workload: a shipped model, all-MiniLM-L6-v2 (6 layers x 12 heads; target 10 s) or SmolLM2-135M-Instruct
(30 layers x 9 heads, with the evidence a decoder gets: direct logit attribution and the ablations;
target 90 s), on the default text (the English of pydoc_data.topics), 8 segments of at most 128
tokens, float32 on the CPU: the command's defaults.

End to end: ``python -m attnlab.cli analyze --model minilm --out TMP`` (what the ``attnlab`` console
script runs) in a fresh subprocess, wall clock from start to exit, model load and every import
included, ``--repeats`` times; the median is reported. --compare-src DIR times the same command with
``PYTHONPATH=DIR`` (another attnlab source tree, e.g. an earlier commit's ``src``) in the same run,
interleaved with the measured tree, so both see the same machine load.

Stages: one more run in a subprocess with timers around the command's steps (imports, model load,
segmenting, the forward passes, the per-segment analyses, the repeated-random-token prompts, writing
the JSON files, the figures, the rest of the report); the stages do not add up to the wall time
exactly (interpreter start-up and the CLI are outside them).

Target: <= 10 s (MiniLM) or <= 90 s (SmolLM2) wall on 2 CPU cores, model load included. Timings
depend on what else runs on the machine: the 1-minute load average is recorded before and after
every run.

Writes benchmarks/results/analyze-<model>-cpu.json and .md; prints the table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results"
SRC = Path(__file__).resolve().parent.parent / "src"
TARGETS = {"minilm": 10.0, "smollm2": 90.0}
STAGES = ("imports", "load model", "segments", "forward passes", "per-segment analyses", "evidence",
          "weight circuits", "ablations", "repeated random tokens", "write JSON", "figures", "report (rest)")
MODEL = os.environ.get("ATTNLAB_BENCH_MODEL", "minilm")


def _load() -> float:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def _env(src: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(src)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env["ATTNLAB_PROGRESS"] = "0"
    env["ATTNLAB_BENCH_MODEL"] = MODEL
    return env


def end_to_end(src: Path) -> dict:
    """One ``attnlab analyze --model MODEL`` in a fresh process: wall seconds and the load around it."""
    with tempfile.TemporaryDirectory() as tmp:
        before = _load()
        start = time.perf_counter()
        p = subprocess.run([sys.executable, "-m", "attnlab.cli", "analyze", "--model", MODEL,
                            "--out", str(Path(tmp) / "run")], env=_env(src), capture_output=True, text=True)
        wall = time.perf_counter() - start
    if p.returncode != 0:
        raise SystemExit(f"attnlab analyze failed ({p.returncode}): {p.stderr.strip()[-2000:]}")
    return {"seconds": round(wall, 3), "load_before": round(before, 2), "load_after": round(_load(), 2)}


def stages(src: Path) -> dict:
    """The stage timings of one run, measured in a fresh subprocess (``--child``)."""
    p = subprocess.run([sys.executable, __file__, "--child"], env=_env(src), capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"the stage run failed ({p.returncode}): {p.stderr.strip()[-2000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def _child() -> None:
    """Run analyze in this process with timers around its steps; print the timings as one JSON line."""
    start = time.perf_counter()
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as the CLI does before torch is imported
    import attnlab.cli  # noqa: F401  (the CLI's own imports, as a user's run pays them)
    import attnlab.pretrained as pretrained
    import attnlab.reports as reports
    import attnlab.reports.figures as figures
    import attnlab.commands.analyze.run as an
    import attnlab.commands.analyze.evidence as ev
    from attnlab.runs.rundir import RunDir

    acc = dict.fromkeys(STAGES, 0.0)
    acc["imports"] = time.perf_counter() - start

    def timed(owner, name: str, stage: str) -> None:
        f = getattr(owner, name)

        def wrapper(*args, **kwargs):
            t = time.perf_counter()
            try:
                return f(*args, **kwargs)
            finally:
                acc[stage] += time.perf_counter() - t
        setattr(owner, name, wrapper)

    timed(pretrained, "load_pretrained", "load model")
    timed(an, "make_segments", "segments")
    timed(an, "repeated_prompts", "repeated random tokens")
    timed(an, "analyse_segment", "per-segment analyses")
    timed(ev, "per_segment", "evidence")
    timed(ev, "weights", "weight circuits")
    timed(ev, "run_ablations", "ablations")
    timed(an, "repeated_scores", "repeated random tokens")
    timed(RunDir, "write_json", "write JSON")
    timed(figures, "render", "figures")
    timed(reports, "build_report", "report (rest)")
    maps = an.segment_maps

    def segment_maps(*args, **kwargs):  # the forward passes are the generator's own time
        it = maps(*args, **kwargs)
        while True:
            t = time.perf_counter()
            try:
                item = next(it)
            except StopIteration:
                return
            finally:
                acc["forward passes"] += time.perf_counter() - t
            yield item
    an.segment_maps = segment_maps
    with tempfile.TemporaryDirectory() as tmp:
        an.analyze(MODEL, out=Path(tmp) / "run")
    acc["report (rest)"] -= acc["figures"]
    # repeated_scores runs its own forward passes through model_maps, which is counted with it
    acc["total in process"] = time.perf_counter() - start
    print(json.dumps({k: round(v, 3) for k, v in acc.items()}))


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=tuple(TARGETS), default="minilm")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--compare-src", type=Path, default=None,
                   help="another attnlab source tree (its src directory), timed in the same run")
    p.add_argument("--out", type=Path, default=RESULTS)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    global MODEL
    MODEL = a.model if not a.child else MODEL
    if a.child:
        _child()
        return {}
    import torch

    trees = {"this tree": SRC} | ({"compared": a.compare_src.resolve()} if a.compare_src else {})
    runs: dict[str, list[dict]] = {k: [] for k in trees}
    for i in range(a.repeats):
        for name, src in trees.items():
            r = end_to_end(src)
            runs[name].append(r)
            print(f"[{i + 1}/{a.repeats}] {name}: {r['seconds']:.2f} s (load {r['load_before']:.2f})", flush=True)
    stage = {name: stages(src) for name, src in trees.items()}
    out = {
        "command": f"attnlab analyze --model {MODEL} (8 segments of 128 tokens, float32, cpu)",
        "machine": {"cpu": _cpu_name(), "cores": os.cpu_count(), "torch_threads": torch.get_num_threads(),
                    "python": platform.python_version(), "torch": torch.__version__},
        "target_seconds": TARGETS[MODEL],
        "trees": {name: str(src) for name, src in trees.items()},
        "runs": runs,
        "median_seconds": {k: statistics.median(r["seconds"] for r in v) for k, v in runs.items()},
        "stages": stage,
    }
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / f"analyze-{MODEL}-cpu.json").write_text(json.dumps(out, indent=2) + "\n")
    (a.out / f"analyze-{MODEL}-cpu.md").write_text(markdown(out))
    print(markdown(out))
    return out


def markdown(out: dict) -> str:
    m = out["machine"]
    names = list(out["runs"])
    lines = [f"# `{out['command']}`", "",
             f"{m['cpu']}, {m['cores']} cores, torch {m['torch']} ({m['torch_threads']} threads), "
             f"Python {m['python']}. Wall clock of a fresh process, model load and imports included; "
             f"median of {len(out['runs'][names[0]])}. Target {out['target_seconds']:g} s.", "",
             "| tree | median s | runs (s) | 1-min load before each run |", "|---|---|---|---|"]
    for k in names:
        secs = ", ".join(f"{r['seconds']:.2f}" for r in out["runs"][k])
        loads = ", ".join(f"{r['load_before']:.2f}" for r in out["runs"][k])
        lines.append(f"| {k} | {out['median_seconds'][k]:.2f} | {secs} | {loads} |")
    lines += ["", "Stages (one run each, seconds):", "",
              "| stage | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for s in (*STAGES, "total in process"):
        lines.append(f"| {s} | " + " | ".join(f"{out['stages'][k].get(s, float('nan')):.2f}" for k in names) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
