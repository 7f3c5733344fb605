"""run_sweep: determinism, the table, failures, resume without recomputation, out-dir rules."""

from __future__ import annotations

import json
import random

import numpy as np
import pandas as pd
import pytest
import torch

from attnlab.errors import ConfigError, UnknownNameError
from attnlab.sweeps import SweepSpec, run_sweep
from attnlab.sweeps.worker import check_scalars

SELFTEST = "selftest.sweep"
SPEC = SweepSpec(SELFTEST, base={"x": "1.5"}, grid={"n": ["2", "7"], "fail": ["false", "true"]}, seeds=2, seed0=3)


def _expected_scalars(x: float, n: int, seed: int, device: str = "cpu") -> dict:
    """What the self-test must return on ``device`` when the engine seeded torch, NumPy and random with
    ``seed`` (the draw and the mean's reduction order are the device's)."""
    torch.manual_seed(seed)
    z = torch.randn(n, dtype=torch.float64, device=device)
    np.random.seed(seed)
    random.seed(seed)
    return {"mean": (x * z).mean().item(), "np_u": float(np.random.random_sample()), "py_u": random.random(),
            "x_n": x * n}


def test_same_spec_twice_gives_the_same_table_bitwise(tmp_path, table_without_timing):
    a = run_sweep(SPEC, tmp_path / "a", executor="inline")
    b = run_sweep(SPEC, tmp_path / "b", executor="inline")
    assert table_without_timing(a.table_path) == table_without_timing(b.table_path)
    ok = [r for r in a.rows if r["status"] == "ok"]
    assert len(ok) == 4
    for r in ok:  # exact: the engine seeds every generator from the run's seed
        expected = _expected_scalars(1.5, r["n"], r["seed"], r["device"])
        assert {k: r[k] for k in ("mean", "np_u", "py_u", "x_n")} == expected
    # the CSV holds the same numbers, bit for bit (floats are written in shortest round-trip form)
    df = pd.read_csv(a.table_path)
    assert list(df.columns) == ["run_id", "status", "seed", "scale", "device", "x", "n", "fail", "sleep",
                                "mean", "np_u", "py_u", "x_n", "seconds"]
    assert df["mean"].dropna().tolist() == [r["mean"] for r in ok]


def test_failures_are_recorded_and_the_sweep_goes_on(tmp_path):
    res = run_sweep(SPEC, tmp_path / "s", executor="inline")
    assert (res.n_ok, res.n_failed, res.n_skipped) == (4, 4, 0)
    assert [r["status"] for r in res.rows] == ["ok", "ok", "failed", "failed"] * 2  # grid order
    summary = json.loads((tmp_path / "s" / "summary.json").read_text())
    assert {k: summary[k] for k in ("total", "ok", "failed", "skipped", "pending")} == \
        {"total": 8, "ok": 4, "failed": 4, "skipped": 0, "pending": 0}
    failed = [r for r in res.rows if r["status"] == "failed"]
    assert [f["run_id"] for f in summary["failures"]] == [r["run_id"] for r in failed]
    f = summary["failures"][0]
    assert f["error"] == "RuntimeError: requested failure (fail=true, x=1.5, n=2)"
    run = tmp_path / "s" / "runs" / f["run_id"]
    log = (run / "log.txt").read_text()
    assert "selftest: x=1.5 n=2" in log and "Traceback" in log and log.rstrip().endswith(f["error"])
    assert not (run / "result.json").exists() and (run / "config.json").exists()
    assert all(r["mean"] is None for r in failed)
    ok_dir = tmp_path / "s" / "runs" / res.rows[0]["run_id"]
    assert sorted(p.name for p in ok_dir.iterdir()) == ["config.json", "log.txt", "metrics.jsonl", "result.json"]
    sweep = json.loads((tmp_path / "s" / "sweep.json").read_text())
    assert sweep["experiment"] == SELFTEST and sweep["grid"] == {"n": [2, 7], "fail": [False, True]}
    assert sweep["spec"]["base"] == {"x": "1.5"} and "created" in sweep and "argv" in sweep


def test_resume_skips_finished_runs_and_reruns_failed_ones(tmp_path, table_without_timing):
    full = run_sweep(SPEC, tmp_path / "full", executor="inline")
    out = tmp_path / "s"
    run_sweep(SPEC, out, executor="inline")
    ok_ids = [r["run_id"] for r in full.rows if r["status"] == "ok"]
    failed_ids = [r["run_id"] for r in full.rows if r["status"] == "failed"]
    (out / "runs" / ok_ids[1] / "result.json").unlink()  # as if killed before it finished
    kept = {i: (out / "runs" / i / "result.json").stat() for i in ok_ids if i != ok_ids[1]}
    logs = {i: (out / "runs" / i / "log.txt").stat().st_mtime_ns for i in failed_ids}
    calls = []
    res = run_sweep(SPEC, out, resume=True, executor="inline", progress=lambda d, t: calls.append((d, t)))
    assert (res.n_ok, res.n_failed, res.n_skipped) == (4, 4, 3)
    assert calls == [(3, 8), (4, 8), (5, 8), (6, 8), (7, 8), (8, 8)]  # 1 + 4 runs executed
    for i, st in kept.items():  # not recomputed: the very same file
        now = (out / "runs" / i / "result.json").stat()
        assert (now.st_ino, now.st_mtime_ns) == (st.st_ino, st.st_mtime_ns)
    assert all((out / "runs" / i / "log.txt").stat().st_mtime_ns > logs[i] for i in failed_ids)  # re-run
    assert table_without_timing(res.table_path) == table_without_timing(full.table_path)
    assert len(json.loads((out / "sweep.json").read_text())["resumed"]) == 1


