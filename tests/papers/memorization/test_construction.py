"""Theorem 1's construction (memorization-capacity-of-mha §4, App. B), checked in float64.

Prime sizes (d = 13, n = 5 or 7, d_h = 3 or 7) so an axis mix-up fails; the paper's
sizes d = 64, n = 32. Labels must be reproduced to 1e-8 (the weights reach logit
scales c ~ 1e5-1e7, so the 1e-12 class does not apply to y_hat; measured ~1e-9).
"""

import numpy as np
import pytest

from numpy_reference import numpy_forward

from attnlab.errors import ConfigError
from attnlab.papers.memorization.construction import (
    MemorizationParams,
    build_memorizing_weights,
    check_memorization,
    construct_memorization,
    construction_anchor,
    memorize_drawn_dataset,
)
from attnlab.papers.memorization.data import draw_dataset
from attnlab.papers.memorization.model import memorization_forward
from tolerances import CONSTRUCTION_LABELS, FLOAT64_LONG


@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("n, d_h, H", [(5, 7, 3), (7, 3, 5)])
def test_prime_sizes_memorize_at_the_bound(shared, n, d_h, H):
    r = min(n, d_h)
    T = H * (r - 1) + 1
    E, e, y = draw_dataset(T, n, 13, 3, shared=shared, seed=1)
    w = build_memorizing_weights(E, e, y, H=H, d_h=d_h, seed=1)
    out = check_memorization(w, E, e, y)
    assert (w.r, w.bound, w.bound_name) == (r, T, "Theorem 1")
    assert out["rank_Z"] == T and out["sigma_min_Z"] > 1e3 * out["rank_tol"]
    assert out["max_abs_error"] <= CONSTRUCTION_LABELS
    assert w.W_Q.shape == w.W_K.shape == (H, 13, d_h) and w.W_V.shape == (H, 13, 3)
    assert [len(b) for b in w.blocks] == [r] + [r - 1] * (H - 1)
    # independent forward pass agrees with the package's
    np.testing.assert_allclose(numpy_forward(E, e, **w.matrices()), y, atol=CONSTRUCTION_LABELS, rtol=0)


@pytest.mark.parametrize("H", [1, 4])
def test_paper_sizes_shared_context(H):
    T = H * 31 + 1
    E, e, y = draw_dataset(T, 32, 64, 1, shared=True, seed=0)
    w = build_memorizing_weights(E, e, y, H=H, d_h=64)
    out = check_memorization(w, E, e, y)
    assert out["rank_Z"] == T and out["max_abs_error"] <= CONSTRUCTION_LABELS
    np.testing.assert_allclose(numpy_forward(E, e, **w.matrices()), y, atol=CONSTRUCTION_LABELS, rtol=0)
    # the scan only ever lowers App. B.2's c, by powers of ten, and keeps every head saturating
    assert (w.c_ <= w.c_required_).all() and (w.c_[1:] > 0).all()
    k = np.log10(w.c_required_[1:] / w.c_[1:])
    np.testing.assert_allclose(k, np.round(k), atol=1e-9)


def test_proof_c_also_memorizes():
    """With App. B.2's own (larger) c, the build still memorizes: the scan is a choice, not a fix."""
    E, e, y = draw_dataset(63, 32, 64, 1, shared=True, seed=3)
    w0 = build_memorizing_weights(E, e, y, H=2, d_h=64)
    w = build_memorizing_weights(E, e, y, H=2, d_h=64, c=float(w0.c_required_.max()))
    out = check_memorization(w, E, e, y)
    assert out["rank_Z"] == 63 and out["max_abs_error"] <= CONSTRUCTION_LABELS


@pytest.mark.parametrize("shared", [True, False])
def test_paper_sizes_eight_heads(shared):
    T = 8 * 31 + 1  # 249, FIELD-NOTES / Theorem 1
    E, e, y = draw_dataset(T, 32, 64, 1, shared=shared, seed=0)
    out = check_memorization(build_memorizing_weights(E, e, y, H=8, d_h=64), E, e, y)
    assert out["rank_Z"] == 249 and out["max_abs_error"] <= CONSTRUCTION_LABELS


