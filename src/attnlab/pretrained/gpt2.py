"""GPT-2-family checkpoints (model_type gpt2) as attnlab modules.

GPT-2 (Radford et al. 2019) as transformers' ``GPT2Model`` computes it, a causal pre-LN stack:

    X_0 = W_tok[x_i] + W_pos[p_i]
    u   = X + MHA(LN_1(X)),         causal: query i sees keys j <= i (math text eq. 10)
    X'  = u + FFN(LN_2(u)),         FFN(u) = GELU_tanh(u W_1 + b_1) W_2 + b_2   ("gelu_new")
    Z   = LN_f(X_L)

with every LN the standard (z - mu) / sqrt(var + eps) form at config.json's layer_norm_epsilon
and the attention scale c = 1/sqrt(d_head) (times 1/(l + 1) in layer l with
scale_attn_by_inverse_layer_idx; c = 1 without scale_attn_weights).

Weights: GPT-2's Conv1D stores (in, out) and computes x W + b, already the paper's orientation:

    h.l.attn.c_attn.weight (d, 3d)  -> [W_q | W_k | W_v] column blocks; heads are the column blocks
                                       of each (eq. 3); bias (3d,) split the same way
    h.l.attn.c_proj.weight (d, d)   -> W_c, W_O[h] its row blocks
    h.l.mlp.c_fc (d, d_ff), h.l.mlp.c_proj (d_ff, d) -> ffn.W_1, ffn.W_2
    h.l.ln_1, h.l.ln_2              -> blocks[l].norm1, norm2;  ln_f -> final_norm
    wte, wpe                        -> embed.W_E, embed.positions.P

The causal-mask buffers older files store (h.l.attn.bias, h.l.attn.masked_bias) and the tied
lm_head are ignored.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from attnlab.errors import ConfigError
from attnlab.nn.attention import split_heads
from attnlab.pretrained.architecture import Architecture
from attnlab.pretrained.checkpoint import check_tensors, config_value, strip_prefix

MODEL_TYPES = ("gpt2",)
ACTIVATIONS = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu": "gelu", "relu": "relu"}
_LAYER = r"h\.(\d+)\."


def architecture(config: dict[str, Any], path: Path) -> Architecture:
    """The :class:`Architecture` of a GPT-2 config.json (n_embd, n_head, n_layer, n_positions, ...)."""
    def get(key, kind, **kw):
        return config_value(config, key, kind, path=path, **kw)

    d, H, L = get("n_embd", int, minimum=1), get("n_head", int, minimum=1), get("n_layer", int, minimum=1)
    if d % H:
        raise ConfigError(f"{path / 'config.json'}: n_embd {d} is not a multiple of n_head {H}")
    act = get("activation_function", str, default="gelu_new")
    if act not in ACTIVATIONS:
        raise ConfigError(f"{path / 'config.json'}: activation_function {act!r} is not supported; "
                          f"attnlab runs {', '.join(ACTIVATIONS)}")
    if get("add_cross_attention", bool, default=False):
        raise ConfigError(f"{path / 'config.json'}: add_cross_attention is set; attnlab loads GPT-2 checkpoints "
                          "as decoder-only stacks without cross-attention")
    c = (d // H) ** -0.5 if get("scale_attn_weights", bool, default=True) else 1.0
    by_layer = get("scale_attn_by_inverse_layer_idx", bool, default=False)
    return Architecture(
        family="gpt2", model_type="gpt2", d_model=d, n_heads=H, d_ff=get("n_inner", int, default=4 * d, minimum=1),
        n_layers=L, vocab_size=get("vocab_size", int, minimum=1), max_len=get("n_positions", int, minimum=1),
        type_vocab_size=0, eps=get("layer_norm_epsilon", float, default=1e-5, minimum=0.0),
        activation=ACTIVATIONS[act], scales=tuple(c / (l + 1) if by_layer else c for l in range(L)),
    )


def expected_shapes(a: Architecture) -> dict[str, tuple[int, ...]]:
    """transformers' tensor names -> shapes that ``a`` implies (after the "transformer." prefix)."""
    d, ff = a.d_model, a.d_ff
    out = {"wte.weight": (a.vocab_size, d), "wpe.weight": (a.max_len, d), "ln_f.weight": (d,), "ln_f.bias": (d,)}
    for l in range(a.n_layers):
        p = f"h.{l}."
        out[p + "attn.c_attn.weight"], out[p + "attn.c_attn.bias"] = (d, 3 * d), (3 * d,)
        out[p + "attn.c_proj.weight"], out[p + "attn.c_proj.bias"] = (d, d), (d,)
        out[p + "mlp.c_fc.weight"], out[p + "mlp.c_fc.bias"] = (d, ff), (ff,)
        out[p + "mlp.c_proj.weight"], out[p + "mlp.c_proj.bias"] = (ff, d), (d,)
        for name in ("ln_1", "ln_2"):
            out[p + name + ".weight"], out[p + name + ".bias"] = (d,), (d,)
    return out


def attnlab_state(a: Architecture, tensors: dict[str, Tensor], weights: Path) -> dict[str, Tensor]:
    """The state dict of :func:`attnlab.pretrained.architecture.build_encoder` (float64)."""
    t = strip_prefix(tensors, ("transformer.",))
    expected = expected_shapes(a)
    check_tensors(t, expected, weights, _LAYER, a.n_layers)
    T = {k: t[k].to(torch.float64) for k in expected}
    d, H, d_h = a.d_model, a.n_heads, a.d_head
    s = {"embed.W_E": T["wte.weight"], "embed.positions.P": T["wpe.weight"],
         "final_norm.gamma": T["ln_f.weight"], "final_norm.beta": T["ln_f.bias"]}
    for l in range(a.n_layers):
        p, b = f"h.{l}.", f"blocks.{l}."
        W_q, W_k, W_v = T[p + "attn.c_attn.weight"].split(d, dim=1)  # each (d, d), already x W
        b_q, b_k, b_v = T[p + "attn.c_attn.bias"].split(d)
        heads = split_heads(W_q, W_k, W_v, T[p + "attn.c_proj.weight"], H)
        s[b + "attn.W_Q"], s[b + "attn.W_K"], s[b + "attn.W_V"], s[b + "attn.W_O"] = heads
        s[b + "attn.b_Q"], s[b + "attn.b_K"], s[b + "attn.b_V"] = (x.reshape(H, d_h) for x in (b_q, b_k, b_v))
        s[b + "attn.b_O"] = T[p + "attn.c_proj.bias"]
        s[b + "ffn.W_1"], s[b + "ffn.b_1"] = T[p + "mlp.c_fc.weight"], T[p + "mlp.c_fc.bias"]
        s[b + "ffn.W_2"], s[b + "ffn.b_2"] = T[p + "mlp.c_proj.weight"], T[p + "mlp.c_proj.bias"]
        s[b + "norm1.gamma"], s[b + "norm1.beta"] = T[p + "ln_1.weight"], T[p + "ln_1.bias"]
        s[b + "norm2.gamma"], s[b + "norm2.beta"] = T[p + "ln_2.weight"], T[p + "ln_2.bias"]
    return s
