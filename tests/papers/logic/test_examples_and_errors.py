"""§1's networks against their logic, and the text's errata records."""

import numpy as np
import pytest

from attnlab.papers.logic.examples import all_binary, mood, or_of_ands, or_of_ands_truth, or_probability
from attnlab.errata import KINDS, SURVIVES, TextError
from attnlab.papers.logic.errata import ERRATA
from attnlab.registry import all_errata, discover


def test_or_of_ands_every_input():
    X = all_binary(6)
    assert np.array_equal(or_of_ands(X), or_of_ands_truth(X))
    assert or_of_ands(X).sum() == 64 - 27  # 27 = 3^3 inputs with no pair both 1


@pytest.mark.parametrize("p", [0.0, 0.2, 0.5, 1.0])
def test_or_probability(p):
    assert or_probability(p) == pytest.approx(1 - (1 - p * p) ** 3, abs=1e-15)


def test_happy_sad_and_other_pairs():
    assert np.array_equal(mood(("receive", "present")), [1, 0])
    assert np.array_equal(mood(("pass", "exam")), [1, 0])
    assert np.array_equal(mood(("receive", "punishment")), [0, 1])
    assert np.array_equal(mood(("present", "exam")), [0, 0])  # no rule fires


def test_errata_are_registered_records():
    discover()
    assert [e.id for e in all_errata(["logic"])] == [e.id for e in ERRATA]
    assert len(ERRATA) == len({e.id for e in ERRATA}) >= 25
    for e in ERRATA:
        assert isinstance(e, TextError) and e.kind in KINDS and e.survives in SURVIVES
        assert e.whose == "the text" and e.id.startswith("logic.")


def _by_id():
    return {e.id: e for e in ERRATA}


def test_extraction_losses_and_stated_exclusions_are_not_errata():
    """B of eq. 1.1 is lost by the PDF extraction, not by the text; the constant growing with the number of
    categories is right for the two-digit table; descent finding v = I is the text's (a limit, measured in the
    claim); the degenerate q_true is an exclusion the text states."""
    text = " ".join(f"{e.where} {e.says}" for e in ERRATA).lower()
    assert "eq. 1.1" not in text and "is missing from the text" not in text
    assert "more than ten" not in text and "may need to be larger" not in text
    assert "finds the correct" not in text
    assert "any application" not in text and "depending on t only" not in text


def test_a_of_t_is_a_swap_in_one_line_not_a_sign_error():
    e = _by_id()["logic.q-qtrue-swapped"]
    assert e.kind == "typo" and e.survives == "yes" and "before eq. 3.71" in e.where
    assert "q(r, t) = a(t) + q_true(r, t)" in e.correct
    assert not any("sign" in x.correct.lower() and "a(t)" in x.says for x in ERRATA)


@pytest.mark.parametrize("slug, where, needle", [
    ("logic.init-scale", "eq. 3.13", "N^(-3/2)"),
    ("logic.i-qbar", "eq. 3.27", "M q_bar_i"),
    ("logic.n-equals-m", "§4", "any N, M"),
])
def test_added_errata(slug, where, needle):
    e = _by_id()[slug]
    assert where in e.where and needle in e.correct


def test_solution1_entry_is_sourced_and_measured():
    e = _by_id()["logic.solution1-repeated-pairs"]
    assert e.kind == "wrong statement" and e.survives == "partly" and e.check == "logic.solution-1"
    assert "convex" in e.witness