def test_below_the_bound_and_unused_heads():
    E, e, y = draw_dataset(6, 5, 13, 1, shared=True, seed=2)
    w = build_memorizing_weights(E, e, y, H=4, d_h=7)
    assert [len(b) for b in w.blocks] == [5, 1, 0, 0]
    assert np.abs(w.W_Q[2:]).max() == 0.0  # unused heads attend uniformly
    out = check_memorization(w, E, e, y)
    assert out["rank_Z"] == 6 and out["max_abs_error"] <= CONSTRUCTION_LABELS


def test_classification_labels_are_argmax_exact():
    E, e, _ = draw_dataset(13, 5, 13, 1, shared=False, seed=3)
    labels = np.random.default_rng(3).integers(0, 4, size=13)
    w = build_memorizing_weights(E, e, labels, H=3, d_h=5, n_classes=4)
    out = check_memorization(w, E, e, labels)
    assert out["accuracy"] == 1.0 and out["max_abs_error"] <= CONSTRUCTION_LABELS
    assert w.W_D.shape == (13, 4)


def test_more_classes_than_d_use_sign_codes_with_margin_one():
    """26 classes at d = 13: codes +-s_i (13 dims); logits u_j^T u_y: 1 on y, <= 0 elsewhere."""
    E, e, _ = draw_dataset(13, 5, 13, 1, shared=True, seed=4)
    labels = np.random.default_rng(4).integers(0, 26, size=13)
    w = build_memorizing_weights(E, e, labels, H=3, d_h=5, n_classes=26)
    assert w.W_D.shape == (13, 26) and w.class_codes.shape == (26, 13)
    logits = numpy_forward(E, e, **w.matrices())
    out = check_memorization(w, E, e, labels)
    assert out["accuracy"] == 1.0 and out["max_abs_error"] <= CONSTRUCTION_LABELS
    np.testing.assert_allclose(logits[np.arange(13), labels], 1.0, atol=CONSTRUCTION_LABELS)
    others = logits.copy()
    others[np.arange(13), labels] = -np.inf
    assert others.max() <= CONSTRUCTION_LABELS  # margin 1 between the true class and every other
    with pytest.raises(ConfigError, match="use at most 26 classes"):
        build_memorizing_weights(E, e, labels, H=3, d_h=5, n_classes=27)


def test_skip_connection_appendix_c():
    E, e, y = draw_dataset(9, 5, 13, 2, shared=True, seed=4)
    w = build_memorizing_weights(E, e, y, H=2, d_h=5, skip=True)
    y_hat = memorization_forward(E, e, **w.matrices(), skip=True)
    assert np.abs(y_hat - y).max() <= CONSTRUCTION_LABELS
    np.testing.assert_allclose(numpy_forward(E, e, **w.matrices(), skip=True), y_hat, atol=FLOAT64_LONG, rtol=0)


def test_assumption1_failure_falls_back_to_remark1():
    rng = np.random.default_rng(6)
    basis = rng.uniform(size=(3, 13))  # queries in a 3-dim subspace: Kruskal rank <= 3 < n = 5
    e = rng.uniform(size=(9, 3)) @ basis
    E = rng.uniform(size=(5, 13))
    y = rng.standard_normal((9, 1))
    w = build_memorizing_weights(E, e, y, H=4, d_h=7)  # Remark 1: 4 (3 - 1) + 1 = 9
    assert (w.r, w.bound, w.bound_name) == (3, 9, "Remark 1")
    assert any("Assumption 1 fails" in note for note in w.notes)
    assert check_memorization(w, E, e, y)["max_abs_error"] <= CONSTRUCTION_LABELS
    assert construction_anchor(w)["anchor"] == "memorization.remark-1"  # the text's Remark 1, realised
    with pytest.raises(ConfigError, match=r"Remark 1's bound H\(r-1\)\+1 = 9"):
        build_memorizing_weights(E, np.vstack([e, e[:1] * 2]), np.vstack([y, y[:1]]), H=4, d_h=7)


def test_parallel_queries_are_caught_during_the_build():
    E, e, y = draw_dataset(5, 5, 13, 1, shared=True, seed=7)
    assert build_memorizing_weights(E, e, y, H=4, d_h=7).bound_name == "Theorem 1"
    e[1] = 3 * e[0]  # two parallel queries: Kruskal rank 1 (Remark 1: T <= 1), though they span 4 dims
    with pytest.raises(ConfigError, match=r"Remark 1's bound H\(r-1\)\+1 = 1 .*linearly dependent"):
        build_memorizing_weights(E, e, y, H=4, d_h=7)


