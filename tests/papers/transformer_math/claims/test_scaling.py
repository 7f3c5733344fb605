"""transformer-math.dot-product-variance (§1.2.3): passes for several seeds, with its tolerance stated."""

from __future__ import annotations

import math

import pytest

from attnlab.registry import select_claims
from tolerances import FLOAT64


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_dot_product_variance_claim(seed):
    (c,) = select_claims(["transformer-math.dot-product-variance"])
    r = c.run(seed)
    assert r.error is None and r.verdict == "reproduced", r.check.detail if r.check else r.error
    m = r.check
    assert m.anchor == "transformer-math.dot-products-grow" and m.falsifier
    # tolerance = 4 relative standard errors at d = 16, N = 2^14
    assert m.threshold == pytest.approx(4 * math.sqrt((2 + 6 / 16) / 2 ** 14), rel=FLOAT64)
    assert 0 <= m.measured <= m.threshold
    v = m.values
    assert v["dims"] == [16, 64, 256] and v["n_samples"] == 2 ** 14
    assert m.measured == max(abs(x - 1) for x in v["var_scaled"])
    assert abs(v["slope"] - 1) <= v["slope_tolerance"] == 0.05 and v["slope_ok"]
