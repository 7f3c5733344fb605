"""transformer-math.pe-shift-linear (§1.2.1, eq. 1): PE(t+s) = M_s PE(t)."""

from attnlab.registry import select_claims


def test_pe_shift_linear():
    (c,) = select_claims(["transformer-math.pe-shift-linear"])
    r = c.run(seed=0)
    assert r.verdict == "reproduced", r.error
    m = r.check
    assert m.threshold == 1e-9 and m.relation == "<="
    assert m.anchor == "transformer-math.pe-shift-linear" and m.falsifier
    assert 0 < m.measured < 1e-11  # rounding of w_k t in float64, far below the tolerance
    assert m.values["dims"] == [16, 512] and m.values["max_error"] == m.measured
    assert m.values["shifts"][:4] == [1, 7, 64, 511] and len(m.values["shifts"]) == 7
    assert m.values["worst_at"]["d"] in (16, 512) and m.values["worst_at"]["shift"] in m.values["shifts"]


def test_other_seed_still_passes():
    (c,) = select_claims(["transformer-math.pe-shift-linear"])
    assert c.run(seed=3).verdict == "reproduced"
