"""transformer-math.jl-random-projection and transformer-math.svd-optimal (§2.1.3)."""

import pytest

from attnlab.registry import select_claims
from tolerances import FLOAT64

IDS = ["transformer-math.jl-random-projection", "transformer-math.svd-optimal",
       "transformer-math.lowrank-relative-error"]


@pytest.fixture(scope="module")
def results():
    return {c.id: c.run(seed=0) for c in select_claims(IDS)}


def test_jl_random_projection(results):
    """The slope -1/2 cannot fail (E||R^T R w - w||^2 is exactly proportional to 1/k'), so it is no longer
    judged (issue 33); what is judged is attnlab's own reading of what survives of eq. (16): for values with a
    non-zero mean the relative error stays below the JL eps at every k' (role own, holds)."""
    jl = results["transformer-math.jl-random-projection"]
    assert jl.verdict == "holds", jl.error
    m = jl.check
    assert (m.role, m.group, m.anchor, jl.claim.anchor) == ("own", "own", "", "")
    assert (m.relation, m.threshold) == ("<=", 1.0) and m.measured == m.values["max_rms_over_jl"] <= 1.0
    v = m.values
    assert v["k_values"] == [8, 16, 32, 64, 128]
    assert abs(v["slope"] + 0.5) <= 0.1  # reported, not judged
    assert v["rms_errors"] == sorted(v["rms_errors"], reverse=True)


def test_svd_optimal(results):
    svd = results["transformer-math.svd-optimal"]
    assert svd.verdict == "sanity", svd.error  # Eckart-Young: a theorem, not a statement of the text
    assert 1 - FLOAT64 <= svd.check.measured < 1e3
    assert svd.check.values["min_error_ratio"] == svd.check.measured
    assert svd.check.values["k_values"] == [2, 8, 24]


def test_relative_error_for_any_w_differs(results):
    """Eq. (16) for any w: with zero-mean values the relative error grows like sqrt(n / k')."""
    r = results["transformer-math.lowrank-relative-error"]
    m = r.check
    assert m.verdict == "differs" and m.role == "text" and (m.relation, m.threshold) == (">=", 0.5)
    assert (m.anchor, m.erratum) == ("transformer-math.eq16", "transformer-math.eq16-any-w") and m.falsifier
    by_n = m.values["by_n"]
    assert m.measured == by_n["2048"]["share_below_1"] == 0.0
    assert 1.2 < by_n["256"]["mean_relative_error"] < by_n["2048"]["mean_relative_error"]
    assert by_n["2048"]["mean_relative_error"] > 5  # sqrt(2048 / 61) ~ 5.8 times ||p_i|| ||w|| / ||P w|| scale
