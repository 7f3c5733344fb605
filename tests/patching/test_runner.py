"""The batched runner on small attnlab stacks passed as Encoders (float64, distinct sizes): variants with
several sites across blocks, chunks whose rows start in different blocks, every kind of hook point, and
the metric on every position."""

from __future__ import annotations

import pytest
import torch

from attnlab.errors import ConfigError
from attnlab.patching import LogitDiff, Site, patch, patch_resid_pre
from attnlab.patching.sites import axes_of
from small_stacks import N, STACKS, V
from tolerances import FLOAT64_LONG

VARIANTS = [
    [],
    [Site("hook_embed", 2)],
    [Site("blocks.0.hook_resid_pre")],
    [Site("blocks.0.attn.hook_k", 4, 1), Site("blocks.2.hook_mlp_out", 6)],
    [Site("blocks.1.attn.hook_pattern", 5, 4), Site("blocks.1.attn.hook_v", None, 0)],
    [Site("blocks.1.hook_resid_mid", -1), Site("blocks.2.mlp.hook_post", 3)],
    [Site("blocks.2.attn.hook_q", 6, 5), Site("blocks.2.attn.hook_z", 2, 3), Site("blocks.2.hook_attn_out", 0)],
    [Site("ln_final.hook_normalized", 6)],
    [Site("blocks.2.hook_resid_post")],
]

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module", params=["llama", "gpt2"])
def stack(request):
    m = STACKS[request.param]()
    g = torch.Generator().manual_seed(3)
    clean = torch.randint(0, V, (1, N), generator=g)
    corrupted = clean.clone()
    corrupted[0, 2] = (clean[0, 2] + 5) % V
    return m, clean, corrupted


def _reference(m, clean, corrupted, metric, variant, position=-1) -> float:
    """One whole pass with every site of ``variant`` overwritten by the clean value, one hook per site."""
    with torch.no_grad():
        _, cache = m.run_with_cache(clean)
        hooks = []
        for s in variant:
            def write(x, name, s=s):
                pos_axis, head_axis = axes_of(s.name)
                index = [slice(None)] * x.ndim
                if s.position is not None:
                    index[pos_axis] = s.position
                if s.head is not None:
                    index[head_axis] = s.head
                x = x.clone()
                x[tuple(index)] = cache[s.name][tuple(index)]
                return x
            hooks.append((s.name, write))
        logits = m.run_with_hooks(corrupted, hooks)
    return metric(logits if position is None else logits[:, position]).item()


@pytest.mark.parametrize("chunk_size", [1, 3, 32])
def test_variants_equal_single_passes_in_any_chunking(stack, chunk_size):
    m, clean, corrupted = stack
    metric = LogitDiff(4, 11)
    out = patch(m, clean, corrupted, VARIANTS, metric, chunk_size=chunk_size)
    ref = torch.tensor([_reference(m, clean, corrupted, metric, v) for v in VARIANTS], dtype=torch.float64)
    assert not out.values.requires_grad and out.values.shape == (len(VARIANTS),)
    assert (out.values - ref).abs().max().item() <= FLOAT64_LONG
    assert abs(out.values[0].item() - out.corrupted) <= FLOAT64_LONG
    for i in (1, 2):  # X_0 at the one differing position, or everywhere: the clean run
        assert abs(out.values[i].item() - out.clean) <= FLOAT64_LONG


def test_a_metric_on_every_position(stack):
    m, clean, corrupted = stack
    last = LogitDiff(4, 11)
    mean_over_positions = lambda logits: last(logits).mean(-1)  # noqa: E731 - (B, n, vocab) -> (B,)
    out = patch(m, clean, corrupted, VARIANTS, mean_over_positions, position=None, chunk_size=4)
    ref = torch.tensor([_reference(m, clean, corrupted, mean_over_positions, v, None) for v in VARIANTS],
                       dtype=torch.float64)
    assert (out.values - ref).abs().max().item() <= FLOAT64_LONG
    at_3 = patch_resid_pre(m, clean, corrupted, last, position=3)
    assert at_3.recovered[:, :2].abs().max().item() <= FLOAT64_LONG  # causal: positions 0, 1 equal in both runs


def test_a_site_outside_the_stack_is_refused(stack):
    m, clean, corrupted = stack
    with pytest.raises(ConfigError, match="position 7 is outside the 7 positions"):
        patch(m, clean, corrupted, [[Site("blocks.0.hook_resid_pre", 7)]], LogitDiff(0, 1))
    with pytest.raises(ConfigError, match="no hook point .embed. on this model: did you mean hook_embed"):
        patch(m, clean, corrupted, [[Site("embed")]], LogitDiff(0, 1))
    with pytest.raises(ConfigError, match="chunk_size must be a positive integer"):
        patch(m, clean, corrupted, [[]], LogitDiff(0, 1), chunk_size=0)
    with pytest.raises(ConfigError, match="patching runs on an attnlab Encoder or a PretrainedModel"):
        patch(torch.nn.Linear(2, 2), clean, corrupted, [[]], LogitDiff(0, 1))
