"""Head ablations on a small Llama-style decoder (RoPE, RMSNorm, SwiGLU, grouped-query attention), float64."""

from __future__ import annotations

import pytest
import torch

from attnlab.analysis.heads.ablation import KINDS, ablation_estimates, baseline, exact_ablations, segment_loss
from attnlab.errors import ConfigError
from attnlab.nn import BlockConfig, Encoder, RoPE
from tolerances import FLOAT64

HEADS = [(l, h) for l in range(3) for h in range(4)]


@pytest.fixture(scope="module")
def setup():
    torch.manual_seed(0)
    model = Encoder(50, 32, 4, 64, 3, positional="none", causal=True, embedding_scale=False,
                    block=BlockConfig(norm="rms", norm_position="pre", bias=False, ffn="gated", activation="silu",
                                      n_kv_heads=2), qkv_transform=RoPE(1e4), lm_head="tied").double().eval()
    ids = torch.randint(0, 50, (4, 12), generator=torch.Generator().manual_seed(1))
    return model, ids, baseline(model, ids)


def test_baseline_loss_is_the_models_own(setup):
    model, ids, b = setup
    with torch.no_grad():
        logits = model(ids).logits
    assert (b.loss - segment_loss(logits, ids)).abs().max().item() <= FLOAT64
    assert b.z.shape == (3, 4, 4, 12, 8) and b.mu.shape == (3, 4, 8)
    ce = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, 50), ids[:, 1:].reshape(-1), reduction="none")
    assert (b.loss - ce.reshape(4, 11).mean(-1)).abs().max().item() <= FLOAT64


def test_replacing_a_head_by_itself_changes_nothing(setup):
    model, _, b = setup
    d = exact_ablations(model, b, HEADS, fraction=0.0)
    assert max(v.abs().max().item() for k in KINDS for v in d[k].values()) <= FLOAT64


def test_zero_ablation_equals_removing_the_head_by_hand(setup):
    """Zeroing z_h equals zeroing W_O,h: the head then writes nothing."""
    model, ids, b = setup
    d = exact_ablations(model, b, [(1, 2)], ["zero"])["zero"][(1, 2)]
    W_O = model.blocks[1].attn.W_O
    saved = W_O.detach().clone()
    with torch.no_grad():
        W_O[2] = 0
        loss = segment_loss(model(ids).logits, ids)
        W_O.copy_(saved)
    assert (d - (loss - b.loss)).abs().max().item() <= FLOAT64


def test_first_order_estimates_are_exact_in_the_small_change_limit(setup):
    """At fraction 1e-5 of each ablation, attribution patching and re-running agree to ~1e-5 relative
    (the second-order term); at the full ablation they need not."""
    model, _, b = setup
    exact = exact_ablations(model, b, HEADS, fraction=1e-5)
    est = ablation_estimates(model, b, fraction=1e-5)
    for k in KINDS:
        E = torch.stack([exact[k][x] for x in HEADS])
        A = torch.stack([est[k][l, h] for l, h in HEADS])
        assert (E - A).abs().max().item() <= 1e-4 * E.abs().max().item()
        assert E.abs().max().item() > 1e-7  # the heads matter at all


def test_resample_reads_the_next_segment(setup):
    model, _, b = setup
    from attnlab.analysis.heads.ablation import _replacement

    r = _replacement(b, 0, "resample")
    assert torch.equal(r[0], b.z[0][1]) and torch.equal(r[-1], b.z[0][0])


def test_bad_input(setup):
    model, ids, b = setup
    with pytest.raises(ConfigError, match="at least 2 segments"):
        baseline(model, ids[:1])
    with pytest.raises(ConfigError, match="unknown ablation 'shuffle'"):
        exact_ablations(model, b, [(0, 0)], ["shuffle"])
    enc = Encoder(50, 32, 4, 64, 1)
    with pytest.raises(ConfigError, match="needs an output head"):
        baseline(enc, ids)


def test_a_loss_on_chosen_predictions(setup):
    """scored keeps the predictions of chosen positions (e.g. a repeated sequence's second copy); exact ablations
    and first-order estimates use the same loss."""
    model, ids, _ = setup
    scored = torch.zeros(11, dtype=torch.bool)
    scored[6:10] = True
    b = baseline(model, ids, scored)
    with torch.no_grad():
        logits = model(ids).logits
    ce = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, 50), ids[:, 1:].reshape(-1), reduction="none")
    assert (b.loss - ce.reshape(4, 11)[:, 6:10].mean(-1)).abs().max().item() <= FLOAT64
    exact = exact_ablations(model, b, [(2, 1)], ["zero"], fraction=1e-5)["zero"][(2, 1)]
    est = ablation_estimates(model, b, ["zero"], fraction=1e-5)["zero"][2, 1]
    assert (exact - est).abs().max().item() <= 1e-4 * exact.abs().max().item()
