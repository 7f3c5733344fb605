"""`attnlab construct memorization` as a user runs it: the .npz re-checked with plain NumPy."""

import json
import subprocess

import numpy as np
import pytest
from helpers import run_cli
from numpy_reference import numpy_forward

from attnlab.errors import ConfigError
from attnlab.commands.construct import save_npz
from tolerances import CONSTRUCTION_LABELS

NPZ_KEYS = {"E", "e", "y", "W_Q", "W_K", "W_V", "W_O", "W_D"}


def run(*args: str) -> subprocess.CompletedProcess:
    """``attnlab construct ARGS``, in process (:func:`helpers.run_cli`)."""
    return run_cli(["construct", *args])


@pytest.mark.parametrize("context", ["--shared-context", "--per-example"])
def test_npz_round_trip_rechecked_with_numpy(tmp_path, context):
    out = tmp_path / "mem.npz"
    p = run("memorization", "--set", "H=3", "--set", "n=5", "--set", "d=13", "--set", "d_h=7", "--set", "d_out=2",
            "--set", "seed=4", context, "--out", str(out), "--json")
    assert p.returncode == 0, p.stderr
    printed = json.loads(p.stdout)
    assert {"construction", "paper", "params", "passed", "criterion", "notes", "arrays", "out"} <= set(printed)
    assert printed["construction"] == printed["paper"] == "memorization" and printed["out"] == str(out)
    assert printed["params"] == {"H": 3, "n": 5, "d": 13, "d_h": 7, "T": None, "d_out": 2, "seed": 4,
                                 "shared": context == "--shared-context"}
    assert printed["T"] == printed["bound"] == 13 and printed["rank_Z"] == 13
    assert printed["passed"] is True and printed["criterion"] == "max |y_hat - y| <= 1e-08"
    assert set(printed["arrays"]) == NPZ_KEYS
    z = np.load(out)
    assert set(z.files) == NPZ_KEYS
    assert z["E"].shape == ((5, 13) if context == "--shared-context" else (13, 5, 13))
    assert z["W_Q"].shape == z["W_K"].shape == (3, 13, 7) and z["W_V"].shape == (3, 13, 2)
    assert z["W_O"].shape == (6, 13) and z["W_D"].shape == (13, 2) and z["y"].shape == (13, 2)
    y_hat = numpy_forward(z["E"], z["e"], z["W_Q"], z["W_K"], z["W_V"], z["W_O"], z["W_D"])
    assert np.abs(y_hat - z["y"]).max() <= CONSTRUCTION_LABELS
    assert abs(np.abs(y_hat - z["y"]).max() - printed["max_abs_error"]) <= CONSTRUCTION_LABELS


def test_parameter_flags_map_to_set(tmp_path):
    """--H 4, --d-h 64, --per-example: the same build as --set H=4 --set d_h=64 --set shared=false."""
    a, b = tmp_path / "a.npz", tmp_path / "b.npz"
    p = run("memorization", "--H", "2", "--n", "5", "--d", "13", "--d-h", "5", "--per-example", "--out", str(a),
            "--json")
    q = run("memorization", "--set", "H=2", "--set", "n=5", "--set", "d=13", "--set", "d_h=5", "--set",
            "shared=false", "--out", str(b), "--json")
    assert p.returncode == q.returncode == 0, p.stderr + q.stderr
    pa, qa = json.loads(p.stdout), json.loads(q.stdout)
    assert pa["params"] == qa["params"] and pa["params"]["shared"] is False and pa["T"] == 9
    za, zb = np.load(a), np.load(b)
    assert all(np.array_equal(za[k], zb[k]) for k in NPZ_KEYS)


def test_table_output_names_the_numbers():
    p = run("memorization", "--set", "H=2", "--set", "n=5", "--set", "d=13", "--set", "d_h=5")
    assert p.returncode == 0, p.stderr
    for word in ("rank_Z", "sigma_min_Z", "max_abs_error", "c"):
        assert word in p.stdout


@pytest.mark.parametrize(
    "args, expected",
    [
        (["memorization", "--set", "n=5", "--set", "d=13", "--set", "d_h=5", "--set", "H=2", "--set", "T=10"],
         "exceeds Theorem 1's bound H(r-1)+1 = 9"),
        (["memorization", "--n", "5", "--d", "13", "--d-h", "5", "--H", "2", "--T", "10"],
         "exceeds Theorem 1's bound H(r-1)+1 = 9"),
        (["memorization", "--set", "d_h=0"], "d_h must be an integer >= 1, got 0"),
        (["memorization", "--d-h", "0"], "d_h must be an integer >= 1, got 0"),
        (["memorization", "--set", "foo=1"], "construction memorization has no parameter 'foo'"),
        (["memorization", "--bogus"], "has no option '--bogus'"),
        (["memorization", "--out", "/nonexistent-dir/x.npz"], "does not exist"),
        (["memorization", "--out", "/"], "is a directory"),
        (["frobnicate"], "unknown construction 'frobnicate'"),
        (["memorization", "--H", "x"], "H=x: expected an integer"),
        # refused before anything is built: Z alone would be 3100001 x 6400000 float64
        (["memorization", "--H", "100000"], "construct memorization H=100000 needs about 1,182,558 GiB of memory "
                                            "(Z (3100001 x 6400000 float64) and its QR); cpu has "),
    ],
)
def test_bad_input_is_one_line_exit_2(capsys, args, expected):
    from attnlab.cli import main

    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:  # in-process: the subprocess path is covered above
        main(["construct", *args])
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("attnlab: error:") and expected in lines[0]


def test_unwritable_path_raises_config_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ConfigError, match="cannot write --out"):
        save_npz(blocker / "w.npz", {"a": np.zeros(2)})  # the parent is a file: OSError inside
