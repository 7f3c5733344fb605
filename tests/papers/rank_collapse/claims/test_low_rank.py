"""rank-collapse.low-rank-log-n and -additive (§2.3, Theorem 2.3): the relative form fails for
zero-mean values (the error grows like sqrt(n / k')); the additive JL form holds."""

from attnlab.registry import select_claims


def test_relative_form_differs_for_zero_mean_values():
    (c,) = select_claims(["rank-collapse.low-rank-log-n"])
    r = c.run(seed=0)
    assert r.error is None and r.verdict == "differs"
    m, v = r.check, r.check.values
    assert (m.anchor, m.erratum) == ("rank-collapse.theorem-2-3", "rank-collapse.relative-error")
    assert m.relation == ">=" and m.threshold == 0.9
    assert v["n_values"] == [256, 1024, 4096] and v["k_values"] == [45, 56, 67]  # ceil(8 ln n)
    assert min(v["probability_mean_one"]) >= 0.9  # values of mean one: it holds (the old check's case)
    assert max(v["probability_zero_mean"]) <= 0.2 and m.measured == min(v["probability_zero_mean"])
    z = v["median_relative_error_zero_mean"]
    assert z[0] > 1 and z[2] > 3 * z[0]  # grows with n, like sqrt(n / k'): 2.4 -> 7.8
    assert all(0.5 < e / s < 2 for e, s in zip(z, v["sqrt_n_over_k"]))


def test_additive_form_holds_for_both_value_vectors_as_attnlabs_own_statement():
    """The notes state only the relative form; the additive form is attnlab's corrected
    theorem, its own statement (holds), not a reproduction of the text (issue 33)."""
    (c,) = select_claims(["rank-collapse.low-rank-additive"])
    r = c.run(seed=0)
    assert r.error is None and (r.check.role, r.verdict) == ("own", "holds") and not c.anchor
    v = r.check.values
    assert r.check.measured == 1.0 and v["largest_additive"] < 0.5
    assert all(0.05 < e < 0.25 for e in v["median_additive_zero_mean"] + v["median_additive_mean_one"])
