"""The literature's taxonomies read on a layer's heads, and their chance levels against the closed forms."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from attnlab.analysis.heads.maps import uniform_attention
from attnlab.papers.transformer_math.head_taxonomy import chance_closed_form, head_taxonomies
from attnlab.papers.transformer_math.sigma_fits import fit_all
from tolerances import FLOAT64


@pytest.mark.parametrize("n", [5, 16])
@pytest.mark.parametrize("causal", [True, False])
def test_chance_levels_equal_their_closed_forms(n, causal):
    """Scores of uniform attention under the mask (what head_taxonomies reports) against the closed forms:
    causal n = 16: previous (H_16 - 1)/16 = 0.14880, entropy ln(16!)/16 = 1.91699, |U - I|/2n = 1 - H_16/16."""
    H = sum(1 / k for k in range(1, n + 1))
    closed = chance_closed_form(n, causal=causal)
    if causal:
        assert closed.previous == pytest.approx((H - 1) / n, rel=1e-15)
        assert closed.entropy == pytest.approx(math.log(math.factorial(n)) / n, rel=1e-13)
    if n == 16 and causal:
        assert closed.previous == pytest.approx(0.148796, abs=1e-6)
        assert closed.entropy == pytest.approx(1.916991, abs=1e-6)
        assert closed.d_sigma1 == pytest.approx(0.788704, abs=1e-6)
    U = uniform_attention(n, causal=causal)
    assert fit_all(U, 3).sigma1.normalized == pytest.approx(closed.d_sigma1, abs=1e-14)
    # head_taxonomies reads its chance levels on U with the model's keys and frequencies
    S = 2
    g = torch.Generator().manual_seed(0)
    A = torch.softmax(torch.randn(S, 3, n, n, generator=g, dtype=torch.float64)
                      + (torch.triu(torch.full((n, n), -torch.inf, dtype=torch.float64), 1) if causal else 0), -1)
    first = torch.zeros(S, n, dtype=torch.bool)
    first[:, 0] = True
    freqs = torch.arange(1, n + 1, dtype=torch.float64).flip(0).expand(S, n)  # the last token is the rarest
    per_head, chance = head_taxonomies(A, causal=causal, keys={"first token": first}, vertical=first,
                                       frequencies=freqs)
    assert len(per_head) == 3 and {"clark", "kovaleva", "clark_previous"} <= {f.name for f in dataclasses.fields(per_head[0])}
    for key in ("previous", "next", "entropy", "voita_previous"):
        assert getattr(chance, key) == pytest.approx(getattr(closed, key), abs=FLOAT64), key
    assert chance.voita_next is None if causal else chance.voita_next == pytest.approx(1 / n, abs=1e-15)
    # the last position: visible to the last row only (causal), to every row at 1/n (bidirectional)
    assert chance.voita_rare_argmax == pytest.approx(1 / n, abs=1e-15)
    # at n = 16 the uniform map gets no label; at n = 5 it already passes for vertical+diagonal (3 of 5 keys)
    assert chance.labels == {"clark": "–", "kovaleva": "heterogeneous" if n == 16 else "vertical+diagonal"}
