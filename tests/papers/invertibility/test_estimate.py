"""`construct invertibility` against its estimate: the peak memory within 2x and the time within
4x of what a build measures (tests/helpers.py:measure_build), with and without the certificate.

Measured on a 2-core machine under load: N = 2, L = 8, d = 8 (a 256 x 256 ball determinant at
192 bits): 55 MiB / 0.94 s against 56 MiB / 1.1 s estimated; N = 2, L = 10, d = 10 without the
certificate (A 1024 x 1030 and its SVDs): 35 MiB / 0.99 s against 41 MiB / 1.2 s."""

import os

import pytest
from helpers import assert_estimate_holds, measure_build

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"), reason="measures memory through /proc")]


@pytest.mark.parametrize("settings", [{"N": "2", "L": "8", "d": "8"},
                                      {"N": "2", "L": "10", "d": "10", "certify": "false"}])
def test_estimate_within_factors_of_the_measured_build(settings):
    assert_estimate_holds(measure_build("invertibility", settings))


def test_the_certificate_plan_is_the_one_certify_case_uses():
    """Rump's test above 256 rows at start_bits, a determinant below; 960-bit balls at 4096 rows."""
    from attnlab.papers.invertibility.construction import InvertibilityParams, ball_bytes, certificate_plan, estimate

    assert certificate_plan(InvertibilityParams(N=2, L=8, d=8)) == ("det", 192, 256, True)
    assert certificate_plan(InvertibilityParams(N=2, L=12, d=12)) == ("inverse", 960, 4096, True)
    assert ball_bytes(128) == 48 and ball_bytes(960) == 48 + 8 * 15 + 16
    big = estimate(InvertibilityParams(N=2, L=12, d=12))
    assert big.peak_bytes > 9 * 4096 ** 2 * ball_bytes(960)  # the certificate's r x r ball matrices