def test_rank_deficient_context_is_named():
    E, e, y = draw_dataset(9, 5, 13, 1, shared=False, seed=8)
    E[2, 4] = E[2, 0] + E[2, 1]  # context 2 has rank 4 < n = 5
    w = build_memorizing_weights(E, e, y, H=3, d_h=7)
    assert w.r == 4 and any("Assumption 2 fails" in note for note in w.notes)
    assert check_memorization(w, E, e, y)["max_abs_error"] <= CONSTRUCTION_LABELS
    # r <= rank E^(t) is attnlab's extension of Remark 1, not the text's: the check is a sanity check
    assert construction_anchor(w) == {}


def test_fixed_c_is_recorded():
    E, e, y = draw_dataset(9, 5, 13, 1, shared=True, seed=9)
    w = build_memorizing_weights(E, e, y, H=2, d_h=5, c=1e6)
    assert w.c_[1] == 1e6 and w.c_required_[1] > 0
    assert check_memorization(w, E, e, y)["rank_Z"] == 9


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(H=2, d_h=5, T=10), r"exceeds Theorem 1's bound H\(r-1\)\+1 = 9"),
        (dict(H=2, d_h=0, T=3), "d_h must be an integer >= 1"),
        (dict(H=0, d_h=5, T=3), "H must be an integer >= 1"),
        (dict(H=2, d_h=5, T=3, d_v=0), "d_v must be an integer >= 1"),
        (dict(H=2, d_h=5, T=3, c=-1.0), r"c must be a finite number in \(0, inf\), got -1.0"),
    ],
)
def test_bad_input_raises_config_error(kwargs, message):
    T = kwargs.pop("T")
    E, e, y = draw_dataset(T, 5, 13, 2, shared=True, seed=0)
    if "d_v" in kwargs:
        kwargs["d_v"] = 0
    with pytest.raises(ConfigError, match=message):
        build_memorizing_weights(E, e, y, **kwargs)


def test_context_longer_than_d_and_label_mismatch_raise():
    E, e, y = draw_dataset(3, 13, 13, 1, shared=True, seed=0)
    with pytest.raises(ConfigError, match="n < d"):
        build_memorizing_weights(E, e, y, H=1, d_h=3)
    E, e, y = draw_dataset(3, 5, 13, 1, shared=True, seed=0)
    with pytest.raises(ConfigError, match="one label per query"):
        build_memorizing_weights(E, e, y[:2], H=1, d_h=3)


def test_memorize_drawn_dataset_is_draw_build_check():
    (E, e, y), w, out = memorize_drawn_dataset(13, 5, 13, 2, H=3, d_h=7, shared=False, seed=4)
    E2, e2, y2 = draw_dataset(13, 5, 13, 2, shared=False, seed=4)
    assert np.array_equal(E, E2) and np.array_equal(e, e2) and np.array_equal(y, y2)
    assert out == check_memorization(build_memorizing_weights(E, e, y, H=3, d_h=7, seed=4), E, e, y)
    assert out["T"] == out["bound"] == out["rank_Z"] == 13 and out["max_abs_error"] <= CONSTRUCTION_LABELS
    assert w.W_V.shape == (3, 13, 2)


def test_registered_construction_builds_at_the_bound():
    res = construct_memorization(MemorizationParams(H=2, n=5, d=13, d_h=5, d_out=3, seed=1))
    assert res.passed and res.criterion == "max |y_hat - y| <= 1e-08"
    assert (res.check.role, res.check.verdict, res.check.detail) == ("construction", "reproduced",
                                                                      "T = 9 examples, float64")
    assert res.check.anchor == "memorization.theorem-1"  # Assumptions 1 and 2 hold: Theorem 1 realised
    assert res.values["T"] == res.values["bound"] == res.values["rank_Z"] == 9  # 2 (5 - 1) + 1
    assert set(res.arrays) == {"E", "e", "y", "W_Q", "W_K", "W_V", "W_O", "W_D"}
    assert res.to_dict()["max_abs_error"] <= CONSTRUCTION_LABELS and res.to_dict()["shared_context"] is True
    with pytest.raises(ConfigError, match="d_h must be an integer >= 1, got 0"):
        MemorizationParams(d_h=0)
