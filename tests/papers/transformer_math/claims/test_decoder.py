"""transformer-math.decoder-causal (§1.2.5, eq. 10): d out_i / d x_j = 0 exactly for j > i in attnlab's decoder."""

import pytest

from attnlab.registry import select_claims


@pytest.mark.parametrize("seed", [0, 3])
def test_decoder_causal(seed):
    (c,) = select_claims(["transformer-math.decoder-causal"])
    r = c.run(seed=seed)
    # a test of attnlab's decoder: eq. (10)'s mask makes every decoder causal by definition, so the row
    # cannot differ from the text; sanity, not reproduced, and anchored to no ledger entry (issue 33)
    assert r.verdict == "sanity", r.error
    m = r.check
    assert m.role == "sanity" and not m.anchor and not r.claim.anchor and m.group == "sanity"
    assert m.measured == 0.0 and m.threshold == 0.0 and m.relation == "=="
    assert m.values["max_future_norm"] == 0.0
    assert m.values["min_past_norm"] > m.values["min_past_bound"] == 1e-6  # the Jacobian is not identically zero
    assert m.values["norm_positions"] == ["post", "pre"]
    assert m.where == "§1.2.5, eq. (10)"
