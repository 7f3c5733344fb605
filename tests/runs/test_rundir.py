"""Run directories: atomic writes, tolerant metrics, one-line errors."""

from __future__ import annotations

import json
import os

import pytest

from attnlab.errors import RunDirError
from attnlab.runs.rundir import RunDir, load_run


def _names(d):
    return sorted(p.name for p in d.iterdir())


def test_atomic_writes_leave_no_temp_files(tmp_path):
    rd = RunDir.create(tmp_path / "run")
    rd.write_config({"scale": "quick", "seed": 3}, ["attnlab", "reproduce", "x"])
    rd.write_env(seed=3, device="cpu")
    for i in range(5):
        rd.write_results({"round": i})
    rd.write_text("report.md", "# hi\n")
    assert _names(rd.path) == ["config.json", "env.json", "figures", "report.md", "results.json"]
    assert json.loads((rd.path / "results.json").read_text()) == {"round": 4}
    cfg = json.loads((rd.path / "config.json").read_text())
    assert cfg == {"scale": "quick", "seed": 3, "argv": ["attnlab", "reproduce", "x"]}


def test_written_files_follow_the_umask(tmp_path):
    rd = RunDir.create(tmp_path / "run")
    rd.write_results({})
    mask = os.umask(0)
    os.umask(mask)
    assert (rd.path / "results.json").stat().st_mode & 0o777 == 0o666 & ~mask


def test_failed_write_keeps_the_old_file_and_no_temp(tmp_path, monkeypatch):
    rd = RunDir.create(tmp_path / "run")
    rd.write_results({"ok": 1})
    with pytest.raises(TypeError):  # not JSON-able: fails before any file is touched
        rd.write_results({"bad": object()})

    def disk_full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)  # fails after the temp file was written
    with pytest.raises(OSError, match="No space"):
        rd.write_results({"ok": 2})
    monkeypatch.undo()
    assert json.loads((rd.path / "results.json").read_text()) == {"ok": 1}
    assert not [p for p in rd.path.iterdir() if p.name.endswith(".tmp")]


def test_non_finite_floats_are_stored_as_strings(tmp_path):
    rd = RunDir.create(tmp_path / "run")
    rd.write_results({"x": float("inf"), "y": (1.5, -2)})
    assert json.loads((rd.path / "results.json").read_text()) == {"x": "inf", "y": [1.5, -2]}


def test_env_records_versions_device_and_seed(tmp_path):
    import torch

    rd = RunDir.create(tmp_path / "run")
    rd.write_env(seed=11, device="cpu")
    env = json.loads((rd.path / "env.json").read_text())
    assert env["seed"] == 11 and env["device"] == "cpu"
    assert env["torch"] == torch.__version__
    assert env["torch_threads"] == torch.get_num_threads()
    for key in ("python", "numpy", "platform", "git_commit", "date"):
        assert key in env


def test_metrics_torn_last_line_is_dropped(tmp_path):
    rd = RunDir.create(tmp_path / "run")
    for i in range(3):
        rd.append_metric({"step": i, "loss": 1.0 / (i + 1)})
    with open(rd.path / "metrics.jsonl", "a") as f:
        f.write('{"step": 3, "lo')  # killed mid-line
    assert rd.read_metrics() == [{"step": i, "loss": 1.0 / (i + 1)} for i in range(3)]


def test_metrics_corrupt_middle_line_is_an_error(tmp_path):
    rd = RunDir.create(tmp_path / "run")
    (rd.path / "metrics.jsonl").write_text('{"a": 1}\nnot json\n{"a": 2}\n')
    with pytest.raises(RunDirError, match=r"corrupt line 2 in .*metrics\.jsonl"):
        rd.read_metrics()


def test_missing_metrics_reads_empty(tmp_path):
    assert RunDir.create(tmp_path / "run").read_metrics() == []


def _run(tmp_path):
    rd = RunDir.create(tmp_path / "run")
    rd.write_config({"papers": ["transformer-math"]}, [])
    return rd


def test_load_run_reads_back(tmp_path):
    rd = _run(tmp_path)
    rd.write_results({"experiments": {}})
    run = load_run(rd.path)
    assert run.config["papers"] == ["transformer-math"]
    assert run.results == {"experiments": {}} and run.env == {}


def test_corrupt_results_json_names_the_file(tmp_path):
    rd = _run(tmp_path)
    (rd.path / "results.json").write_text('{"experiments": {')
    with pytest.raises(RunDirError, match=r"corrupt JSON in .*results\.json \(line 1"):
        load_run(rd.path)


def test_corrupt_config_json_names_the_file(tmp_path):
    rd = _run(tmp_path)
    (rd.path / "config.json").write_text("[1, 2")
    with pytest.raises(RunDirError, match=r"config\.json"):
        load_run(rd.path)


def test_non_object_json_is_an_error(tmp_path):
    rd = _run(tmp_path)
    (rd.path / "env.json").write_text("[1, 2]")
    with pytest.raises(RunDirError, match=r"env\.json does not hold a JSON object"):
        load_run(rd.path)


def test_load_run_missing_and_foreign_dirs(tmp_path):
    with pytest.raises(RunDirError, match="does not exist"):
        load_run(tmp_path / "nope")
    (tmp_path / "plain").mkdir()
    with pytest.raises(RunDirError, match=r"not an attnlab run directory \(no config\.json\)"):
        load_run(tmp_path / "plain")
    (tmp_path / "f.txt").write_text("x")
    with pytest.raises(RunDirError, match="is a file"):
        load_run(tmp_path / "f.txt")


def test_create_refuses_foreign_nonempty_dir(tmp_path):
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(RunDirError, match="not empty and is not an attnlab run directory"):
        RunDir.create(tmp_path / "other")
    assert _names(tmp_path / "other") == ["notes.txt"]


def test_create_refuses_existing_run_unless_resume(tmp_path):
    rd = _run(tmp_path)
    with pytest.raises(RunDirError, match="already holds a run; pass --resume"):
        RunDir.create(rd.path)
    assert RunDir.create(rd.path, resume=True).path == rd.path


def test_create_accepts_an_empty_dir(tmp_path):
    (tmp_path / "empty").mkdir()
    assert (RunDir.create(tmp_path / "empty").path / "figures").is_dir()


def test_create_refuses_unwritable_places(tmp_path):
    (tmp_path / "f.txt").write_text("x")
    with pytest.raises(RunDirError, match="is a file"):
        RunDir.create(tmp_path / "f.txt")
    with pytest.raises(RunDirError, match="cannot write to .*; choose a writable --out"):
        RunDir.create(tmp_path / "f.txt" / "sub")


def test_default_run_dir_is_under_runs_with_a_utc_stamp():
    import re

    from attnlab.runs.rundir import default_run_dir

    assert re.fullmatch(r"runs/logic\+memorization-\d{8}T\d{6}Z", default_run_dir("logic", "memorization").as_posix())
    assert re.fullmatch(r"runs/analyze-my_model.v2-\d{8}T\d{6}Z", default_run_dir("analyze-my model.v2").as_posix())
