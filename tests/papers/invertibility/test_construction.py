"""The construction's certificate on a 256 x 256 case, where float64 sees rank ~100."""

from __future__ import annotations

import pytest

from attnlab.papers.invertibility.construction import InvertibilityParams, build, build_case, certify_case


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
