"""The stream split into what wrote it: per-head outputs and the residual decomposition, from a cache.

Head h of block l writes r_{l,h} = z_{l,h} W_O,{l,h} into the stream (z_{l,h} = P_h v_g(h), the cache's
``blocks.{l}.attn.hook_z``), and the attention output is their sum plus the output bias:

    hook_attn_out_l = sum_h r_{l,h} + b_O,l                                              (eq. (7))

On a pre-LN stack with residual connections the stream entering block l is what was written before it:

    X_l = X_0 + sum_{l' < l} (attn_out_{l'} + mlp_out_{l'})

(``hook_embed`` X_0, ``hook_attn_out``, ``hook_mlp_out``). Shapes: B batch, n positions, H heads, d_model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from attnlab.errors import ConfigError
from attnlab.patching.runner import stack_of


@dataclass(frozen=True)
class Components:
    """components (B, n, C, d_model), one slice per writer, and each one's label (C,)."""

    components: Tensor
    labels: tuple[str, ...]


def stack_head_results(model: Any, cache: dict[str, Tensor], layer: int | None = None) -> Components:
    """r_{l,h} = z_{l,h} W_O,{l,h} of every head (module docstring), without b_O: (B, n, H, d_model) labelled
    "L{l}H{h}" for one ``layer``; for None every layer's, layer-major (B, n, L H, d_model). ``cache`` holds
    the blocks' ``attn.hook_z`` (``run_with_cache``)."""
    stack = stack_of(model)
    L = len(stack.blocks)
    if layer is not None and (isinstance(layer, bool) or not isinstance(layer, int) or not 0 <= layer < L):
        raise ConfigError(f"layer must be a block in [0, {L - 1}] or None (every layer), got {layer!r}")
    parts, labels = [], []
    for l in range(L) if layer is None else [layer]:
        z = _cached(cache, f"blocks.{l}.attn.hook_z")  # (B, n, H, d_v)
        W_O = stack.blocks[l].attn.W_O  # (H, d_v, d_model)
        parts.append(torch.einsum("bnhv,hvd->bnhd", z, W_O.to(z.dtype)))  # (B, n, H, d_model)
        labels += [f"L{l}H{h}" for h in range(W_O.shape[0])]
    return Components(torch.cat(parts, dim=2), tuple(labels))


def decompose_resid(model: Any, cache: dict[str, Tensor], layer: int) -> Components:
    """X_layer split into "embed", "{l}_attn_out", "{l}_mlp_out" for l < ``layer`` (module docstring):
    (B, n, 1 + 2 layer, d_model), summing to ``blocks.{layer}.hook_resid_pre`` (``layer`` = L: the last
    block's hook_resid_post). Pre-LN stacks with residual connections only (SmolLM2, GPT-2)."""
    stack = stack_of(model)
    L = len(stack.blocks)
    if isinstance(layer, bool) or not isinstance(layer, int) or not 0 <= layer <= L:
        raise ConfigError(f"layer must be in [0, {L}] (L: the stream after the last block), got {layer!r}")
    for block in stack.blocks[:layer]:
        if block.norm_position != "pre" or not block.parts.skip or not block.parts.mlp:
            raise ConfigError("decompose_resid needs pre-LN blocks with residual connections and an MLP: on a "
                              "post-LN stack (BERT) the stream is normalised after each sum and does not decompose")
    parts, labels = [_cached(cache, "hook_embed")], ["embed"]
    for l in range(layer):
        for what in ("attn_out", "mlp_out"):
            parts.append(_cached(cache, f"blocks.{l}.hook_{what}"))
            labels.append(f"{l}_{what}")
    return Components(torch.stack(parts, dim=2), tuple(labels))


def _cached(cache: dict[str, Tensor], name: str) -> Tensor:
    """cache[name], or a ConfigError naming the point to cache."""
    if name not in cache:
        raise ConfigError(f"the cache has no {name!r}: run run_with_cache with it among the names")
    return cache[name]
