"""rank-collapse.low-rank-log-n (§2.3, Theorem 2.3): rank c log n keeps P w to eps."""

from attnlab.registry import select_claims


def test_low_rank_log_n():
    (c,) = select_claims(["rank-collapse.low-rank-log-n"])
    r = c.run(seed=0)
    assert r.status == "pass", r.error
    m = r.measurement
    assert 0.9 <= m.measured <= 1.0 and m.tolerance == 0.9
    v = m.values
    assert v["n_values"] == [256, 1024, 4096] and v["k_values"] == [45, 56, 67]  # ceil(8 ln n)
    assert m.measured == min(v["probabilities"])
