"""The hand-programmed solutions of §2: exact on every input, the ReLU constant, the text's
versions that fail, and the weights loaded into attnlab's attention module."""

import numpy as np
import pytest
import torch

from attnlab.errors import ConfigError
from attnlab.papers.logic.encoding import all_sequences, encode, random_sequences, shift_matrix, targets
from attnlab.papers.logic.solutions import (
    attention_star_t,
    build,
    forward,
    forward_module,
    linear_q_true,
    pair_order,
    relu_threshold,
    solution1,
    solution1_linear,
    solution2,
    solution3,
)
from tolerances import FLOAT64, FLOAT64_LONG

# FLOAT64 bounds the round-off of sums of at most N + M terms of size max |q_true| ~ 3


def _data(N, M, seed=0):
    rng = np.random.default_rng(seed)
    q_true = rng.standard_normal((N, N))
    tokens = all_sequences(N, M)
    return q_true, tokens, encode(tokens, N), targets(tokens, q_true)


def test_encoding_matches_the_texts_example():
    X = encode(np.array([[0, 2, 1, 1]]), 4)[0]  # the text's (1, 3, 2, 2), 0-based
    expected = np.array([[1, 0, 0, 0], [0, 0, 1, 1], [0, 1, 0, 0], [0, 0, 0, 0]])
    assert np.array_equal(X[:4], expected) and np.array_equal(X[4:], np.eye(4))
    assert all_sequences(3, 4).shape == (81, 4) and len({tuple(r) for r in all_sequences(3, 4)}) == 81


@pytest.mark.parametrize("N,M", [(3, 6), (4, 5), (1, 2), (2, 2)])
@pytest.mark.parametrize("solution", ["1", "2", "3"])
def test_every_sequence_exact(solution, N, M):
    q_true, tokens, X, Y = _data(N, M, seed=N * 10 + M)
    assert (q_true < 0).any() or N == 1
    Y_hat = forward(build(solution, q_true, M), X)
    assert np.abs(Y_hat - Y).max() <= FLOAT64
    # the first position is defined as 0: exactly for solution 1, up to c (m / c) - m for 2, 3
    assert np.abs(Y_hat[:, 0]).max() <= (0.0 if solution == "1" else FLOAT64)


def test_solution1_attention_plus_skip_is_eq_2_14():
    w = solution1(np.zeros((4, 4)), 4)
    X = encode(np.array([[0, 2, 1, 1]]), 4)
    H = attention_star_t(*(torch.as_tensor(a) for a in (X, w.q, w.k, w.v)))[0].numpy() + X[0]
    top = np.array([[1, 2, 0, 0], [0, 0, 1, 3], [0, 1, 2, 0], [0, 0, 0, 0]])
    assert np.array_equal(H[:4], top) and np.array_equal(H[4:], np.eye(4))
    assert pair_order(4)[11] == (2, 1)  # pair (3, 2) is B's twelfth row, as the text says
    scores = w.B @ H[:, 2]  # column 3, (0, 1, 2, 0 | 0, 0, 1, 0): "only the twelth line of B ... yields five"
    assert scores[11] == 5 and np.flatnonzero(np.maximum(scores + w.bias, 0)).tolist() == [11]
    assert pair_order(4)[2] == (2, 2) and scores[2] == 6  # the diagonal row (3, 3), 3 e_3, gives more before its
    # bias -8 (B is lost in the text)


def test_solution1_with_the_texts_C_is_wrong_on_repeated_pairs():
    q_true, tokens, X, Y = _data(4, 5, seed=3)
    err = np.abs(forward(solution1(q_true, 5, text_C=True), X) - Y)
    off = q_true.sum(1) - np.diag(q_true)
    assert np.isclose(err.max(), 2 * np.abs(off).max(), rtol=0, atol=FLOAT64)
    repeated = np.zeros_like(err, bool)
    repeated[:, 1:] = tokens[:, 1:] == tokens[:, :-1]
    assert err[~repeated].max() <= FLOAT64  # exact except where X_{i-1} = X_i


def test_linear_case_with_the_texts_digits():
    N, M = 10, 6
    w = solution1_linear(np.arange(10.0), M, 10.0)
    tokens = random_sequences(N, M, 500, np.random.default_rng(1))
    Y_hat = forward(w, encode(tokens, N))
    assert np.array_equal(Y_hat[:, 1:], 10 * tokens[:, :-1] + tokens[:, 1:])  # the two-digit number
    assert np.array_equal(Y_hat[:, 0], tokens[:, 0])  # Y_1 = d_{X_1}, not 0
    d = np.random.default_rng(2).standard_normal(4)
    toks = all_sequences(4, 5)
    Y = targets(toks, linear_q_true(d, -3.0))
    assert np.abs(forward(solution1_linear(d, 5, -3.0), encode(toks, 4))[:, 1:] - Y[:, 1:]).max() <= FLOAT64


def test_relu_threshold_formula():
    assert relu_threshold(np.array([[1.0, 3.0], [0.5, 2.0]])) == 3.0
    assert relu_threshold(np.array([[-1.0, -3.0], [-0.5, -2.0]])) == 3.0
    assert relu_threshold(np.array([[-1.0, 3.0], [0.5, 2.0]])) == 4.0


