"""`attnlab sweep`: output, exit status 0/1, and one stderr line with exit 2 for bad input."""

from __future__ import annotations

import json

import pytest

SELFTEST = "selftest.sweep"


def test_sweep_prints_the_table_and_counts(tmp_path, cli):
    out = tmp_path / "s"
    code, stdout, err = cli(["sweep", SELFTEST, "--grid", "n=2,3", "--set", "x=0.5", "--seeds", "2",
                             "--seed", "7", "--executor", "inline", "--out", str(out)])
    assert code == 0, err
    assert f"table: {out / 'results.csv'}" in stdout
    assert "4 ok, 0 failed, 0 skipped" in stdout
    sweep = json.loads((out / "sweep.json").read_text())
    assert sweep["argv"][0] == "attnlab" and sweep["experiment"] == SELFTEST
    assert (sweep["base"], sweep["grid"], sweep["seeds"], sweep["seed0"]) == ({"x": 0.5}, {"n": [2, 3]}, 2, 7)


def test_failed_runs_give_exit_1_and_one_line_each(tmp_path, cli):
    out = tmp_path / "s"
    code, stdout, err = cli(["sweep", SELFTEST, "--grid", "fail=false,true", "--grid", "n=2,3",
                             "--executor", "inline", "--out", str(out), "--json"])
    assert code == 1
    res = json.loads(stdout)
    assert (res["ok"], res["failed"], res["skipped"]) == (2, 2, 0)
    assert [r["status"] for r in res["rows"]] == ["ok", "ok", "failed", "failed"]
    lines = err.strip().splitlines()
    assert len(lines) == 2
    for line, row in zip(lines, res["rows"][2:]):
        log = out / "runs" / row["run_id"] / "log.txt"
        assert line == (f"run {row['run_id']} failed: RuntimeError: requested failure "
                        f"(fail=true, x=1.0, n={row['n']}) (log: {log})")
    # resuming re-runs the failed ones only, and they fail again: still exit 1
    code, stdout, _ = cli(["sweep", SELFTEST, "--grid", "fail=false,true", "--grid", "n=2,3",
                           "--executor", "inline", "--out", str(out), "--json", "--resume"])
    assert code == 1 and json.loads(stdout)["skipped"] == 2


@pytest.mark.parametrize("args, needle", [
    (["nope.nothing"], "unknown experiment 'nope.nothing'"),
    ([SELFTEST, "--set", "x"], "--set expects key=value"),
    ([SELFTEST, "--grid", "n"], "--grid expects key=value"),
    ([SELFTEST, "--set", "x=1", "--set", "x=2"], "--set x is given twice"),
    ([SELFTEST, "--grid", "bogus=1,2"], "no config field 'bogus'; fields: scale, x, n, fail, sleep"),
    ([SELFTEST, "--grid", "n=1,two"], "--grid n=two: expected an integer"),
    ([SELFTEST, "--set", "n=0"], "n must be an integer >= 1"),
    ([SELFTEST, "--workers", "0"], "--workers must be an integer >= 1"),
    ([SELFTEST, "--workers", "many"], "Invalid value for '--workers'"),
    ([SELFTEST, "--seeds", "0"], "--seeds must be an integer >= 1"),
    ([SELFTEST, "--executor", "threads"], "unknown executor 'threads'"),
    ([SELFTEST, "--device", "tpu"], "unknown device 'tpu'"),
    ([SELFTEST, "--scheduler", "tcp://127.0.0.1:1"], "cannot reach Dask scheduler at tcp://127.0.0.1:1"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, cli, args, needle):
    code, stdout, err = cli(["sweep", *args, "--out", str(tmp_path / "s")])
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and needle in err, err
    assert "Traceback" not in err and stdout == ""
    assert not (tmp_path / "s" / "sweep.json").exists()


def test_out_that_is_unwritable_or_busy_is_exit_2(tmp_path, cli):
    (tmp_path / "file").write_text("x")
    code, _, err = cli(["sweep", SELFTEST, "--out", str(tmp_path / "file" / "sub")])
    assert code == 2 and len(err.strip().splitlines()) == 1 and "cannot write to --out" in err
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "x.txt").write_text("x")
    code, _, err = cli(["sweep", SELFTEST, "--out", str(tmp_path / "busy")])
    assert code == 2 and "pass --resume or choose another --out" in err
