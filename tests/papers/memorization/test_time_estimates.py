"""The memorization experiments' estimates count time, and their work grows as their formulas say.

Quick preset, measured in one process right after attnlab.estimates.rates() (2 shared cores):

    experiment                          measured s   estimated s
    memorization.fcn-vs-attention             48.7          55.5
    memorization.capacity-vs-head-size        92.6         155.5   (step budget: an upper bound)
    memorization.training-options            901.4        8394     (step budget: an upper bound;
                                                                    every option stops at 100%)

The other estimates (capacity-vs-context, -heads, general-position, regression, saturation,
training-options, authors-capacity) are at the step budget and, for a search, at T_limit:
upper bounds, several times the quick runs, which stop once their models memorize.
No timing is asserted here: only that time is counted and how the counted work scales.
"""

import pytest

from attnlab.estimates import KINDS
from attnlab.registry import get_experiment

CASES = [  # experiment, field, its doubled value, kind of work that must double
    ("memorization.capacity-vs-context", "steps", 1200, "calls"),
    ("memorization.capacity-vs-head-size", "steps", 2400, "gemm"),
    ("memorization.capacity-vs-heads", "steps", 1200, "gemm"),
    ("memorization.general-position", "steps", 1200, "gemm"),
    ("memorization.regression", "steps", 1600, "gemm"),
    ("memorization.saturation", "max_steps", 6000, "gemm"),
    ("memorization.fcn-vs-attention", "steps", 6, "calls"),
    ("memorization.training-options", "steps", 3000, "gemm"),
    ("memorization.authors-capacity", "max_steps", 4000, "gemm"),
]


@pytest.mark.parametrize("experiment, field, doubled, kind", CASES)
def test_counts_time(experiment, field, doubled, kind):
    est = get_experiment(experiment).config_cls().estimate()
    assert est.seconds > 0
    assert getattr(est, kind) > 0


@pytest.mark.parametrize("experiment, field, doubled, kind", CASES)
def test_work_doubles_with_the_budget(experiment, field, doubled, kind):
    cls = get_experiment(experiment).config_cls
    one, two = cls().estimate(), cls(**{field: doubled}).estimate()
    assert getattr(cls(), field) * 2 == doubled
    # the budget's work doubles; evaluations and per-run terms move it by under 5%
    assert getattr(two, kind) / getattr(one, kind) == pytest.approx(2.0, rel=0.05)
    assert sum(getattr(two, k) for k in KINDS) > sum(getattr(one, k) for k in KINDS)
