"""`attnlab construct memorization` as a user runs it: the .npz re-checked with plain NumPy."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from attnlab.runs.construct import save_npz
from attnlab.errors import ConfigError
from numpy_reference import LABEL_TOL, numpy_forward


def run(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "120"}
    return subprocess.run([sys.executable, "-m", "attnlab.cli", "construct", *args],
                          capture_output=True, text=True, timeout=120, env=env)


@pytest.mark.parametrize("context", ["--shared-context", "--per-example"])
def test_npz_round_trip_rechecked_with_numpy(tmp_path, context):
    out = tmp_path / "mem.npz"
    p = run("memorization", "--H", "3", "--n", "5", "--d", "13", "--d-h", "7", "--d-out", "2",
            "--seed", "4", context, "--out", str(out), "--json")
    assert p.returncode == 0, p.stderr
    printed = json.loads(p.stdout)
    assert printed["T"] == printed["bound"] == 13 and printed["rank_Z"] == 13
    z = np.load(out)
    assert set(z.files) == {"E", "e", "y", "W_Q", "W_K", "W_V", "W_O", "W_D"}
    assert z["E"].shape == ((5, 13) if context == "--shared-context" else (13, 5, 13))
    assert z["W_Q"].shape == z["W_K"].shape == (3, 13, 7) and z["W_V"].shape == (3, 13, 2)
    assert z["W_O"].shape == (6, 13) and z["W_D"].shape == (13, 2) and z["y"].shape == (13, 2)
    y_hat = numpy_forward(z["E"], z["e"], z["W_Q"], z["W_K"], z["W_V"], z["W_O"], z["W_D"])
    assert np.abs(y_hat - z["y"]).max() <= LABEL_TOL
    assert abs(np.abs(y_hat - z["y"]).max() - printed["max_abs_error"]) <= LABEL_TOL


def test_table_output_names_the_numbers():
    p = run("memorization", "--H", "2", "--n", "5", "--d", "13", "--d-h", "5")
    assert p.returncode == 0, p.stderr
    for word in ("rank_Z", "sigma_min_Z", "max_abs_error", "c"):
        assert word in p.stdout


@pytest.mark.parametrize(
    "args, expected",
    [
        (["memorization", "--n", "5", "--d", "13", "--d-h", "5", "--H", "2", "--T", "10"],
         "exceeds Theorem 1's bound H(r-1)+1 = 9"),
        (["memorization", "--d-h", "0"], "--d-h must be >= 1"),
        (["memorization", "--out", "/nonexistent-dir/x.npz"], "does not exist"),
        (["memorization", "--out", "/"], "is a directory"),
        (["frobnicate"], "unknown construction 'frobnicate'"),
        (["memorization", "--H", "x"], "--H"),
    ],
)
def test_bad_input_is_one_line_exit_2(args, expected):
    p = run(*args)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith("attnlab: error:") and expected in lines[0]


def test_unwritable_path_raises_config_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ConfigError, match="cannot write --out"):
        save_npz(blocker / "w.npz", {"a": np.zeros(2)})  # the parent is a file: OSError inside