@pytest.mark.parametrize("solution", ["2", "3"])
def test_relu_constant_exact_at_threshold_and_leaks_below(solution):
    q_true, tokens, X, Y = _data(4, 5, seed=7)
    c = relu_threshold(q_true)
    assert np.abs(forward(build(solution, q_true, 5, relu_const=c), X) - Y).max() <= FLOAT64
    for delta in (1e-6, 1e-2, 0.5):
        err = np.abs(forward(build(solution, q_true, 5, relu_const=c - delta), X) - Y).max()
        assert err >= delta * (1 - 1e-9)  # the largest unselected entry leaks q + m - c = delta


@pytest.mark.parametrize("solution", ["2", "3"])
def test_texts_readout_clips_negative_targets(solution):
    q_true, tokens, X, Y = _data(3, 6, seed=5)
    for c in (100.0, 1e4):
        Y_hat = forward(build(solution, q_true, 6, relu_const=c, shift=False), X)
        assert np.abs(Y_hat - np.maximum(Y, 0.0)).max() <= FLOAT64_LONG  # ReLU(q_true): negatives become 0
        assert np.abs(Y_hat - Y).max() == pytest.approx(-q_true.min(), abs=FLOAT64_LONG)
    q_pos = np.abs(q_true)
    Y_pos = targets(tokens, q_pos)
    assert np.abs(forward(build(solution, q_pos, 6, relu_const=q_pos.max(), shift=False), X) - Y_pos).max() <= FLOAT64
    assert np.abs(forward(build(solution, q_pos, 6, relu_const=0.9 * q_pos.max(), shift=False), X) - Y_pos).max() > 0.05


def test_solutions_2_and_3_agree_and_the_module_path_agrees():
    q_true, tokens, X, Y = _data(3, 6, seed=11)
    outs = {s: forward(build(s, q_true, 6), X) for s in "123"}
    assert np.abs(outs["2"] - outs["3"]).max() <= FLOAT64
    for s in "123":
        assert np.abs(forward_module(build(s, q_true, 6), X) - outs[s]).max() <= FLOAT64
    w = solution1_linear(np.arange(3.0), 6, 3.0)
    assert np.abs(forward_module(w, X) - forward(w, X)).max() <= FLOAT64


def test_weight_blocks_are_the_texts():
    q_true = np.arange(9.0).reshape(3, 3) - 4
    w2, w3 = solution2(q_true, 4), solution3(q_true, 4)
    assert np.array_equal(w2.k.T @ w2.q, np.block([[q_true, np.zeros((3, 4))], [np.zeros((4, 7))]]))
    assert np.array_equal((w3.k.T @ w3.q)[3:, 3:], shift_matrix(4))
    assert np.allclose(w2.v[3:, 3:] * w2.relu_const, shift_matrix(4).T, atol=0)
    assert np.allclose(w3.v[:3, :3] * w3.relu_const, q_true.T, atol=1e-15)
    assert w2.offset == 4.0 and w2.relu_const == 2 * relu_threshold(q_true)


def test_bad_inputs():
    with pytest.raises(ConfigError, match="square"):
        solution2(np.zeros((2, 3)), 4)
    with pytest.raises(ConfigError, match="M must be an integer >= 2"):
        solution3(np.zeros((2, 2)), 1)
    with pytest.raises(ConfigError, match="relu_const must be a positive"):
        solution2(np.zeros((2, 2)), 3, relu_const=0.0)
    with pytest.raises(ConfigError, match="0..2"):
        encode(np.array([[0, 3]]), 3)


@pytest.mark.slow
@pytest.mark.parametrize("solution", ["1", "2", "3"])
def test_fifty_thousand_random_at_the_texts_size(solution):
    # five times the claim's 10,000 (attnlab.papers.logic.claims.solutions.RANDOM), on other sequences
    rng = np.random.default_rng(0)
    q_true = rng.standard_normal((10, 10))
    tokens = random_sequences(10, 50, 50_000, rng)
    err = 0.0
    for s in range(0, len(tokens), 25_000):
        t = tokens[s:s + 25_000]
        err = max(err, np.abs(forward(build(solution, q_true, 50), encode(t, 10)) - targets(t, q_true)).max())
    print(f"solution {solution}: max |Y_hat - Y| over 5 x 10^4 sequences at N=10, M=50: {err:.2e}")
    assert err <= FLOAT64


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("solution", ["1", "2", "3"])
def test_cuda_matches_cpu(solution):
    q_true, tokens, X, Y = _data(3, 6, seed=2)
    w = build(solution, q_true, 6)
    assert np.abs(forward(w, X, device="cuda") - Y).max() <= FLOAT64
    assert np.abs(forward_module(w, X, device="cuda") - Y).max() <= FLOAT64


def test_shapes_the_text_states():
    """The shapes of §2 and of §4's table (ledger entries solution-1-b-shape, solution-1-rows, table-v-shape,
    table-b, shift-transpose): B is N^2 x (N + M) in solution 1 and absent in 2 and 3, v is (N + M) x (N + M),
    and solution 2's S (v's position block) is D_-1 transposed."""
    N, M = 3, 4
    q_true = np.random.default_rng(0).standard_normal((N, N))
    w1, w2, w3 = solution1(q_true, M), solution2(q_true, M), solution3(q_true, M)
    assert w1.B.shape == (N * N, N + M) and w2.B is None and w3.B is None
    assert all(w.v.shape == (N + M, N + M) for w in (w1, w2, w3))
    S = w2.v[N:, N:] * w2.relu_const  # v = diag(0, S) / c
    assert np.array_equal(S, shift_matrix(M).T)
