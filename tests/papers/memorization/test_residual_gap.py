"""The memorization level of trained fits (residual_gap): the geometric middle of the widest gap of
the residuals, with the numbers of the text-size run (results/paper-scale/memorization)."""

from __future__ import annotations

import math

import pytest

from attnlab.errors import ConfigError
from attnlab.papers.memorization.residual_gap import CEILING, FLOOR, gap_threshold

# best relative residuals of the committed paper-scale fcn-vs-attention run, T = 64 ... 768
PAPER_T = [64, 125, 250, 375, 511, 640, 768]
PAPER_FCN = [5.58e-10, 2.48e-9, 1.28e-8, 8.52e-7, 0.1269, 0.3127, 0.3627]
PAPER_ATTENTION = [1.55e-9, 1.91e-9, 4.49e-9, 5.24e-9, 1.66e-8, 9.24e-9, 1.25e-8]


def test_the_text_size_residuals_split_between_the_fcn_at_375_and_at_511():
    level = gap_threshold(PAPER_FCN + PAPER_ATTENTION)
    # the widest gap runs from the FCN's 8.5e-7 (T = 375) to the ceiling (T = 511's 0.127 is clipped there)
    assert (level.lower, level.upper) == (8.52e-7, CEILING)
    assert level.level == pytest.approx(math.sqrt(8.52e-7 * 1e-2), rel=1e-12)  # 9.2e-5
    assert level.decades == pytest.approx(4.07, abs=0.01) and level.separates
    assert [T for T, r in zip(PAPER_T, PAPER_FCN) if level.memorized(r)] == [64, 125, 250, 375]
    assert all(level.memorized(r) for r in PAPER_ATTENTION)  # every attention fit, up to the grid's top
    # the fixed 1e-8 it replaces called T = 640 memorized and T = 511, 768 not (1.7e-8, 9.2e-9, 1.2e-8)
    assert [T for T, r in zip(PAPER_T, PAPER_ATTENTION) if r <= 1e-8] == [64, 125, 250, 375, 640]


@pytest.mark.parametrize("residuals, memorized, lower, upper", [
    ([1e-9, 3e-9, 2e-10], [True, True, True], 3e-9, CEILING),       # all at the floor: every fit memorizes
    ([0.3, 0.5], [False, False], FLOOR, CEILING),                    # all stalled: none does
    ([1e-16, 4e-13, 0.2], [True, True, False], FLOOR, CEILING),      # below the floor counts as the floor
    ([1e-10, 1e-9, 1e-3], [True, True, False], 1e-9, 1e-3),          # 6 decades against 2, 1 and 1
    ([1e-10, 1e-6, 1e-3], [True, False, False], 1e-10, 1e-6),        # 4 decades against 2, 3 and 1
])
def test_the_level_sits_in_the_widest_gap(residuals, memorized, lower, upper):
    level = gap_threshold(residuals)
    assert [level.memorized(r) for r in residuals] == memorized
    assert (level.lower, level.upper) == (lower, upper)
    assert level.level == pytest.approx(math.sqrt(lower * upper), rel=1e-12)


def test_residuals_that_do_not_separate_say_so():
    # eleven residuals a decade apart from the floor to the ceiling: every gap is one decade wide
    level = gap_threshold([10.0 ** -k for k in range(2, 13)])
    assert level.decades == pytest.approx(1.0) and not level.separates
    assert level.lower == FLOOR  # equally wide gaps: the lowest is taken


@pytest.mark.parametrize("bad", [[], [float("nan")], [-1e-3], [float("inf")]])
def test_bad_residuals(bad):
    with pytest.raises(ConfigError, match="at least one residual|finite numbers >= 0"):
        gap_threshold(bad)
