"""transformer-math.jl-random-projection and transformer-math.svd-optimal (§2.1.3)."""

import pytest

from attnlab.registry import select_claims

IDS = ["transformer-math.jl-random-projection", "transformer-math.svd-optimal"]


@pytest.fixture(scope="module")
def results():
    return {c.id: c.run(seed=0) for c in select_claims(IDS)}


def test_jl_random_projection(results):
    jl = results["transformer-math.jl-random-projection"]
    assert jl.status == "pass", jl.error
    m = jl.measurement
    assert abs(m.measured + 0.5) <= 0.1 and m.tolerance == 0.1 and m.target == -0.5
    v = m.values
    assert v["k_values"] == [8, 16, 32, 64, 128] and v["slope"] == m.measured
    assert v["max_rms_over_jl"] <= 1.0  # every RMS error below its JL bound sqrt(8 ln(n+1) / k')
    assert v["rms_errors"] == sorted(v["rms_errors"], reverse=True)


def test_svd_optimal(results):
    svd = results["transformer-math.svd-optimal"]
    assert svd.status == "pass", svd.error
    assert 1 - 1e-12 <= svd.measurement.measured < 1e3
    assert svd.measurement.values["min_error_ratio"] == svd.measurement.measured
    assert svd.measurement.values["k_values"] == [2, 8, 24]
