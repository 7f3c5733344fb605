"""The invertibility experiments' building blocks: spectra in float64 and high precision, decoding,
the proof's expansion scale, MiniLM's tables and the general-W_QK ball matrix."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnlab.analysis.certified_rank import midpoint, to_arb_mat, working_precision
from attnlab.errors import ConfigError
from attnlab.papers.invertibility.decoding import (
    crossing_level,
    decode_least_squares,
    decode_nearest,
    error_rates,
    noisy_rows,
    row_separation,
)
from attnlab.papers.invertibility.embeddings import explicit_embeddings, random_embeddings
from attnlab.papers.invertibility.expansion import expansion_w
from attnlab.papers.invertibility.matrix import (
    attention_matrix,
    attention_matrix_arb,
    attention_matrix_arb_qk,
    default_w,
    qk_matrices,
)
from attnlab.papers.invertibility.spectrum import EPS, float_spectrum, sigma_min_high_precision
from attnlab.papers.invertibility.trained import RMS, WORDS, minilm_embeddings, minilm_token_ids
from tolerances import FLOAT64


def test_float_spectrum_rank_and_tolerance():
    A = np.diag([2.0, 1.0, 1e-20])
    fs = float_spectrum(A)
    assert fs.rank == 2 and fs.tol == pytest.approx(3 * EPS * 2.0, rel=1e-15)
    assert not fs.resolved() and fs.resolved(2)
    assert fs.log10_ratio(2) == pytest.approx(math.log10(0.5), abs=1e-15)
    assert fs.log10_ratio() == pytest.approx(-20 - math.log10(2), abs=FLOAT64)  # diagonal: exact in LAPACK
    assert float_spectrum(np.diag([1.0, 0.0])).log10_ratio() == pytest.approx(math.log10(5e-324))
    assert float_spectrum(np.diag([8.0, 0.0])).log10_ratio() == pytest.approx(math.log10(5e-324) - math.log10(8))


def test_high_precision_sigma_min_of_a_known_matrix():
    # sigma_min = 2^-100 sits far below float64's resolution next to sigma_max = 1
    rng = np.random.default_rng(0)
    Q1, Q2 = (np.linalg.qr(rng.standard_normal((3, 3)))[0] for _ in range(2))
    D = np.diag([1.0, 0.5, 2.0 ** -100])
    build = lambda prec: to_arb_mat(D)  # noqa: E731
    hp = sigma_min_high_precision(build)
    assert hp.log10_sigma_min == pytest.approx(-100 * math.log10(2), abs=1e-9)
    rotated = float_spectrum(Q1 @ D @ Q2)  # float64 cannot see it once rotated: round-off instead
    assert rotated.sigma[-1] > 1e-20 and not rotated.resolved()


def test_high_precision_agrees_with_float64_where_resolved():
    e, pos = explicit_embeddings(2, 4, 4)
    w = default_w(4, 1.0)
    A = attention_matrix(e, pos, qk_matrices(w, 4))
    fs = float_spectrum(A)
    assert fs.resolved()
    hp = sigma_min_high_precision(lambda prec: attention_matrix_arb(e, pos, w))
    assert hp.log10_sigma_min == pytest.approx(math.log10(fs.sigma[-1]), abs=1e-6)
    assert hp.bits <= 256


def test_high_precision_resolves_what_float64_cannot():
    e, pos = explicit_embeddings(2, 6, 6)
    w = default_w(11, 1.0)
    A = attention_matrix(e, pos, qk_matrices(w, 6))
    fs = float_spectrum(A)
    assert not fs.resolved() and fs.rank < 64
    hp = sigma_min_high_precision(lambda prec: attention_matrix_arb(e, pos, w))
    assert hp.log10_sigma_min == pytest.approx(-24.483, abs=2e-3)  # 512 bits agree with 256
    assert hp.history[-1] == hp.log10_sigma_min


def test_arb_qk_matches_float64_for_gaussian_w():
    e, pos = random_embeddings(2, 3, 3, seed=1)
    W = np.random.default_rng(1).standard_normal((3, 3, 3)) / 3
    with working_precision(128):
        M = midpoint(attention_matrix_arb_qk(e, pos, W))
        E11 = midpoint(attention_matrix_arb_qk(e, pos, qk_matrices([0.3, 0.6], 3)))
        ref = midpoint(attention_matrix_arb(e, pos, [0.3, 0.6]))
    assert np.abs(M - attention_matrix(e, pos, W)).max() <= 1e-14
    assert np.abs(E11 - ref).max() <= 1e-15
    with pytest.raises(ConfigError, match="shapes disagree"):
        attention_matrix_arb_qk(e, pos, W[:, :2, :2])


def test_row_separation_and_decoders():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((12, 5))
    brute = [min(np.linalg.norm(A[t] - A[s]) for s in range(12) if s != t) for t in range(12)]
    assert np.allclose(row_separation(A), brute, rtol=1e-14)
    truth = np.arange(12)
    assert (decode_nearest(A, A) == truth).all()
    B = rng.standard_normal((4, 9))  # full row rank: least squares decodes exactly
    assert (decode_least_squares(B, B) == np.arange(4)).all()
    Y = noisy_rows(A, 1e-3, rng)
    assert np.allclose(np.linalg.norm(Y - A, axis=1) / np.linalg.norm(A, axis=1), 1e-3, rtol=FLOAT64)


def test_error_rates_zero_and_huge_noise():
    e, pos = explicit_embeddings(2, 3, 2)
    A = attention_matrix(e, pos, qk_matrices(default_w(4, 1.0), 2))
    r = error_rates(A, [0.0, 1e-12, 100.0], draws=20, rng=np.random.default_rng(0))
    assert r["nearest"][:2] == [0.0, 0.0] and r["least_squares"][:2] == [0.0, 0.0]
    assert r["nearest"][2] >= 0.75 and r["least_squares"][2] >= 0.75  # chance: 1 - 1/8 = 0.875
    again = error_rates(A, [0.0, 1e-12, 100.0], draws=20, rng=np.random.default_rng(0))
    assert again == r


def test_crossing_level():
    assert crossing_level([1e-3, 1e-2, 1e-1], [0.0, 0.25, 0.75]) == pytest.approx(10 ** -1.5, rel=FLOAT64)
    assert crossing_level([0.0, 1e-2], [0.6, 0.9]) == 0.0
    assert crossing_level([1e-3, 1e-2], [0.0, 0.1]) is None


def test_expansion_w_solves_the_series_condition():
    e, pos = explicit_embeddings(2, 4, 4)
    r = expansion_w(e, pos)
    t = r.argmax
    x1 = e[t, 0] + pos[:, 0]
    q, imax = x1[-1], int(np.argmax(x1))
    x_of = lambda w: sum(math.exp(-w * q * (x1[imax] - x1[i])) for i in range(4) if i != imax)  # noqa: E731
    assert x_of(r.w_star) == pytest.approx(1.0, abs=1e-9)
    assert 0 < r.w_star <= r.closed_form
    e2, pos2 = explicit_embeddings(2, 2, 2)
    assert expansion_w(e2, pos2).w_star == 0.0
    with pytest.raises(ConfigError, match="x\\(t, L\\)_1 > 0"):
        expansion_w(-e, -pos)


def test_minilm_tables():
    e, pos = minilm_embeddings(3, 4, 5)
    assert e.shape == (3, 5) and pos.shape == (4, 5)
    assert float(np.sqrt(np.mean(np.vstack([e, pos]) ** 2))) == pytest.approx(RMS, rel=FLOAT64)
    e2, pos2 = minilm_embeddings(3, 4, 5)
    assert np.array_equal(e, e2) and np.array_equal(pos, pos2)
    f, fpos = minilm_embeddings(3, 4, 5, "first")
    assert f.shape == (3, 5) and (f < 0).any()  # trained entries have both signs
    assert len(minilm_token_ids(len(WORDS))) == len(set(minilm_token_ids(len(WORDS))))
    with pytest.raises(ConfigError, match="N must be an integer in"):
        minilm_embeddings(len(WORDS) + 1, 2, 2)
    with pytest.raises(ConfigError, match="restrict must be one of"):
        minilm_embeddings(2, 2, 2, "pca")
