"""rank-collapse.input-residual (§2.4 problem 3) on MiniLM's embedding output."""

from attnlab.registry import select_claims
from tolerances import LP_SOLVE


def test_input_residual_is_far_above_one():
    """§2.4 problem 3 is a question ("why is the input residual smaller than 1?"), not a statement:
    the claim is attnlab's answer, its own statement (the residual is not below 1: holds), not a
    differs against the text."""
    (c,) = select_claims(["rank-collapse.input-residual"])
    r = c.run(seed=0)
    assert r.error is None and (r.check.role, r.verdict) == ("own", "holds") and not c.anchor
    m, v = r.check, r.check.values
    assert m.relation == ">=" and m.threshold == 1.0 and m.measured > 10  # tens, not below 1
    assert v["absolute"]["two"] == v["absolute"]["mean"]  # the notes' 2-norm argmin is the row mean
    # the exact argmin is never worse than the mean (LP tolerance 1e-9 relative) and never above ||X||
    for comp, mean, full in zip(v["absolute"]["composite"], v["absolute"]["mean"], v["full_norm"]):
        assert comp <= mean * (1 + LP_SOLVE) and comp <= full * (1 + LP_SOLVE)
    assert all(0.5 < x <= 1 + LP_SOLVE for x in v["relative"]["composite"])
    assert min(v["beta_heads_layer1"]) > 1e3 * v["beta_needed"] and v["d_qk"] == 32
