"""The cost model of a measured case (attnlab.papers.invertibility.cost): the conditioning model, the
precisions it implies and what an Arb operation costs at each, checked against hand-derived values; the
W_QK kind's draws in the matrix estimate. The configs' estimates are in test_estimates.py."""

from __future__ import annotations

import math

import pytest

from attnlab.papers.invertibility.cost import (
    case_estimate,
    certificate_attempts,
    high_precision_attempts,
    log10_condition,
    matrix_estimate,
    precision_cost,
    reached,
)


def test_log10_condition_by_hand():
    # (2, 4, 4, 4): m = min(16, 16) = 16, 16^0.47 = 2^1.88, 16^1.25 = 32
    assert log10_condition(2, 4, 4, 4, 1.0) == pytest.approx(2.2 * 2 ** 1.88, rel=1e-12)  # 0.1 * 32 = 3.2 is less
    assert log10_condition(2, 4, 4, 4, 100.0) == pytest.approx(320.0, rel=1e-12)  # saturated: 0.1 w m^1.25
    assert log10_condition(2, 4, 4, 4, 0.003) == pytest.approx(2.2 * 2 ** 1.88 + 8.0, rel=1e-12)  # + 4 log10(100)


def test_precision_cost_by_hand():
    assert precision_cost(256) == 1.0 and precision_cost(128) == 0.5 and precision_cost(32) == 0.25
    assert precision_cost(1024) == pytest.approx(4 ** 1.4, rel=1e-12)


def test_reached_stops_at_the_first_precision_that_suffices():
    assert reached((128, 256, 512), 200) == (128, 256)
    assert reached((128, 256, 512), 200, extra=1) == (128, 256, 512)
    assert reached((128, 256, 512), 1000) == (128, 256, 512)  # none suffices: all of them


def test_attempts_by_hand():
    # log10 cond 10: the Gram inverse needs 2 log2(10) 10 + 20 = 86.4 bits -> 128, and one doubling more
    assert high_precision_attempts(10.0) == (128, 256)
    assert high_precision_attempts(30.0) == (128, 256, 512)  # 219.3 bits
    # Rump's test needs log2 cond + 16 bits: 49.2 at log10 cond 10 (64 suffices), 115.7 at 30 (asks 128)
    assert certificate_attempts("inverse", 64, 10.0) == (64,)
    assert certificate_attempts("inverse", 64, 30.0) == (64, 128)
    # a determinant from 64 bits walks the certificate's precisions up to 1.5 log2 cond = 49.8 / 149.5 bits
    assert certificate_attempts("det", 64, 10.0) == (64,)
    assert certificate_attempts("det", 64, 30.0) == (64, 128, 256)
    assert certificate_attempts("det", 192, 30.0) == (192,)  # from above 64 bits it doubles from there
    assert math.log2(10) * 30 * 1.5 < 192


def test_matrix_estimate_counts_the_gaussian_draws():
    e11 = matrix_estimate(2, 4, 4, 4, 1.0, "E11", high_precision=False, certify=False)
    gauss = matrix_estimate(2, 4, 4, 4, 1.0, "gaussian", high_precision=False, certify=False)
    assert gauss.traffic - e11.traffic == 48.0 * 4 * 4 * 4 and gauss.peak_bytes == e11.peak_bytes
    assert gauss.what.startswith("(N, L, d, P) = (2, 4, 4, 4), W_QK gaussian, w = 1: ")


def test_case_estimate_adds_the_certificate_and_the_high_precision_steps():
    bare = case_estimate(2, 4, 4, 4, 1.0, high_precision=False, certify=False)
    full = case_estimate(2, 4, 4, 4, 1.0)
    assert full.arb > bare.arb == 0 and full.peak_bytes >= bare.peak_bytes
    assert full.calls > bare.calls == 3