def test_resume_requires_the_same_spec(tmp_path):
    spec = SweepSpec(SELFTEST, grid={"n": ["2", "3"]})
    run_sweep(spec, tmp_path / "s", executor="inline")
    same = SweepSpec(SELFTEST, grid={"n": [2, 3]})  # the same values written differently: fine
    assert run_sweep(same, tmp_path / "s", resume=True, executor="inline").n_skipped == 2
    with pytest.raises(ConfigError, match=r"different grid \(stored \{'n': \[2, 3\]\}, now \{'n': \[2, 4\]\}\)"):
        run_sweep(SweepSpec(SELFTEST, grid={"n": ["2", "4"]}), tmp_path / "s", resume=True, executor="inline")
    with pytest.raises(ConfigError, match=r"different seeds .*; seed0"):
        run_sweep(SweepSpec(SELFTEST, grid={"n": ["2", "3"]}, seeds=2, seed0=1), tmp_path / "s", resume=True)


def test_out_directory_rules(tmp_path):
    spec = SweepSpec(SELFTEST)
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match="is not empty; pass --resume or choose another --out"):
        run_sweep(spec, tmp_path / "busy", executor="inline")
    with pytest.raises(ConfigError, match="is not a sweep directory"):
        run_sweep(spec, tmp_path / "busy", resume=True, executor="inline")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError, match="is a file"):
        run_sweep(spec, tmp_path / "file", executor="inline")
    with pytest.raises(ConfigError, match="cannot write to --out"):
        run_sweep(spec, tmp_path / "file" / "sub", executor="inline")
    # resume on a directory that does not exist yet simply starts the sweep
    assert run_sweep(spec, tmp_path / "new", resume=True, executor="inline").n_ok == 1


@pytest.mark.parametrize("kwargs, error, needle", [
    (dict(executor="threads"), ConfigError, "unknown executor 'threads'"),
    (dict(workers=0), ConfigError, "--workers must be an integer >= 1"),
    (dict(executor="inline", scheduler="tcp://127.0.0.1:1"), ConfigError, "--scheduler runs on Dask"),
    (dict(device="tpu"), ConfigError, "unknown device 'tpu'"),
])
def test_bad_options_fail_before_anything_is_written(tmp_path, kwargs, error, needle):
    with pytest.raises(error, match=needle):
        run_sweep(SweepSpec(SELFTEST), tmp_path / "s", **kwargs)
    assert not (tmp_path / "s").exists()


def test_unknown_experiment(tmp_path):
    with pytest.raises(UnknownNameError, match="unknown experiment 'nope.nothing'"):
        run_sweep(SweepSpec("nope.nothing"), tmp_path / "s")


def test_scalars_are_checked():
    assert check_scalars({"a": 1.5, "b": torch.tensor(2), "c": "s", "d": True}, ["x"]) == \
        {"a": 1.5, "b": 2, "c": "s", "d": True}
    with pytest.raises(ValueError, match=r"scalar name\(s\) seconds, x clash"):
        check_scalars({"x": 1.0, "seconds": 2.0}, ["x"])
    with pytest.raises(TypeError, match="scalar 'a' must be a float"):
        check_scalars({"a": [1, 2]}, [])
    with pytest.raises(TypeError, match="'scalars' must be a dict"):
        check_scalars([1.0], [])


def test_process_pool_gives_the_inline_table(tmp_path, table_without_timing):
    inline = run_sweep(SPEC, tmp_path / "inline", executor="inline")
    pool = run_sweep(SPEC, tmp_path / "pool", executor="process", workers=2)
    assert (pool.n_ok, pool.n_failed) == (4, 4)
    assert table_without_timing(pool.table_path) == table_without_timing(inline.table_path)


def test_an_experiment_better_on_the_cpu_sweeps_there_and_the_sweep_says_so(tmp_path, monkeypatch):
    import dataclasses

    from attnlab import registry

    selftest = registry.get_experiment(SELFTEST)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # the runs themselves stay on the CPU
    with registry.scratch():
        registry.register_paper("toy", "Toy", "toy.md", package="tests.toy")
        registry.register_experiment(dataclasses.replace(selftest, id="toy.sweep", cpu_only="a test of the policy"))
        result = run_sweep(SweepSpec("toy.sweep", grid={"n": ["2", "3"]}), tmp_path / "s", executor="inline",
                           device="cuda")
    assert result.n_ok == 2 and {r["device"] for r in result.rows} == {"cpu"}
    header = json.loads((tmp_path / "s" / "sweep.json").read_text())
    assert header["device"] == "cuda" and header["device_note"] == "Ran on the CPU inside a cuda run: a test of the policy."
