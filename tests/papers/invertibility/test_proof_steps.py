"""The proof's steps computed exactly (attnlab.papers.invertibility.proof_steps): the Taylor series the
note writes, the multinomial count, and the hyperplane witness for d >= L."""

from __future__ import annotations

from fractions import Fraction

import pytest

from attnlab.papers.invertibility.proof_steps import hyperplane, multinomial, taylor


def test_taylor_and_multinomial():
    t = taylor()
    assert t.note == pytest.approx(2.0, abs=1e-15) and t.target == pytest.approx(2 / 3, abs=1e-15)
    assert t.note_error == pytest.approx(4 / 3, abs=1e-15) and t.right_error <= 1e-50
    m = multinomial(3, 4)
    assert (m.monomials, m.terms, m.max_diff) == (15, 81, 0)


def test_taylor_at_another_point_by_hand():
    # x = 1/3, 3 terms: note 1 + 1/3 + 1/9 = 13/9, alternating 1 - 1/3 + 1/9 = 7/9, target 3/4, limit 3/2
    t = taylor(Fraction(1, 3), 3)
    assert (t.x, t.target, t.note, t.note_limit) == pytest.approx((1 / 3, 3 / 4, 13 / 9, 3 / 2), abs=1e-15)
    assert t.note_error == pytest.approx(25 / 36, abs=1e-15) and t.right_error == pytest.approx(1 / 36, abs=1e-15)
    assert list(t.to_dict()) == ["x", "target", "note", "note_limit", "note_error", "right_error"]


def test_multinomial_of_two_variables_squared():
    # (z_1 + z_2)^2 = z_1^2 + 2 z_1 z_2 + z_2^2: 3 monomials, 4 ordered terms
    m = multinomial(2, 2)
    assert m.to_dict() == {"m": 2, "j": 2, "monomials": 3, "terms": 4, "max_diff": 0}


def test_hyperplane_with_vt_in_rd_is_not_free_for_d_at_least_l():
    # d = L = 3: v_t orthogonal to the 2 differences x(t, i) - x(t, i_max) makes v_t^T f_t(w) = 1 for all w
    h = hyperplane(2, 3, 3, ((0, 1, 1), (1, 0, 1)))
    assert h.residual < 1e-14 and h.constant_error < 1e-13 and min(h.v_norms) > 0.1
    assert h.sequences == [[1, 2, 2], [2, 1, 2]]  # stored 1-based
    # d = L - 1 = 2: the differences span R^2, no such v_t (the SVD's last vector is not orthogonal)
    h2 = hyperplane(2, 3, 2, ((0, 1, 1), (1, 0, 1)))
    assert h2.constant_error > 1e-3
