"""Benchmark: wall time of `attnlab --help` and `attnlab list`, each a fresh process as a user starts it.

Run by hand (not a test):  .venv/bin/python benchmarks/bench_cli_startup.py [--repeats 7]

Each command runs ``--repeats`` times (output to /dev/null); the table gives the median, the
fastest and the slowest wall time. Two references run the same way: the interpreter alone
(``python -c pass``) and ``import torch``. `attnlab --help` imports the command line only (no
torch: tests/test_package.py); `attnlab list` imports every paper, so torch and the registry, and
costs about what ``import torch`` costs plus the papers. The command is the ``attnlab`` script
beside the interpreter when there is one, else ``python -m attnlab``; the environment is passed
on (PYTHONPATH included). The 1-minute load average is recorded before and after: wall times on a
loaded machine are several times those on a quiet one. Writes
benchmarks/results/cli-startup.json and benchmarks/results/cli-startup.md. About a minute on 2 loaded cores.
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

RESULTS = Path(__file__).parent / "results"
GOAL_HELP_S = 0.5
"""`attnlab --help` within half a second on 2 cores."""


def attnlab_command() -> list[str]:
    """The ``attnlab`` script installed beside this interpreter, or ``python -m attnlab``."""
    script = Path(sys.executable).with_name("attnlab")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "attnlab"]


def wall_times(argv: list[str], repeats: int) -> list[float]:
    """Seconds each of ``repeats`` runs of ``argv`` took, start to exit (one untimed run first)."""
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)  # warms the file cache
    out = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        out.append(time.perf_counter() - start)
    return out


def machine() -> str:
    """The CPU model, its cores, the OS and the Python that ran the commands."""
    model = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        names = [line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines()
                 if line.startswith("model name")]
        model = names[0] if names else model
    return (f"{model}, {os.cpu_count()} cores, {platform.system()} {platform.release()}, "
            f"Python {platform.python_version()}")


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--out", type=Path, default=RESULTS)
    p.add_argument("--note", default="", help="A sentence on the conditions (e.g. another job holding the cores).")
    a = p.parse_args(argv)
    cmd = attnlab_command()
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "python -c 'import torch'": [sys.executable, "-c", "import torch"],
        "attnlab --help": [*cmd, "--help"],
        "attnlab list": [*cmd, "list"],
    }
    start = time.perf_counter()
    load_before = os.getloadavg()[0]
    rows = []
    for name, args in commands.items():
        t = wall_times(args, a.repeats)
        rows.append({"command": name, "argv": args, "median_s": statistics.median(t), "min_s": min(t),
                     "max_s": max(t), "runs_s": t})
        print(f"{name}: median {statistics.median(t):.2f} s", flush=True)
    out = {
        "machine": machine(),
        "command": " ".join(cmd),
        "repeats": a.repeats,
        "load_average_1m": [load_before, os.getloadavg()[0]],
        "note": a.note,
        "rows": rows,
        "goal_help_s": GOAL_HELP_S,
        "seconds": round(time.perf_counter() - start, 1),
    }
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "cli-startup.json").write_text(json.dumps(out, indent=2) + "\n")
    text = table(out)
    (a.out / "cli-startup.md").write_text(text)
    print(text)
    return out


def table(out: dict) -> str:
    lo, hi = out["load_average_1m"]
    help_s = next(r["median_s"] for r in out["rows"] if r["command"] == "attnlab --help")
    lines = [
        "# Start-up: `attnlab --help` and `attnlab list`",
        "",
        f"Machine: {out['machine']}; 1-minute load {lo:.2f} -> {hi:.2f}; {out['seconds']} s in all.",
        f"Command: `{out['command']}`; {out['repeats']} runs each after one untimed run, output to /dev/null. "
        "Produced by benchmarks/bench_cli_startup.py.",
    ]
    if out["note"]:
        lines.append(f"Conditions: {out['note']}")
    lines += [
        "",
        "| command | median s | fastest s | slowest s |",
        "|---|---|---|---|",
    ]
    for r in out["rows"]:
        lines.append(f"| `{r['command']}` | {r['median_s']:.2f} | {r['min_s']:.2f} | {r['max_s']:.2f} |")
    lines += [
        "",
        f"`attnlab --help`: median {help_s:.2f} s against the goal of {out['goal_help_s']} s "
        f"({'met' if help_s <= out['goal_help_s'] else 'not met'} in this run).",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
