"""Every output path is checked before any work: where nothing can be written (/proc, a file where a
folder must be, an unwritable working directory for the default runs/), one line, exit status 2,
at once, and nothing written."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from attnlab.runs.rundir import check_writable

PROC = Path("/proc")
needs_proc = pytest.mark.skipif(not (PROC / "self").is_dir(), reason="needs Linux's /proc")

# construct memorization H=300 builds for hours: refused at once, or this test times out
COMMANDS = {
    "construct": ["construct", "memorization", "--set", "H=300", "--out", "{out}.npz"],
    "construct --dry-run": ["construct", "memorization", "--set", "H=300", "--dry-run", "--out", "{out}.npz"],
    "reproduce": ["reproduce", "logic", "--out", "{out}"],
    "sweep": ["sweep", "logic.learning", "--out", "{out}"],
    "analyze": ["analyze", "--out", "{out}"],
    "bench": ["bench", "--quick", "--out", "{out}"],
}


def _argv(name: str, out: str) -> list[str]:
    return [a.replace("{out}", out) for a in COMMANDS[name]]


@needs_proc
@pytest.mark.parametrize("name", COMMANDS)
def test_an_out_in_proc_is_refused_before_any_work(cli_error, name):
    start = time.perf_counter()
    line = cli_error(_argv(name, "/proc/attnlab-out"))
    assert "cannot write to --out /proc/attnlab-out" in line and ": No such file or directory; choose a writable" in line
    assert time.perf_counter() - start < 10
    assert not any(p.name.startswith("attnlab-out") for p in PROC.iterdir())


@pytest.mark.parametrize("name", COMMANDS)
def test_an_out_below_a_file_is_refused_and_nothing_written(cli_error, tmp_path, name):
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    line = cli_error(_argv(name, str(a_file / "sub")))
    assert f"cannot write to --out {a_file / 'sub'}" in line and ": Not a directory; choose a writable" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"] and a_file.read_text() == "x"


@needs_proc
def test_the_default_runs_folder_is_checked_too(cli_error, monkeypatch):
    monkeypatch.chdir(PROC)
    line = cli_error(["reproduce", "logic"])
    assert line == "attnlab: error: cannot write to --out runs: No such file or directory; choose a writable directory"


def test_check_writable_leaves_nothing_behind(tmp_path):
    target = tmp_path / "new" / "deeper"
    assert check_writable(target) == target
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "f").write_text("x")
    assert check_writable(tmp_path / "f") == tmp_path / "f"  # an existing file may be replaced
    assert sorted(os.listdir(tmp_path)) == ["f"]
