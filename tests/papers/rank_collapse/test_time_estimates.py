"""rank-collapse.bound's estimate counts time, and its work grows as its formula says.

Quick preset, measured in one process right after attnlab.estimates.rates() (2 shared cores):

    experiment             measured s   estimated s
    rank-collapse.bound          14.0           7.4

No timing is asserted here: only that time is counted and how the counted work scales.
"""

import pytest

from attnlab.registry import get_experiment


def test_bound_counts_time():
    est = get_experiment("rank-collapse.bound").config_cls().estimate()
    assert est.seconds > 0 and est.lapack > 0 and est.python > 0


def test_bound_sans_double_the_lp_work():
    cls = get_experiment("rank-collapse.bound").config_cls
    one, two = cls().estimate(), cls(draws=6).estimate()
    assert two.lapack / one.lapack == pytest.approx(2.0, rel=0.05)  # one composite residual per SAN
    assert two.python == one.python  # the networks are loaded once
