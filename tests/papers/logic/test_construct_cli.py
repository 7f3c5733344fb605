"""`attnlab construct logic` as a user runs it: the .npz re-checked with plain NumPy only."""

import json
import subprocess

import numpy as np
import pytest

from helpers import run_cli

from attnlab.errors import ConfigError
from attnlab.commands.construct import construct
from tolerances import FLOAT64


def run(*args: str) -> subprocess.CompletedProcess:
    """``attnlab construct logic ARGS``, in process (:func:`helpers.run_cli`)."""
    return run_cli(["construct", "logic", *args])


def numpy_outputs(z) -> np.ndarray:
    """Y from the npz alone: A = v X X^t k^t q X, then the read-out ``form`` names."""
    X, q, k, v, C, bias, form = (z[n] for n in ("X", "q", "k", "v", "C", "bias", "form"))
    out = []
    for Xs in X:  # one sequence at a time, no attnlab code
        H = v @ Xs @ Xs.T @ k.T @ q @ Xs + Xs
        if form == "relu-B":
            out.append(C @ np.maximum(z["B"] @ H + bias[:, None], 0.0))
        elif form == "linear":
            out.append(C @ H)
        else:
            assert form == "relu"
            out.append(C @ np.maximum(H + bias[:, None], 0.0))
    return np.concatenate(out)


@pytest.mark.parametrize("solution", ["1", "1-linear", "2", "3"])
def test_npz_rechecked_with_numpy(tmp_path, solution):
    out = tmp_path / f"logic{solution}.npz"
    p = run("--set", f"solution={solution}", "--set", "N=3", "--set", "M=4", "--set", "seed=2",
            "--out", str(out), "--json")
    assert p.returncode == 0, p.stderr
    printed = json.loads(p.stdout)
    assert printed["passed"] is True and printed["max_abs_error"] <= FLOAT64 and printed["sequences"] == 81
    z = np.load(out)
    keys = {"tokens", "X", "Y", "q_true", "form", "q", "k", "v", "C", "bias"} | ({"B"} if solution == "1" else set())
    assert set(z.files) == keys
    assert z["tokens"].shape == (81, 4) and z["X"].shape == (81, 7, 4) and z["Y"].shape == (81, 4)
    assert str(z["form"]) == {"1": "relu-B", "1-linear": "linear"}.get(solution, "relu")
    Y_np = numpy_outputs(z)
    assert np.abs(Y_np - z["Y"]).max() <= FLOAT64
    t, q_true = z["tokens"], z["q_true"]
    assert np.abs(z["Y"][:, 1:] - q_true[t[:, :-1], t[:, 1:]]).max() == 0.0
    if solution != "1-linear":
        assert (q_true < 0).any() and np.all(z["Y"][:, 0] == 0.0)


def test_sample_when_too_many_sequences():
    _, _, res, summary = construct("logic", {"solution": "2", "N": "10", "M": "6", "samples": "40", "seed": "1"})
    assert summary["sequences"] == 40 and summary["exhaustive"] is False and res.passed
    assert res.arrays["X"].shape == (40, 16, 6)
    assert summary["relu_const"] == pytest.approx(2 * summary["relu_threshold"])


def test_relu_const_below_threshold_is_reported_failing():
    _, _, res, summary = construct("logic", {"solution": "3", "N": "3", "M": "4", "seed": "0"})
    c_star = summary["relu_threshold"]
    _, _, bad, s2 = construct("logic", {"solution": "3", "N": "3", "M": "4", "seed": "0", "relu_const": str(c_star / 2)})
    assert res.passed and not bad.passed and s2["max_abs_error"] > 0.1


@pytest.mark.parametrize("settings,needle", [
    ({"N": "0"}, "N must be an integer >= 1"),
    ({"M": "1"}, "M must be an integer >= 2"),
    ({"solution": "4"}, "solution must be one of 1, 1-linear, 2, 3"),
    ({"K": "1"}, "has no parameter 'K'"),
    ({"solution": "1-linear", "relu_const": "3"}, "relu_const applies to solutions 2 and 3 only"),
])
def test_bad_settings(settings, needle):
    with pytest.raises(ConfigError, match=needle):
        construct("logic", settings)


@pytest.mark.parametrize("solution", ["1", "1-linear", "2", "3"])
def test_construct_check_is_sanity(solution):
    """The built weights are attnlab's (solution 1's corrected C, the offset of 2 and 3, Y_1 = d_(X_1) in the
    linear case): the check tests attnlab's construction, unanchored, so its verdict is sanity, not reproduced."""
    _, _, res, _ = construct("logic", {"solution": solution, "N": "3", "M": "4"})
    assert (res.check.role, res.check.anchor, res.verdict) == ("construction", "", "sanity")
