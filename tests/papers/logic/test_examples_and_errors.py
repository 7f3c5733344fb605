"""§1's networks against their logic, and the list of the text's errors."""

import numpy as np
import pytest

from attnlab.papers.logic.examples import all_binary, mood, or_of_ands, or_of_ands_truth, or_probability
from attnlab.papers.logic.notes_errors import TEXT_ERRORS


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


def test_errors_list_is_well_formed():
    assert len(TEXT_ERRORS) >= 15
    for entry in TEXT_ERRORS:
        assert len(entry) == 4 and all(isinstance(s, str) and s.strip() for s in entry)
    wheres = " ".join(e[0] for e in TEXT_ERRORS)
    for needle in ("eq. 2.11", "eq. 2.21", "§3.1", "eq. 2.13"):
        assert needle in wheres
