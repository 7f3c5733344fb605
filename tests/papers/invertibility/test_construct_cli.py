"""`attnlab construct invertibility` as a user runs it: A rebuilt from the .npz with independent NumPy code."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

from helpers import run_cli

NPZ_KEYS = {"e", "pos", "W_QK", "sequences", "A"}


def run(*args: str) -> subprocess.CompletedProcess:
    """``attnlab construct invertibility ARGS``, in process (:func:`helpers.run_cli`)."""
    return run_cli(["construct", "invertibility", *args])


def rebuild(z) -> np.ndarray:
    """A from e, pos, W_QK and the sequences, written without attnlab: row t, block p."""
    e, pos, W, seqs = z["e"], z["pos"], z["W_QK"], z["sequences"]
    rows = []
    for t in seqs:
        X = e[t] + pos  # (L, d): x(t, j)
        blocks = []
        for Wp in W:
            s = X @ Wp.T @ X[-1]  # x(t, j)^T W^T x(t, L) = x(t, L)^T W x(t, j)
            a = np.exp(s - s.max())
            blocks.append((a / a.sum()) @ X)
        rows.append(np.concatenate(blocks))
    return np.array(rows)


@pytest.mark.parametrize("embedding", ["explicit", "random"])
def test_npz_rebuilt_independently(tmp_path, embedding):
    out = tmp_path / "inv.npz"
    p = run("--set", "N=3", "--set", "L=3", "--set", "d=4", "--set", f"embedding={embedding}", "--set", "seed=2",
            "--out", str(out), "--json")
    assert p.returncode == 0, p.stderr
    printed = json.loads(p.stdout)
    assert printed["verdict"] == "reproduced" and printed["P"] == 7 and printed["minimal_P"] == 7
    assert printed["check"]["anchor"] == "invertibility.theorem-1" and printed["check"]["role"] == "construction"
    assert printed["certified_lower"] == printed["certified_upper"] == printed["rank_cap"] == 27
    assert printed["prec_bits"] == 64 and printed["det_margin"] > 0.5
    z = np.load(out)
    assert set(z.files) == NPZ_KEYS
    assert z["e"].shape == (3, 4) and z["pos"].shape == (3, 4) and z["W_QK"].shape == (7, 4, 4)
    assert z["sequences"].shape == (27, 3) and z["A"].shape == (27, 28)
    W = z["W_QK"]
    assert np.count_nonzero(W) == 7 and np.allclose(W[:, 0, 0], 0.1 * np.arange(1, 8))
    A = rebuild(z)
    assert np.abs(A - z["A"]).max() < 1e-14
    assert np.linalg.matrix_rank(A) <= 27  # the float rank: a threshold, which the certificate replaces


def test_no_positions_reaches_the_class_count(tmp_path):
    p = run("--set", "N=2", "--set", "L=4", "--set", "d=2", "--set", "positions=false", "--json")
    assert p.returncode == 0, p.stderr
    printed = json.loads(p.stdout)
    assert printed["P"] == 7 and printed["rank_cap"] == 8  # 1 + (N-1) P >= 8 = 2 C(4, 3)
    assert printed["certified_lower"] == printed["certified_upper"] == 8 and printed["verdict"] == "holds"
    assert printed["check"]["role"] == "own" and printed["check"]["anchor"] == ""  # the text needs positions


@pytest.mark.parametrize("args, expected", [
    (["--set", "N=0"], "N must be an integer >= 1, got 0"),
    (["--set", "w=0"], "w must be a finite number in (0, inf), got 0.0"),
    (["--set", "embedding=gauss"], "embedding must be one of explicit, random, got 'gauss'"),
    (["--set", "N=9", "--set", "L=4"], "N^L = 6561 rows exceeds 4096; lower N or L"),
    (["--set", "P=x"], "--set P=x: expected"),
])
def test_bad_values_are_one_line_exit_2(args, expected):
    p = run(*args)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], p.stderr


def test_a_cap_below_n_to_the_l_is_not_judged_against_theorem_1():
    # (3, 3, 5, 6): Pd = 30 >= 27 = N^L, certified rank 25 = 1 + P (N + L - 2): the check is attnlab's conjecture
    # (rank = cap), unanchored; the note says that Theorem 1 as printed fails here and which record counts it
    p = run("--set", "N=3", "--set", "L=3", "--set", "d=5", "--set", "P=6", "--json")
    printed = json.loads(p.stdout)
    assert printed["verdict"] == "holds" and printed["passed"] is True
    assert printed["certified_lower"] == printed["certified_upper"] == printed["rank_cap"] == 25
    assert printed["check"]["threshold"] == 25 and printed["check"]["role"] == "own" and printed["check"]["anchor"] == ""
    assert any("cap-below-n-to-the-l" in n for n in printed["notes"])


def test_construct_says_the_minimal_P_is_a_conjecture_and_exits_0():
    p = run("--set", "N=3", "--set", "L=3", "--set", "d=5", "--set", "P=6")
    assert p.returncode == 0, p.stderr
    assert "holds" in p.stdout and "reproduced" not in p.stdout
    assert "minimal_P = 7: fewer heads cannot reach rank N^L (proved: rank_cap); that 7 heads suffice is a" \
           in " ".join(p.stdout.split())
