"""Helpers shared by test modules (importable: tests/conftest.py puts this directory on sys.path)."""

from __future__ import annotations

import html
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from attnlab.cli import main


def run_cli(argv: list[str], columns: int = 120) -> subprocess.CompletedProcess:
    """``attnlab ARGV`` in this process, as a fresh interpreter would run it with COLUMNS=columns:
    its exit status and what it printed, as a CompletedProcess (no interpreter start-up per call)."""
    import contextlib
    import io

    import attnlab.cli as cli
    from attnlab.commands.console import make_console

    out, err = io.StringIO(), io.StringIO()
    saved = cli.console
    cli.console = make_console(width=columns)  # writes to whatever sys.stdout is at the time
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = exit_status(argv)
    finally:
        cli.console = saved
    return subprocess.CompletedProcess(["attnlab", *argv], code, out.getvalue(), err.getvalue())


def exit_status(argv: list[str]) -> int:
    """Run the command line in-process; its exit status (0 when it returns normally)."""
    try:
        main(argv)
    except SystemExit as e:
        return int(e.code or 0)
    return 0


# ---- the attention viewer in headless Chromium ------------------------------------------------------
def chromium() -> str:
    """The Chromium binary; skips the test where none is installed."""
    import pytest

    path = shutil.which("chromium")
    if path is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return path


def dump_dom(page: Path, fragment: str) -> tuple[str, str]:
    """The DOM of ``page`` opened at ``fragment`` ("#layer=1&...") after its scripts ran, and Chromium's log
    (console messages included)."""
    with tempfile.TemporaryDirectory(prefix="attnlab-chromium-") as profile:
        proc = subprocess.run(
            [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--enable-logging=stderr", "--v=0", f"--user-data-dir={profile}", "--dump-dom",
             page.as_uri() + fragment],
            capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout, proc.stderr


def viewer_state(dom: str, uid: str) -> dict[str, str]:
    """The data-* attributes of the viewer's state element ``uid``-state (unescaped)."""
    tag = re.search(rf'<span [^>]*id="{uid}-state"[^>]*>', dom).group(0)
    return {k: html.unescape(v) for k, v in re.findall(r'data-([a-z-]+)="([^"]*)"', tag)}


def state_pairs(text: str) -> dict[str, str]:
    """"a=1;b=2" (data-scores, data-score-ranks) -> {"a": "1", "b": "2"}."""
    return dict(kv.split("=", 1) for kv in text.split(";")) if text else {}


# A fresh process measures one build as the estimates count it: one BLAS and one torch thread,
# and glibc's allocator returning every block of 1 MiB or more when it is freed (by default it
# keeps freed blocks under a threshold that grows to 32 MiB, so the resident size would say how
# the allocator behaved rather than what the build held).
_MEASURE = r"""
import json, re, sys, time
import torch
torch.set_num_threads(1)
from attnlab.config import build_config, coerce_field
from attnlab.registry import get_construction

def status(key):
    return int(re.search(key + r":\s+(\d+) kB", open("/proc/self/status").read()).group(1)) * 1024

name, settings = sys.argv[1], json.loads(sys.argv[2])
c = get_construction(name)
p = build_config(c.params_cls, {k: coerce_field(name, c.params_cls, k, v) for k, v in settings.items()})
est = c.estimate(p)
seconds = est.seconds  # the rates are measured here, before the builds
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # the peak resident size restarts from the present one
base = status("VmRSS")
c.build(p)  # the first build: its memory, first calls and imports included
peak = status("VmHWM") - base
t = time.perf_counter()
c.build(p)  # the second: its time
print(json.dumps({"settings": settings, "seconds": time.perf_counter() - t, "peak_bytes": peak,
                  "estimated_seconds": seconds, "estimated_bytes": est.peak_bytes}))
"""


def measure_build(name: str, settings: dict) -> dict:
    """Build construction ``name`` with ``settings`` (--set values) in a fresh process and compare
    with its estimate: {settings, peak_bytes (the resident size the first build added), seconds
    (the second build's time), estimated_bytes, estimated_seconds}. Linux only (/proc)."""
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "MALLOC_MMAP_THRESHOLD_": str(2 ** 20)}
    p = subprocess.run([sys.executable, "-c", _MEASURE, name, json.dumps(settings)], capture_output=True, text=True,
                       env=env, timeout=900)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


MEMORY_FACTOR = 2.0  # an estimated peak memory is within this factor of the measured one
TIME_FACTOR = 4.0  # an estimated time is within this factor of the measured one (one thread, this machine)


def assert_estimate_holds(m: dict) -> None:
    """The estimate of :func:`measure_build`'s build within MEMORY_FACTOR of its peak memory and
    within TIME_FACTOR of its time."""
    mem, time_ = m["peak_bytes"] / m["estimated_bytes"], m["seconds"] / m["estimated_seconds"]
    what = (f"{m['settings']}: measured {m['peak_bytes'] / 2**20:.1f} MiB, {m['seconds']:.2f} s; estimated "
            f"{m['estimated_bytes'] / 2**20:.1f} MiB, {m['estimated_seconds']:.2f} s")
    assert 1 / MEMORY_FACTOR <= mem <= MEMORY_FACTOR, what
    assert 1 / TIME_FACTOR <= time_ <= TIME_FACTOR, what


def tally_of(out: str) -> str:
    """The tally a command ends with (``attnlab.checks.tally_line``), its folded lines joined again."""
    lines = out.rstrip().splitlines()
    start = max(i for i, line in enumerate(lines) if re.match(r"\d+ (claims|checks) · ", line))
    return " · ".join(line.strip() for line in lines[start:])


def paper_folders() -> dict[str, Path]:
    """Paper name -> folder, for every paper package on ``attnlab.papers.__path__``: the folders of
    src/attnlab/papers/, and a folder a test joins to that path (tests/test_sixth_paper.py)."""
    import attnlab.papers

    return {f.name.replace("_", "-"): f for root in attnlab.papers.__path__ for f in sorted(Path(root).iterdir())
            if (f / "__init__.py").is_file()}
