"""rank-collapse.softmax-shift-invariance (§2.1): softmax(A + x 1^T) = softmax(A)."""

from attnlab.registry import select_claims


def test_shift_invariance():
    (c,) = select_claims(["rank-collapse.softmax-shift-invariance"])
    for seed in (0, 1):
        r = c.run(seed)
        m = r.check
        assert r.verdict == "reproduced" and m.threshold == 1e-13 and m.anchor == "rank-collapse.softmax-shift"
        assert m.values["max_error"] == m.measured and m.values["n_values"] == [3, 7, 31]
