"""Killed and interrupted sweeps: kill -9 (inline, and a process pool's whole group), Ctrl-C.

Each test starts `python -m attnlab.cli sweep` in a subprocess, stops it once some but
not all runs have finished, then resumes and compares with an uninterrupted sweep.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from attnlab.sweeps import SweepSpec, run_sweep

SELFTEST = "selftest.sweep"
N_RUNS = 5
# Each run sleeps SLEEP s: long enough that the sweep cannot finish its remaining runs
# between the first result.json and the signal even when the test process is starved
# of CPU for a moment (0.2 s was not, on 2 busy cores).
SLEEP = 0.6
ARGS = ["--grid", ",".join(f"n={n}" if i == 0 else str(n) for i, n in enumerate(range(1, N_RUNS + 1))),
        "--set", f"sleep={SLEEP}"]


@pytest.fixture(scope="module")
def reference(tmp_path_factory, table_without_timing):
    """The table of the same sweep, uninterrupted."""
    spec = SweepSpec(SELFTEST, base={"sleep": SLEEP}, grid={"n": list(range(1, N_RUNS + 1))})
    res = run_sweep(spec, tmp_path_factory.mktemp("reference") / "s", executor="inline")
    assert res.n_ok == N_RUNS
    return table_without_timing(res.table_path)


def _start(out: Path, executor: str) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "attnlab.cli", "sweep", SELFTEST, *ARGS, "--executor", executor,
           "--workers", "2", "--out", str(out)]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True,  # its own process group: workers included
                            preexec_fn=_default_sigint)


def _default_sigint() -> None:
    # As started from a terminal. An ignored SIGINT is inherited across exec, and Python
    # then keeps ignoring it: a test process that ignores SIGINT (some library in the
    # suite leaves it so) would otherwise start a sweep that Ctrl-C cannot reach.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _finished(out: Path) -> dict[str, os.stat_result]:
    return {p.parent.name: p.stat() for p in (out / "runs").glob("*/result.json")} if (out / "runs").exists() else {}


def _wait_for_some(proc: subprocess.Popen, out: Path, at_least: int) -> None:
    deadline = time.monotonic() + 90
    while len(_finished(out)) < at_least:
        assert proc.poll() is None, f"sweep ended early: {proc.stderr.read()}"
        assert time.monotonic() < deadline, "no run finished in 90 s"
        time.sleep(0.02)


def _group_gone(pgid: int, within: float = 10) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def _resume_and_check(out: Path, before: dict, reference, cli, table_without_timing) -> None:
    code, _, err = cli(["sweep", SELFTEST, *ARGS, "--executor", "inline", "--out", str(out), "--resume"])
    assert code == 0, err
    assert table_without_timing(out / "results.csv") == reference
    after = _finished(out)
    assert len(after) == N_RUNS
    for run_id, st in before.items():  # finished before the kill: not recomputed
        assert (after[run_id].st_ino, after[run_id].st_mtime_ns) == (st.st_ino, st.st_mtime_ns)
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["ok"], summary["skipped"], summary["pending"]) == (N_RUNS, len(before), 0)


def _table_is_consistent(out: Path, finished: dict) -> None:
    """results.csv after a kill: readable, and only runs whose result.json exists."""
    rows = list(csv.DictReader((out / "results.csv").open()))
    assert {r["status"] for r in rows} <= {"ok"}
    ids = {r["run_id"] for r in rows}
    assert ids <= set(finished) and len(ids) >= len(finished) - 2  # at most the runs finishing at the kill


@pytest.mark.slow
@pytest.mark.parametrize("executor", ["inline", "process"])
def test_kill_9_then_resume_gives_the_uninterrupted_table(executor, tmp_path, reference, cli,
                                                          table_without_timing):
    out = tmp_path / "s"
    proc = _start(out, executor)
    _wait_for_some(proc, out, 2)
    os.killpg(proc.pid, signal.SIGKILL)  # the sweep and, for the pool, its workers
    proc.wait(timeout=10)
    assert _group_gone(proc.pid)
    before = _finished(out)
    assert 2 <= len(before) < N_RUNS
    _table_is_consistent(out, before)
    _resume_and_check(out, before, reference, cli, table_without_timing)


@pytest.mark.slow
def test_ctrl_c_stops_workers_keeps_results_and_exits_130(tmp_path, reference, cli, table_without_timing):
    out = tmp_path / "s"
    proc = _start(out, "process")
    _wait_for_some(proc, out, 1)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)  # to the sweep process only: it must stop its workers itself
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and time.monotonic() - t0 < 10
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "--resume" in lines[0] and str(out) in lines[0], err
    assert "Traceback" not in err
    assert _group_gone(proc.pid)  # no worker left behind
    before = _finished(out)
    assert 1 <= len(before) < N_RUNS
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] is True
    assert (summary["ok"], summary["pending"]) == (len(before), N_RUNS - len(before))
    assert {r["run_id"] for r in csv.DictReader((out / "results.csv").open())} == set(before)
    _resume_and_check(out, before, reference, cli, table_without_timing)
