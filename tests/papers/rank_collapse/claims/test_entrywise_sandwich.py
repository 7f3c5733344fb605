"""rank-collapse.lemma-a3-*, eq9-sign-error and eq9-abs-form (§2.4, eqs. (6)-(10))."""

import math

import torch

from attnlab.papers.rank_collapse.claims.entrywise_sandwich import E_LIMIT, sandwich_terms
from attnlab.registry import select_claims
from tolerances import FLOAT64


def _run(cid, seed=0):
    (c,) = select_claims([cid])
    r = c.run(seed=seed)
    assert r.error is None, r.error
    return r


def test_lemma_as_the_notes_invoke_it_differs_beyond_the_threshold():
    r = _run("rank-collapse.lemma-a3-sandwich")
    m, v = r.check, r.check.values
    assert r.verdict == "differs" and m.threshold == 1e-12 and m.measured > 0.1  # e^D > 1 + 2D there
    # the notes invoke the lemma for eq. (9) ("follows from Lemma A.3"); the error is Dong et al.'s, copied
    assert (m.anchor, m.erratum) == ("rank-collapse.lemma-a3", "rank-collapse.lemma-a3-threshold") and m.falsifier
    assert v["trials_within"] + v["trials_beyond"] == 400 and v["trials_within"] > 100
    assert v["lower_beyond"] <= FLOAT64  # the lower half never needs the threshold
    assert v["upper_failures_beyond"] > 0 and v["smallest_max_D_with_upper_failure"] > E_LIMIT


def test_lemma_within_its_threshold_is_attnlabs_corrected_lemma():
    """The threshold D_ii <= 1.2564 is not in the notes: the corrected lemma is attnlab's own
    statement (holds), not a reproduction."""
    r = _run("rank-collapse.lemma-a3-within-threshold")
    v = r.check.values
    assert (r.check.role, r.verdict) == ("own", "holds") and not r.check.anchor and r.check.measured <= FLOAT64
    # the upper bound is loose by about a factor 2 at small D: (e^D - 1)/2D -> 1/2
    top = (math.exp(E_LIMIT) - 1) / (2 * E_LIMIT)
    assert all(0.3 < t <= top + FLOAT64 for t in v["upper_tightness_by_scale"].values())


def test_eq9_as_written_differs_and_its_abs_form_is_a_sanity_row():
    r = _run("rank-collapse.eq9-sign-error", seed=1)
    assert r.verdict == "differs" and r.check.measured > r.check.values["trials"] // 2
    assert (r.check.anchor, r.check.erratum) == ("rank-collapse.eq9", "rank-collapse.eq9-sign")
    assert r.check.values["largest_violation"] > 1e-3
    a = _run("rank-collapse.eq9-abs-form", seed=1)
    assert a.verdict == "sanity" and a.check.measured <= FLOAT64


def test_terms_by_hand_for_a_zero_residual():
    """X = 1 x^T: R = 0, E = 0, D = 0 and P = P~ = uniform rows."""
    X = torch.ones(3, 1, dtype=torch.float64) @ torch.tensor([[1.0, -2.0]], dtype=torch.float64)
    t = sandwich_terms(X, torch.eye(2, dtype=torch.float64), 2)
    assert (t.D == 0).all() and (t.R == 0).all()
    assert torch.allclose(t.P, torch.full((3, 3), 1 / 3, dtype=torch.float64), atol=1e-15)
    assert torch.allclose(t.P_tilde, t.P, atol=1e-15)
