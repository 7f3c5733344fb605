"""The Dask executor: a LocalCluster of 2 worker processes, and unreachable schedulers."""

from __future__ import annotations

import json
import time

import pytest

from attnlab.errors import ConfigError
from attnlab.sweeps import SweepSpec, run_sweep

SELFTEST = "selftest.sweep"
SPEC = SweepSpec(SELFTEST, grid={"n": ["2", "5"], "fail": ["false", "true"]}, seeds=2)


@pytest.mark.slow
def test_local_cluster_gives_the_inline_table(tmp_path, table_without_timing):
    inline = run_sweep(SPEC, tmp_path / "inline", executor="inline")
    calls = []
    res = run_sweep(SPEC, tmp_path / "dask", executor="dask", workers=2, progress=lambda d, t: calls.append(d))
    assert (res.n_ok, res.n_failed, res.n_skipped) == (4, 4, 0)
    assert calls == list(range(9))
    # Python's global `random` is shared with the Dask worker's own threads (tornado/distributed
    # draw from it for jitter and compression sampling), so py_u is compared in inline/process
    # sweeps only; torch and NumPy draws must match bit for bit.
    dask_table, inline_table = table_without_timing(res.table_path), table_without_timing(inline.table_path)
    py_u = dask_table[0].index("py_u")
    assert [r[:py_u] + r[py_u + 1:] for r in dask_table] == [r[:py_u] + r[py_u + 1:] for r in inline_table]
    assert inline_table[0][py_u - 2:py_u + 2] == ["mean", "np_u", "py_u", "x_n"]
    # the workers wrote the run directories themselves, logs and tracebacks included
    failed = json.loads((tmp_path / "dask" / "summary.json").read_text())["failures"]
    assert len(failed) == 4 and failed[0]["error"].startswith("RuntimeError: requested failure")
    assert "Traceback" in (tmp_path / "dask" / "runs" / failed[0]["run_id"] / "log.txt").read_text()


@pytest.mark.parametrize("address", ["tcp://127.0.0.1:notaport", "foo://127.0.0.1:8786", "no-port"])
def test_unreachable_scheduler_is_a_config_error_within_seconds(tmp_path, address):
    t0 = time.monotonic()
    with pytest.raises(ConfigError, match=f"cannot reach Dask scheduler at {address} .*`dask scheduler`"):
        run_sweep(SweepSpec(SELFTEST), tmp_path / "s", scheduler=address)
    assert time.monotonic() - t0 < 5
    assert not (tmp_path / "s").exists()  # nothing written, no empty folder: the same --out works later


def test_unreachable_scheduler_via_the_cli(tmp_path, cli):
    t0 = time.monotonic()
    code, out, err = cli(["sweep", SELFTEST, "--scheduler", "tcp://127.0.0.1:1", "--out", str(tmp_path / "s")])
    assert code == 2 and time.monotonic() - t0 < 8
    assert len(err.strip().splitlines()) == 1 and "cannot reach Dask scheduler at tcp://127.0.0.1:1" in err
    assert "Traceback" not in err and out == ""


# The memorization paper's capacity sweep, at a reduced grid: one run per H, spread over an
# already running cluster by its address, as `attnlab sweep ... --scheduler tcp://HOST:PORT` does
# for the paper-scale grid (results/paper-scale/README.md).
REDUCED = ["--set", "d=8", "--set", "n=4", "--set", "n_classes=5", "--set", "steps=40",
           "--set", "warmup=4", "--set", "T_factors=1;2", "--set", "replicates=2", "--set", "eval_every=10"]


@pytest.mark.slow
def test_a_memorization_sweep_on_a_running_cluster_gives_the_inline_table(tmp_path, cli, table_without_timing):
    from distributed import LocalCluster

    base = ["sweep", "memorization.capacity-vs-heads", "--grid", "H_grid=1,2", *REDUCED]
    code, _, err = cli([*base, "--executor", "inline", "--out", str(tmp_path / "inline")])
    assert code == 0, err
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        address = cluster.scheduler_address
        assert address.startswith("tcp://")
        code, _, err = cli([*base, "--scheduler", address, "--out", str(tmp_path / "dask")])
        assert code == 0, err
    dask_table = table_without_timing(tmp_path / "dask" / "results.csv")
    inline_table = table_without_timing(tmp_path / "inline" / "results.csv")
    assert len(dask_table) == 3 and dask_table == inline_table  # header + one row per H: the same configs
    summary = json.loads((tmp_path / "dask" / "summary.json").read_text())
    assert (summary["total"], summary["ok"], summary["failed"]) == (2, 2, 0)
    for run in (tmp_path / "inline" / "runs").iterdir():  # the same cells, bit for bit, wall times aside
        ours, theirs = (json.loads((tmp_path / way / "runs" / run.name / "result.json").read_text())["result"]["data"]
                        for way in ("inline", "dask"))
        strip = lambda cells: [{k: v for k, v in c.items() if k != "seconds"} for c in cells]
        assert len(ours["cells"]) == 2 and strip(ours["cells"]) == strip(theirs["cells"])
        assert ours["largest_T_memorized"] == theirs["largest_T_memorized"]
