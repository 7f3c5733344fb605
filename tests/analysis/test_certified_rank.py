"""Certified ranks on matrices whose rank is known, and on ones where a float64 rank lies."""

from __future__ import annotations

import flint
import numpy as np
import pytest

from attnlab.analysis.certified_rank import (
    DET_MAX,
    certified_rank,
    inverse_check,
    next_precision,
    select_minor,
    to_arb_mat,
    working_precision,
)
from attnlab.errors import ConfigError
from tolerances import FLOAT64


def test_full_rank_integer_matrix_is_certified_at_the_first_precision():
    M = np.array([[2.0, 1, 0], [1, 3, 1], [0, 1, 4]])  # det 18
    c = certified_rank(M)
    assert (c.lower, c.upper, c.rank, c.prec) == (3, 3, 3, 64)
    assert c.det_mid.startswith("18") and c.margin == 1.0  # exact entries: a zero-radius determinant
    assert abs(c.log10_det - np.log10(18)) < FLOAT64


def test_rank_two_matrix_pinned_by_a_minor_and_an_exhibited_null_vector():
    u, v = np.array([1.0, 2, 3, 4]), np.array([1.0, 0, -1, 2])
    M = np.stack([u, v, u + v, u - 2 * v])  # rank 2, rows 3 and 4 depend on rows 1, 2
    left = np.array([[1, 1, -1, 0], [1, -2, 0, -1]])
    c = certified_rank(M, size=2, left_null=left)
    assert (c.lower, c.upper, c.null_left) == (2, 2, 2) and c.exact
    c3 = certified_rank(M, size=3, left_null=left, precisions=(64, 128))  # no 3 x 3 minor is nonzero
    assert (c3.lower, c3.upper, c3.prec) == (0, 2, 0)
    with pytest.raises(ValueError, match="only bracketed"):
        _ = c3.rank


def test_hilbert_matrix_float_rank_lies_certified_rank_does_not():
    n = 14  # cond ~ 1e19: numpy's rank says 12
    with working_precision(256):
        H = flint.arb_mat.hilbert(n, n)
    c = certified_rank(lambda prec: flint.arb_mat.hilbert(n, n))
    assert c.float_rank < n and c.float_ratio < 1e-16
    assert c.rank == n and c.prec == 128 and c.margin > 0.99  # 64 bits do not suffice, 128 do
    assert -c.log10_det > 100  # det H_14 ~ 1e-120
    assert H.nrows() == n


def test_nearly_singular_matrix_below_float64_resolution():
    # [[1, 1], [1, 1 + 2^-70]]: float64 rounds it to a singular matrix; its det is 2^-70
    c = certified_rank(lambda prec: flint.arb_mat([[1, 1], [1, flint.arb(1) + flint.arb(2) ** -70]]))
    assert c.float_rank == 1 and c.rank == 2 and c.prec == 128
    assert abs(c.log10_det + 70 * np.log10(2)) < 1e-9


def test_a_wrong_null_vector_is_caught():
    with pytest.raises(ArithmeticError, match="not a null vector"):
        certified_rank(np.eye(3), left_null=np.array([[1, 0, 0]]))


def test_select_minor_finds_the_independent_rows_and_columns():
    M = np.zeros((4, 5))
    M[1, 3], M[3, 0] = 2.0, -1.0
    with working_precision(64):
        assert select_minor(to_arb_mat(M), 2) == ([1, 3], [0, 3])


@pytest.mark.parametrize("kwargs, message", [
    (dict(rows=[0, 1], cols=[0]), "must be square"),
    (dict(rows=[0, 5], cols=[0, 1]), "rows in \\[0, 3\\)"),
    (dict(precisions=[8]), "bit counts >= 16"),
    (dict(method="svd"), "method must be one of auto, det, inverse"),
    (dict(left_null=np.ones((1, 2), dtype=int)), "integer array \\(k, 3\\)"),
])
def test_bad_arguments_raise_config_errors(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        certified_rank(np.eye(3), **kwargs)


def test_rump_test_certifies_the_hilbert_matrix_once_the_precision_exceeds_log2_cond():
    n = 16  # cond ~ 2^74: 64 bits leave ||I - H R||_1 >= 1, the next attempt adds what delta asks for
    c = certified_rank(lambda prec: flint.arb_mat.hilbert(n, n), method="inverse", precisions=(64, 1024))
    assert c.rank == n and c.method == "inverse" and c.attempts == (64, 128) and c.prec == 128
    assert 0 < c.residual < 2.0 ** -40 and abs(c.margin - (1 - c.residual)) < FLOAT64  # measured residual 5.7e-17
    # n = 14 (cond ~ 2^63) already certifies at 64 bits: the right residual ||I - H R||_1 is 0.954 there
    c14 = certified_rank(lambda prec: flint.arb_mat.hilbert(14, 14), method="inverse", precisions=(64, 1024))
    assert c14.rank == 14 and c14.attempts == (64,) and 0.9 < c14.residual < 1
    assert c.det_mid == "" and np.isnan(c.log10_det) and c.summary()["method"] == "inverse"


def test_rump_test_never_certifies_a_ball_that_contains_a_singular_matrix():
    # [[1, 1], [1, 1 +- 2^-10]] contains [[1, 1], [1, 1]]: no R can give ||I - B R|| < 1
    ball = flint.arb(1) + flint.arb(0, 2.0 ** -10)
    with working_precision(128):
        ok, delta, delta_f = inverse_check(flint.arb_mat([[1, 1], [1, ball]]))
    assert not ok and delta_f >= 1
    c = certified_rank(lambda prec: flint.arb_mat([[1, 1], [1, 1]]), method="inverse", precisions=(64, 256))
    assert c.lower == 0 and c.attempts == (64, 128, 256)  # singular midpoint: no R, precision doubled to the cap


def test_rump_and_determinant_agree_on_a_nearly_singular_matrix():
    build = lambda prec: flint.arb_mat([[1, 1], [1, flint.arb(1) + flint.arb(2) ** -70]])  # det 2^-70
    c = certified_rank(build, method="inverse")
    assert c.rank == 2 and c.prec == 128 and c.attempts == (64, 128) and c.residual < 1e-9


def test_auto_uses_rump_above_det_max_rows():
    rng = np.random.default_rng(0)
    M = rng.standard_normal((DET_MAX + 4, DET_MAX + 4))  # cond ~1e3: 64 bits suffice
    c = certified_rank(M)
    assert c.method == "inverse" and c.rank == DET_MAX + 4 and c.prec == 64 and c.residual < 1e-9
    assert certified_rank(M[:20, :20]).method == "det"


def test_next_precision_adds_the_bits_the_residual_asks_for():
    assert next_precision(192, 92.0) == 256  # 192 + log2(92) + 16 = 214.5
    assert next_precision(256, 2.0 ** 100) == 384  # 256 + 100 + 16 = 372
    assert next_precision(64, 2.0 ** 48) == 192  # log2(delta) > 0.6 prec: possibly saturated, 3 prec
    assert next_precision(64, float("inf")) == 128
    assert next_precision(128, 1.5) == 192  # at least one more limb
