"""One A measured (attnlab.papers.invertibility.measurement): the construction's case and a matrix of given
tables agree where they build the same A; a capped case is certified at its cap; the sweeps' summary of w."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from attnlab.errors import ConfigError
from attnlab.papers.invertibility.embeddings import (
    KINDS,
    embeddings_of_kind,
    explicit_embeddings,
    random_embeddings,
)
from attnlab.papers.invertibility.expansion import case_expansion, expansion_w
from attnlab.papers.invertibility.matrix import QK_KINDS, default_w, qk_matrices, qk_of_kind
from attnlab.papers.invertibility.measurement import MeasuredCase, measure_case, measure_matrix
from attnlab.papers.invertibility.w_sweep import summarise_w_sweep


def test_measure_case_of_a_full_rank_case():
    # (N, L, d, P) = (2, 2, 2, 2): A is 4 x 4, cap min(4, Pd) = 4, certified and resolved in both precisions
    r = measure_case(2, 2, 2, 2, 1.0)
    assert (r.rows, r.cols, r.m, r.cap, r.theorem) == (4, 4, 4, 4, True)
    assert r.float_rank == 4 and r.cert_lower == r.cert_upper == 4 and r.float_resolved
    assert r.resolution_log10 == pytest.approx(np.log10(4 * np.finfo(np.float64).eps), abs=1e-12)
    assert r.float_log10_ratio_next is None  # cap = m: there is no sigma_{cap+1}
    assert r.log10_ratio == r.hp_log10_ratio  # high precision is reported where computed...
    assert r.hp_log10_ratio == pytest.approx(r.float_log10_ratio, abs=1e-3)  # ...and agrees with float64 here
    assert r.log10_ratio == pytest.approx(-3.3677, abs=1e-3)
    assert list(r.to_dict())[:7] == ["N", "L", "d", "P", "w", "rows", "cols"]


def test_measure_case_of_a_capped_case_stops_at_the_cap():
    # (2, 3, 4) at P = 2: Pd = 8 = N^L but rank <= 1 + P (N + L - 2) = 7
    r = measure_case(2, 3, 4, 2, 1.0)
    assert (r.m, r.cap) == (8, 7) and r.cert_lower == r.cert_upper == 7 and r.float_rank == 7
    assert r.hp_bits is None and r.log10_ratio is None  # no sigma_min of a rank-deficient A
    assert r.float_log10_ratio_next < r.resolution_log10  # sigma_8 is round-off


def test_measure_case_switched_off():
    r = measure_case(2, 2, 2, 2, 1.0, high_precision=False, certify=False)
    assert r.hp_bits is r.cert_lower is r.cert_upper is r.cert_bits is None
    assert r.log10_ratio == r.float_log10_ratio  # float64 resolves it


def test_measure_matrix_agrees_with_measure_case_on_the_same_a():
    e, pos = explicit_embeddings(2, 3, 3)
    case = measure_case(2, 3, 3, 3, 0.5, high_precision=False)
    m = measure_matrix(e, pos, qk_of_kind("E11", 3, 3, 0.5, seed=0), high_precision=False, certify=True)
    assert (m.rows, m.cols, m.cap, m.float_rank) == (case.rows, case.cols, case.cap, case.float_rank)
    assert (m.float_tol, m.log10_sigma_max, m.float_log10_ratio) == (
        case.float_tol, case.log10_sigma_max, case.float_log10_ratio)  # the same float64 A, bit for bit
    assert m.cert_lower == case.cert_lower == 8


def test_kinds_of_embeddings_and_qk():
    assert KINDS == ("explicit", "random", "trained") and QK_KINDS == ("E11", "gaussian")
    for got, want in ((embeddings_of_kind("explicit", 2, 3, 2, 5), explicit_embeddings(2, 3, 2)),
                      (embeddings_of_kind("random", 2, 3, 2, 5), random_embeddings(2, 3, 2, 5))):
        assert all(np.array_equal(a, b) for a, b in zip(got, want))
    with pytest.raises(ConfigError, match="embedding must be one of explicit, random, trained"):
        embeddings_of_kind("orthogonal", 2, 3, 2, 0)
    assert np.array_equal(qk_of_kind("E11", 3, 4, 0.5, 7), qk_matrices(default_w(3, 0.5), 4))


def test_gaussian_qk_is_seeded():
    a, b = qk_of_kind("gaussian", 3, 4, 0.5, 7), qk_of_kind("gaussian", 3, 4, 0.5, 7)
    assert a.shape == (3, 4, 4) and np.array_equal(a, b)
    assert np.std(a) == pytest.approx(0.5 / 4, rel=0.3)
    with pytest.raises(ConfigError, match="W_QK kind must be one of"):
        qk_of_kind("identity", 3, 4, 0.5, 7)


def test_case_expansion_is_expansion_w_of_the_case():
    x = case_expansion(2, 4, 4)
    assert x.scale == expansion_w(*explicit_embeddings(2, 4, 4))
    assert x.scale.w_star == pytest.approx(5.345, abs=1e-3)
    assert list(x.to_dict()) == ["N", "L", "d", "w_star", "argmax", "min_gap", "closed_form"]
    assert case_expansion(2, 4, 4, "random", 3).scale == expansion_w(*random_embeddings(2, 4, 4, 3))


def test_summarise_w_sweep_by_hand():
    base = measure_case(2, 2, 2, 2, 1.0, high_precision=False, certify=False)
    res = -15.0

    def at(w: float, ratio: float | None, cert: int | None) -> MeasuredCase:
        return dataclasses.replace(base, w=w, log10_ratio=ratio, resolution_log10=res, cert_lower=cert)

    rows = [at(0.1, -8.0, 4), at(1.0, -3.0, 4), at(3.0, -12.0, None), at(10.0, None, 4), at(30.0, -20.0, 4)]
    s = summarise_w_sweep(rows, w_star=2.0)
    assert (s.N, s.L, s.d, s.P) == (2, 2, 2, 2)
    assert (s.best_w, s.best_log10_ratio) == (1.0, -3.0)
    assert (s.resolved_w_min, s.resolved_w_max) == (0.1, 3.0)  # -20 lies below the resolution -15
    assert (s.w_at_w_star, s.log10_ratio_at_w_star) == (3.0, -12.0)  # the first resolved w >= 2
    assert s.full_rank_all_w and (s.certified, s.count) == (4, 5)
    assert not summarise_w_sweep([at(1.0, None, 3)], 0.5).full_rank_all_w
    none = summarise_w_sweep([at(1.0, None, None)], 0.5)
    assert none.best_w is none.resolved_w_min is none.w_at_w_star is None and none.certified == 0
