"""`attnlab bench` on tiny sizes and its figure specs; bad input is one stderr line, exit 2."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from attnlab.bench import BenchConfig, run_bench
from attnlab.errors import ConfigError, UnknownNameError
from attnlab.bench.report import memory_figure, time_figure
from attnlab.results import LineFigure
from helpers import exit_status
from tolerances import FLOAT64


@pytest.mark.slow
def test_run_bench_rows_ratios_and_skips():
    res = run_bench(BenchConfig(n=(64, 128), variants=("softmax", "softmax-explicit", "linear-causal", "linformer"),
                                repeats=1, max_explicit_n=64, ceiling_N=128)).to_dict()
    rows = {(r["variant"], r["n"]): r for r in res["rows"]}
    assert {v for v, _ in rows} == {"sdpa", "sdpa-causal", "softmax", "softmax-explicit", "linear-causal", "linformer"}
    for name in ("sdpa", "softmax", "linear-causal"):
        r = rows[(name, 128)]
        assert r["status"] == "ok" and r["time_ms"] > 0 and r["gflops"] > 0 and r["pct_ceiling"] > 0
    assert rows[("sdpa", 64)]["ratio"] == 1.0
    assert rows[("linear-causal", 128)]["reference"] == "sdpa-causal"
    assert rows[("linear-causal", 128)]["ratio"] == pytest.approx(
        rows[("linear-causal", 128)]["time_ms"] / rows[("sdpa-causal", 128)]["time_ms"], rel=FLOAT64)
    assert rows[("softmax-explicit", 128)]["status"] == "skipped" and "n x n" in rows[("softmax-explicit", 128)]["note"]
    assert rows[("linformer", 64)]["status"] == "skipped"  # k' = 256 > n
    assert rows[("softmax", 128)]["gflop"] == pytest.approx(4 * 8 * 128 * 128 * 64 / 1e9, rel=FLOAT64)
    assert res["env"]["threads"] >= 1 and res["ceiling"]["gflops"] > 0
    json.dumps(res, allow_nan=False)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"n": ()}, ConfigError, "non-empty"), ({"n": (0,)}, ConfigError, r"n \(sequence lengths\) must be a non-empty list of integers >= 1"),
    ({"variants": ("nope",)}, UnknownNameError, "unknown variant 'nope'"),
    ({"dtype": "float16"}, ConfigError, "float32, float64, bfloat16"), ({"threads": 0}, ConfigError, "threads"),
    ({"repeats": 0}, ConfigError, "repeats")])
def test_bad_bench_config(kwargs, error, message):
    with pytest.raises(error, match=message):
        BenchConfig(**kwargs)


def test_cli_json_and_out(tmp_path, capsys):
    out = tmp_path / "b"
    rc = exit_status(["bench", "--n", "64", "--variant", "linear", "--repeats", "1", "--json", "--out", str(out)])
    assert rc == 0
    res = json.loads(capsys.readouterr().out)
    assert {r["variant"] for r in res["rows"]} == {"sdpa", "linear"}
    assert [t["status"] for t in res["targets"]][:3] == ["not measured"] * 3
    assert json.loads((out / "bench.json").read_text())["rows"][0]["n"] == 64
    assert (out / "bench-time.png").read_bytes()[:4] == b"\x89PNG"


def test_cli_table(capsys):
    assert exit_status(["bench", "--n", "64", "--variant", "softmax", "--repeats", "1"]) == 0
    text = capsys.readouterr().out
    assert "softmax" in text and "crossover" in text and "targets" in text and "not measured" in text


BAD_INPUT = [
    (["--n", "512,abc"], "'abc' is not one"),
    (["--variant", "nope"], "unknown variant 'nope'"),
    (["--dtype", "float16"], "dtype must be one of float32, float64, bfloat16"),
    (["--repeats", "0"], "--repeats must be an integer >= 1"),
]


@pytest.mark.parametrize("argv, message", BAD_INPUT)
def test_cli_bad_input_is_one_line_exit_2(argv, message, capfd):
    assert exit_status(["bench", *argv]) == 2
    err = capfd.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in err


def test_cli_bad_input_from_the_shell():
    proc = subprocess.run([sys.executable, "-m", "attnlab.cli", "bench", "--n", "1x"], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "'1x' is not one" in proc.stderr


def test_figures_are_typed_line_figures():
    rows = [{"variant": "sdpa", "n": n, "status": "ok", "order": "quadratic", "time_ms": t, "peak_mb": m}
            for n, t, m in ((64, 1.0, 2.0), (128, 4.0, 8.0))]
    rows += [{"variant": "linear", "n": 64, "status": "ok", "order": "linear", "time_ms": 3.0, "peak_mb": 1.0},
             {"variant": "linear", "n": 128, "status": "skipped", "order": "linear", "time_ms": None,
              "peak_mb": None}]
    t, m = time_figure(rows), memory_figure(rows, "m.png")
    assert isinstance(t, LineFigure) and isinstance(m, LineFigure)
    assert (t.file, m.file) == ("attention-time.png", "m.png")
    assert [(s.label, list(s.x), list(s.y), s.style) for s in t.series] == [
        ("sdpa", [64, 128], [1.0, 4.0], "dashed"), ("linear", [64], [3.0], "solid")]
    assert [list(s.y) for s in m.series] == [[2.0, 8.0], [1.0]]
    assert t.to_dict()["kind"] == "line" and t.xscale == t.yscale == "log"
