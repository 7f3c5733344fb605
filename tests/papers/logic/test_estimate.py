"""`construct logic` against its estimate: the peak memory within 2x and the time within 4x of
what a build measures (tests/helpers.py:measure_build).

Measured on a 2-core machine under load: solution 3, N = 10, M = 5 (every one of the 10^5
sequences): 80 MiB / 0.74 s against 95 MiB / 0.41 s estimated; solution 1, N = 30, M = 6, 20000
sequences: 217 MiB / 3.9 s against 300 MiB / 4.2 s."""

import os

import pytest
from helpers import assert_estimate_holds, measure_build
from tolerances import FLOAT64

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"), reason="measures memory through /proc")]


@pytest.mark.parametrize("settings", [{"N": "10", "M": "5"},
                                      {"solution": "1", "N": "30", "M": "6", "samples": "20000"}])
def test_estimate_within_factors_of_the_measured_build(settings):
    assert_estimate_holds(measure_build("logic", settings))


def test_the_sequences_set_the_size():
    """X is S x (N + M) x M float64: S = N^M up to 10^5 sequences, then ``samples``."""
    from attnlab.papers.logic.construction import LogicParams, estimate_logic

    a, b = (estimate_logic(LogicParams(N=20, M=8, samples=s)) for s in (10 ** 6, 10 ** 7))
    assert (b.peak_bytes - a.peak_bytes) == pytest.approx(8 * 9 * 10 ** 6 * (28 * 8 + 6 * 8), rel=FLOAT64)
    assert estimate_logic(LogicParams(N=4, M=5)).what == "X (1024 x 9 x 5 float64)"
