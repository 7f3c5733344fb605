"""The construction's certificate on 256 x 256 and 1024 x 1024 cases, where float64 sees a far lower rank."""

from __future__ import annotations

import flint
import pytest

from attnlab.analysis.certified_rank import working_precision
from attnlab.papers.invertibility.construction import (
    InvertibilityParams,
    build,
    build_case,
    certify_case,
    start_bits,
)


@pytest.mark.slow
def test_256_sequences_certified_full_rank_at_128_bits():
    case = build_case(InvertibilityParams(N=2, L=8, d=8))
    assert case.A.shape == (256, 256) and len(case.w) == 32
    cert = certify_case(case, precisions=(64, 128, 256))
    assert cert.rank == 256 and cert.prec == 128 and cert.margin > 0.99  # measured margin 0.999
    assert cert.float_rank < 200  # numpy's matrix_rank: 144 (measured)
    assert -2600 < cert.log10_det < -2500  # |det| ~ 1e-2548


def test_build_reports_the_cap_when_d_exceeds_n_plus_l_minus_2():
    res = build(InvertibilityParams(N=2, L=3, d=4, P=2))
    assert res.passed and res.values["rank_cap"] == 7 and res.values["certified_lower"] == 7
    assert any("1 + P (N + L - 2) = 7" in n for n in res.notes)
    res = build(InvertibilityParams(N=2, L=3, d=2, certify=False))
    assert res.passed and "certified_lower" not in res.values and res.values["P"] == 4


@pytest.mark.slow
def test_1024_sequences_certified_full_rank_by_rump_in_one_attempt():
    case = build_case(InvertibilityParams(N=32, L=2, d=32))  # minimal P = 32: A is 1024 x 1024
    assert case.A.shape == (1024, 1024) and start_bits(1024, 2) == 256 and start_bits(1024, 5, P=147) == 448
    cert = certify_case(case, threads=2)
    assert cert.rank == 1024 and cert.method == "inverse" and cert.attempts == (256,)
    # log2 cond ~ 189 by the right residual: at 256 bits ||I - B R||_1 ~ 2^-67 (measured)
    assert 0 < cert.residual < 2.0 ** -30 and cert.margin > 0.999
    assert cert.float_rank < 1024  # numpy's matrix_rank: 400 (measured)


def test_rump_right_residual_certifies_below_the_left_residuals_precision():
    # N = 4, L = 4 (256 rows, P = 43): with R from an LU solve of B X = I, prec + log2 of
    # ||I - R B||_inf is ~145 and of ||I - B R||_1 ~132 (measured at 128-192 bits): at 140
    # bits the left residual exceeds 1 (~2^5.5) and the right one certifies (~2^-8).
    case = build_case(InvertibilityParams(N=4, L=4, d=6))
    cert = certify_case(case, method="inverse", precisions=(140, 140))
    assert cert.rank == 256 and cert.attempts == (140,) and cert.residual < 2.0 ** -5
    with working_precision(140):
        M = case.arb_matrix(140)
        B = flint.arb_mat(256, 256, [M[i, j] for i in range(256) for j in range(256)])
        eye = flint.arb_mat(256, 256)
        for i in range(256):
            eye[i, i] = 1
        R = B.mid().solve(eye, algorithm="approx").mid()
        C = eye - R * B
        left = max(float(sum((abs(x) for x in row), flint.arb(0)).upper()) for row in C.tolist())
    assert left > 1  # the left residual proves nothing at 140 bits
