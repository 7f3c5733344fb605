"""A head fitted on its maps: mean distances, the Sigma labels against the baselines of its mask, the shares."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from attnlab.analysis.heads.maps import uniform_attention
from attnlab.errors import ConfigError
from attnlab.papers.transformer_math.head_fits import fit_heads, fractions
from attnlab.papers.transformer_math.head_structure import LABELS, label_from_distances, sigma3, special_share
from attnlab.papers.transformer_math.sigma_fits import baselines, fit_all
from tolerances import FLOAT64

SETTINGS = SimpleNamespace(crop=16, w_max=3, search_draws=8, margin=0.05)  # a FitSettings


def _distances(H: torch.Tensor) -> dict[str, float]:
    fits = fit_all(H, 3)
    d = {k: f.distance for k, f in fits.by_family().items()}
    d["sigma"] = fits.sigma.distance
    return d


def test_causal_heads_get_causal_baselines():
    causal, bidirectional = baselines(16, 3, draws=2, seed=0, causal=True), baselines(16, 3, draws=2, seed=0)
    n = 16
    noisy = uniform_attention(n, causal=True)  # a decoder head at chance: as far from Sigma as causal uniform is
    d = _distances(noisy)
    # at chance for a causal head; against the bidirectional baseline it would pass for structure
    assert label_from_distances(d, n, causal.uniform["sigma"], 0.05) == "unstructured"
    assert label_from_distances(d, n, bidirectional.uniform["sigma"], 0.05) != "unstructured"
    with pytest.raises(ConfigError, match="a causal head needs causal baselines"):
        fit_heads([noisy[None]], [torch.ones(n, dtype=torch.float64)], causal=True, cfg=SETTINGS,
                  seed=0, model="m", kind="decoder self", base=bidirectional)


def test_heads_on_special_tokens_are_not_rare_token_heads():
    """Every row on [CLS] (column 0): a Sigma_3 block on a special token is its own label."""
    n, b = 16, baselines(16, 3, draws=2, seed=0)
    H = 0.95 * torch.nn.functional.one_hot(torch.zeros(n, dtype=torch.long), n).double() + 0.05 / n
    d = _distances(H)
    share = special_share(fit_all(H, 3).sigma3, [0, n - 1])
    assert share == 1.0 and special_share(fit_all(H, 3).sigma3, []) == 0.0
    assert label_from_distances(d, n, b.uniform["sigma"], 0.05, share) == "special-token"
    assert label_from_distances(d, n, b.uniform["sigma"], 0.05) == "rare-token"  # without the positions


def test_labels_of_constructed_heads():
    n, b = 16, baselines(16, 3, draws=2, seed=0)
    noise = torch.full((n, n), 0.01, dtype=torch.float64)

    def label(P: torch.Tensor) -> str:
        H = (P + noise) / (P + noise).sum(-1, keepdim=True)
        return label_from_distances(_distances(H), n, b.uniform["sigma"], 0.05)

    assert label(torch.eye(n, dtype=torch.float64)) == "positional"
    assert label(torch.eye(n, dtype=torch.float64).roll(1, -1)) == "positional"  # a shift
    assert label(sigma3(n, [3, 11], [8, 8])) == "rare-token"
    # Sigma_2 as the text defines it drops diagonal cells too (issue 34), so a rare-token block whose rows all lie
    # within w = 3 of its token is also a Sigma_2(3) member: windows of 6 around tokens 3 and 11 now fit Sigma_2 as
    # well as Sigma_3, and a tie is labelled syntactic (it was rare-token while Sigma_2 kept the diagonal)
    local = sigma3(n, [3, 11], [6, 6])
    assert fit_all(local, 3).sigma2.distance == pytest.approx(0.0, abs=FLOAT64) and label(local) == "syntactic"
    band = sum(torch.eye(n, dtype=torch.float64).roll(k, -1) for k in (-1, 0, 1)) / 3
    assert label(band) == "syntactic"
    assert label(torch.ones(n, n, dtype=torch.float64)) == "unstructured"


def test_fit_heads_averages_over_the_maps_and_fractions_sum_to_one():
    """Two heads on S = 2 maps: head 0 the identity (positional, full rank), head 1 uniform (unstructured)."""
    n, b = 16, baselines(16, 3, draws=2, seed=0)
    eye, U = torch.eye(n, dtype=torch.float64), uniform_attention(n)
    maps = [torch.stack([eye, U]), torch.stack([eye, U])]  # each (H, n, n)
    freqs = [torch.arange(1, n + 1, dtype=torch.float64)] * 2
    rows = fit_heads(maps, freqs, causal=False, cfg=SETTINGS, seed=0, model="m", kind="k", base=b)
    assert [(r.head, r.maps, r.mask) for r in rows] == [(0, 2, "bidirectional"), (1, 2, "bidirectional")]
    assert rows[0].d_sigma == 0.0 and rows[0].label == "positional" and rows[0].full_rank_share == 1.0
    assert rows[1].normalized == pytest.approx(b.uniform["sigma"], abs=FLOAT64) and rows[1].label == "unstructured"
    assert rows[1].d_sigma1 == pytest.approx(2 * (n - 1), abs=1e-12)  # |U - I| = 2 (n - 1) / n per row
    assert rows[0].voita_positional is False and rows[0].exact_minus_search_max <= 1e-12
    fr = fractions(rows)
    assert fr.positional == fr.unstructured == 0.5 and sum(fr.by_label().values()) == 1.0
    assert list(fr.by_label()) == list(LABELS)
    assert list(fr.to_dict())[-2:] == ["voita positional", "voita rare-token"]
