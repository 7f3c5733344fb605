"""Sinusoidal and learned positional encodings (math text §1.2.1, eq. 1)."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlab.errors import ConfigError
from attnlab.nn.positional import (
    LearnedPositionalEmbedding,
    SinusoidalPositionalEncoding,
    frequencies,
    shift_matrix,
    sinusoidal_encoding,
)
from tolerances import FLOAT64


def test_hand_values_d4_N100():
    # w_0 = 1, w_1 = 100^(-2/4) = 0.1, so P[t] = (sin t, cos t, sin 0.1t, cos 0.1t)
    P = sinusoidal_encoding(3, 4, N=100, dtype=torch.float64)
    for t in range(3):
        expected = [math.sin(t), math.cos(t), math.sin(0.1 * t), math.cos(0.1 * t)]
        assert P[t].tolist() == pytest.approx(expected, abs=1e-15)


def test_frequencies_default_N():
    w = frequencies(8)  # 10000^(-2k/8) = 10^(-k), k = 0..3
    assert w.tolist() == pytest.approx([1.0, 0.1, 0.01, 0.001], rel=1e-14)


def test_shape_and_dtype():
    P = sinusoidal_encoding(7, 6)
    assert P.shape == (7, 6) and P.dtype == torch.float32
    assert P[0].tolist() == [0.0, 1.0, 0.0, 1.0, 0.0, 1.0]


@settings(max_examples=40, deadline=None)
@given(
    s=st.integers(-300, 2000),
    half_d=st.integers(1, 40),
    N=st.floats(2.0, 1e5),
)
def test_shift_is_one_linear_map_for_all_t(s, half_d, N):
    d = 2 * half_d
    T = 64
    P = sinusoidal_encoding(T + 2400, d, N, dtype=torch.float64)
    t0 = 300  # so t0 + s >= 0 for every drawn s
    M = shift_matrix(s, d, N)
    shifted = P[t0 + s : t0 + s + T]  # PE(t + s)
    assert (shifted - P[t0 : t0 + T] @ M.T).abs().max().item() < 1e-11


def test_shift_matrix_is_a_rotation_group():
    d, N = 10, 37.0
    M3, M5, M8 = shift_matrix(3, d, N), shift_matrix(5, d, N), shift_matrix(8, d, N)
    eye = torch.eye(d, dtype=torch.float64)
    assert (M3 @ M3.T - eye).abs().max() < FLOAT64  # orthogonal
    assert (M3 @ M5 - M8).abs().max() < FLOAT64  # M_s M_r = M_{s+r}
    assert (shift_matrix(0, d, N) - eye).abs().max() == 0
    # block diagonal: nothing couples different frequencies
    mask = torch.block_diag(*[torch.ones(2, 2)] * (d // 2)).bool()
    assert (M3[~mask] == 0).all()


def test_shift_mixes_sin_and_cos():
    # The text's "a sin(w t) + b" hides that b depends on cos(w t): M_s is not diagonal.
    M = shift_matrix(1, 2, N=10000)
    assert M[0, 1].item() == pytest.approx(math.sin(1.0), abs=1e-15)
    assert M[1, 0].item() == pytest.approx(-math.sin(1.0), abs=1e-15)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: sinusoidal_encoding(5, 7), "even dimension"),
        (lambda: sinusoidal_encoding(5, 0), "even dimension"),
        (lambda: sinusoidal_encoding(5, 4, N=1.0), "N must be > 1"),
        (lambda: sinusoidal_encoding(0, 4), "n_positions must be positive"),
        (lambda: shift_matrix(1, 3), "even dimension"),
        (lambda: LearnedPositionalEmbedding(0, 5), "must be positive"),
    ],
)
def test_bad_input_messages(call, message):
    with pytest.raises(ConfigError, match=message):
        call()


def test_sinusoidal_module_adds_P_and_has_no_parameters():
    pe = SinusoidalPositionalEncoding(6, max_len=11, N=10000)
    x = torch.randn(3, 5, 6, dtype=torch.float64)
    expected = x + sinusoidal_encoding(5, 6, dtype=torch.float64)
    assert (pe(x) - expected).abs().max() < 1e-15
    assert pe(x.float()).dtype == torch.float32
    assert list(pe.parameters()) == []
    assert pe.P.shape == (11, 6)
    with pytest.raises(ConfigError, match="exceeds max_len=11"):
        pe(torch.zeros(1, 13, 6))


def test_learned_module_adds_its_parameter():
    pe = LearnedPositionalEmbedding(6, max_len=7).double()
    assert [tuple(p.shape) for p in pe.parameters()] == [(7, 6)]
    x = torch.randn(3, 5, 6, dtype=torch.float64)
    assert torch.equal(pe(x), x + pe.P[:5])
    with pytest.raises(ConfigError, match="exceeds max_len=7"):
        pe(torch.zeros(1, 11, 6, dtype=torch.float64))
