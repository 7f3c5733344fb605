"""Shared by the patching tests: small random attnlab stacks (float64) and the unbatched reference pass.

A Llama-style stack (RMSNorm, gated SiLU MLP, RoPE, grouped-query attention with 2 key/value heads for 6
query heads, tied unembedding) and a GPT-2-style one (LayerNorm, GELU, learned positions, nonzero
biases so a wiring error shows), both D = 24, 3 blocks, vocabulary 23.
"""

from __future__ import annotations

from typing import Callable

import torch

from attnlab.nn import BlockConfig, Encoder, RoPE
from attnlab.patching import Site
from attnlab.patching.sites import axes_of

D, H, H_KV, D_FF, L, V, N = 24, 6, 2, 14, 3, 23, 7  # RoPE needs an even d_head = 4; groups of 3 query heads


def llama() -> Encoder:
    """The Llama-style stack, seed 0."""
    torch.manual_seed(0)
    return Encoder(V, D, H, D_FF, L, positional="none", causal=True, embedding_scale=False,
                   block=BlockConfig(norm="rms", norm_position="pre", bias=False, ffn="gated", activation="silu",
                                     n_kv_heads=H_KV), qkv_transform=RoPE(1e4), lm_head="tied").double().eval()


def gpt2() -> Encoder:
    """The GPT-2-style stack, seed 1, every bias moved off zero by N(0, 0.3^2)."""
    torch.manual_seed(1)
    m = Encoder(V, D, H, D_FF, L, positional="learned", causal=True, embedding_scale=False,
                block=BlockConfig(norm="standard", norm_position="pre", activation="gelu"), lm_head="separate")
    m = m.double().eval()
    with torch.no_grad():
        for name, p in m.named_parameters():
            if name.endswith(("b_Q", "b_K", "b_V", "b_O", "b_1", "b_2", "beta")):
                p.add_(torch.randn_like(p) * 0.3)
    return m


STACKS: dict[str, Callable[[], Encoder]] = {"llama": llama, "gpt2": gpt2}


def single_pass(model, clean_cache: dict, corrupted: torch.Tensor, metric: Callable, site: Site) -> float:
    """The reference for one cell: one unbatched pass of the whole ``model`` (an Encoder or a
    PretrainedModel) on ``corrupted`` with ``site`` overwritten by the clean run's value, scored by
    ``metric`` on the last position's logits."""
    pos_axis, head_axis = axes_of(site.name)

    def write(x: torch.Tensor, name: str) -> torch.Tensor:
        index: list = [slice(None)] * x.ndim
        if site.position is not None:
            index[pos_axis] = site.position
        if site.head is not None:
            index[head_axis] = site.head
        x = x.clone()
        x[tuple(index)] = clean_cache[site.name][tuple(index)]
        return x

    with torch.no_grad():
        return metric(model.run_with_hooks(corrupted, [(site.name, write)])[:, -1]).item()
