"""Llama-family checkpoints (model_type llama, qwen2, mistral) as attnlab modules.

A Llama-style decoder (Touvron et al. 2023) as transformers' ``LlamaModel`` computes it, a causal
pre-norm stack without biases (Qwen2 adds biases to the q, k, v projections):

    X_0 = W_E[x_i]                                          no position vector
    u   = X + GQA(RMSNorm_1(X)),    queries and keys rotated by R(p_i) (RoPE, :mod:`attnlab.ops.rotary`),
                                    H query heads sharing H_kv key/value heads, c = 1/sqrt(d_head)
    X'  = u + SwiGLU(RMSNorm_2(u)), SwiGLU(u) = (SiLU(u W_g) * (u W_1)) W_2
    Z   = RMSNorm_f(X_L),           logits = Z W_U,  W_U = W_E^T when tied (SmolLM2)

RMSNorm(z) = gamma z / sqrt(mean(z^2) + eps) at config.json's rms_norm_eps.

Weights: transformers stores nn.Linear weights as (out, in) and computes x W^T, so the paper's
orientation is the transpose:

    layers.l.self_attn.q_proj.weight (H d_h, d)    -> W_Q[h] = (q_proj.weight^T)[:, h d_h:(h+1) d_h]
    layers.l.self_attn.k_proj/v_proj (H_kv d_h, d) -> W_K[g], W_V[g] likewise (H_kv heads)
    layers.l.self_attn.o_proj.weight (d, H d_h)    -> W_O[h] = (o_proj.weight^T)[h d_h:(h+1) d_h, :]
    layers.l.mlp.gate_proj / up_proj / down_proj   -> ffn.W_g, ffn.W_1, ffn.W_2 (transposed)
    layers.l.input_layernorm, post_attention_layernorm, norm -> norm1, norm2, final_norm (gamma)
    embed_tokens (l, d) -> embed.W_E;  lm_head (l, d) -> W_U = lm_head^T unless tied

Supported config entries: rope_theta (or transformers' rope_parameters), rope_scaling None,
"default" or "linear" (anything else is refused: attnlab would compute other positions);
hidden_act "silu"; head_dim; attention_bias (Llama), the q/k/v biases of Qwen2; Mistral's and
Qwen2's sliding window, which changes nothing below its length, so texts are limited to it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from attnlab.errors import ConfigError
from attnlab.nn.attention import column_blocks
from attnlab.pretrained.architecture import Architecture
from attnlab.pretrained.checkpoint import check_tensors, config_value, strip_prefix

MODEL_TYPES = ("llama", "qwen2", "mistral")
_LAYER = r"layers\.(\d+)\."


def rope_settings(config: dict[str, Any], path: Path | None) -> tuple[float, float]:
    """(base, linear scaling factor) of a config's RoPE; ConfigError for a scaling attnlab does not compute."""
    where = f"{path / 'config.json'}" if path is not None else "config.json"
    params = config.get("rope_parameters") if isinstance(config.get("rope_parameters"), dict) else {}
    base = config.get("rope_theta", params.get("rope_theta", 10000.0))
    if isinstance(base, bool) or not isinstance(base, (int, float)) or not base > 1:
        raise ConfigError(f"{where}: rope_theta must be a number > 1, got {base!r}")
    scaling = config.get("rope_scaling") or None
    kind = params.get("rope_type", "default")
    factor = params.get("factor", 1.0)
    if scaling is not None:
        if not isinstance(scaling, dict):
            raise ConfigError(f"{where}: rope_scaling must be null or an object, got {scaling!r}")
        kind = scaling.get("rope_type", scaling.get("type", "default"))
        factor = scaling.get("factor", 1.0)
    if kind not in ("default", "linear"):
        raise ConfigError(f"{where}: rope_scaling type {kind!r} is not supported; attnlab computes RoPE without "
                          "scaling or with linear scaling: use a checkpoint without it")
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not factor > 0:
        raise ConfigError(f"{where}: rope_scaling factor must be a positive number, got {factor!r}")
    return float(base), float(factor) if kind == "linear" else 1.0


def architecture(config: dict[str, Any], path: Path | None) -> Architecture:
    """The :class:`Architecture` of a Llama, Qwen2 or Mistral config.json."""
    def get(key, kind, **kw):
        return config_value(config, key, kind, path=path, **kw)

    where = f"{path / 'config.json'}" if path is not None else "config.json"
    model_type = config.get("model_type")
    d, H = get("hidden_size", int, minimum=1), get("num_attention_heads", int, minimum=1)
    H_kv = get("num_key_value_heads", int, default=H, minimum=1)
    if H % H_kv:
        raise ConfigError(f"{where}: num_key_value_heads {H_kv} does not divide num_attention_heads {H}")
    d_head = get("head_dim", int, default=d // H, minimum=1)
    if d_head % 2:
        raise ConfigError(f"{where}: head_dim {d_head} is odd; RoPE rotates pairs of coordinates")
    act = get("hidden_act", str, default="silu")
    if act != "silu":
        raise ConfigError(f"{where}: hidden_act {act!r} is not supported; Llama-family MLPs use 'silu' (SwiGLU)")
    if get("mlp_bias", bool, default=False):
        raise ConfigError(f"{where}: mlp_bias is set; attnlab loads Llama-family MLPs without biases")
    base, factor = rope_settings(config, path)
    max_len = get("max_position_embeddings", int, minimum=1)
    window = config.get("sliding_window")
    if model_type == "qwen2" and not config.get("use_sliding_window", False):
        window = None
    if isinstance(window, int) and not isinstance(window, bool) and 0 < window < max_len:
        max_len = window  # beyond the window Mistral attends to the last `window` keys only
    qkv_bias = model_type == "qwen2" or get("attention_bias", bool, default=False)
    L = get("num_hidden_layers", int, minimum=1)
    return Architecture(
        family="llama", model_type=str(model_type), d_model=d, n_heads=H, d_ff=get("intermediate_size", int, minimum=1),
        n_layers=L, vocab_size=get("vocab_size", int, minimum=1), max_len=max_len, type_vocab_size=0,
        eps=get("rms_norm_eps", float, default=1e-6, minimum=0.0), activation="silu",
        scales=(d_head ** -0.5,) * L, n_kv_heads=H_kv, head_dim=d_head, rope_base=base, rope_scaling=factor,
        tied=get("tie_word_embeddings", bool, default=False),
        qkv_bias=qkv_bias, o_bias=bool(model_type != "qwen2" and get("attention_bias", bool, default=False)),
    )


def expected_shapes(a: Architecture) -> dict[str, tuple[int, ...]]:
    """transformers' tensor names -> shapes that ``a`` implies (after the "model." prefix)."""
    d, ff, dh = a.d_model, a.d_ff, a.d_head
    out = {"embed_tokens.weight": (a.vocab_size, d), "norm.weight": (d,)}
    if not a.tied:
        out["lm_head.weight"] = (a.vocab_size, d)
    for l in range(a.n_layers):
        p = f"layers.{l}."
        out[p + "self_attn.q_proj.weight"] = (a.n_heads * dh, d)
        out[p + "self_attn.k_proj.weight"] = (a.n_kv_heads * dh, d)
        out[p + "self_attn.v_proj.weight"] = (a.n_kv_heads * dh, d)
        out[p + "self_attn.o_proj.weight"] = (d, a.n_heads * dh)
        if a.qkv_bias:
            out[p + "self_attn.q_proj.bias"] = (a.n_heads * dh,)
            out[p + "self_attn.k_proj.bias"] = (a.n_kv_heads * dh,)
            out[p + "self_attn.v_proj.bias"] = (a.n_kv_heads * dh,)
        if a.o_bias:
            out[p + "self_attn.o_proj.bias"] = (d,)
        out[p + "mlp.gate_proj.weight"] = out[p + "mlp.up_proj.weight"] = (ff, d)
        out[p + "mlp.down_proj.weight"] = (d, ff)
        out[p + "input_layernorm.weight"] = out[p + "post_attention_layernorm.weight"] = (d,)
    return out


def attnlab_state(a: Architecture, tensors: dict[str, Tensor], weights: Path) -> dict[str, Tensor]:
    """The state dict of :func:`attnlab.pretrained.architecture.build_encoder` (float64)."""
    t = {k: v for k, v in strip_prefix(tensors, ("model.",)).items()}
    if "lm_head.weight" in tensors:
        t["lm_head.weight"] = tensors["lm_head.weight"]
    t = {k: v for k, v in t.items() if not re.search(r"rotary_emb\.inv_freq$", k)}
    expected = expected_shapes(a)
    check_tensors(t, expected, weights, _LAYER, a.n_layers)
    T = {k: t[k].to(torch.float64) for k in expected}
    H, H_kv, dh = a.n_heads, a.n_kv_heads, a.d_head
    s = {"embed.W_E": T["embed_tokens.weight"], "final_norm.gamma": T["norm.weight"]}
    if not a.tied:
        s["W_U"] = T["lm_head.weight"].T
    for l in range(a.n_layers):
        p, b = f"layers.{l}.self_attn.", f"blocks.{l}."
        s[b + "attn.W_Q"] = column_blocks(T[p + "q_proj.weight"].T, H)
        s[b + "attn.W_K"] = column_blocks(T[p + "k_proj.weight"].T, H_kv)
        s[b + "attn.W_V"] = column_blocks(T[p + "v_proj.weight"].T, H_kv)
        s[b + "attn.W_O"] = T[p + "o_proj.weight"].T.reshape(H, dh, a.d_model)
        if a.qkv_bias:
            s[b + "attn.b_Q"] = T[p + "q_proj.bias"].reshape(H, dh)
            s[b + "attn.b_K"] = T[p + "k_proj.bias"].reshape(H_kv, dh)
            s[b + "attn.b_V"] = T[p + "v_proj.bias"].reshape(H_kv, dh)
        if a.o_bias:
            s[b + "attn.b_O"] = T[p + "o_proj.bias"]
        elif a.qkv_bias:  # Qwen2: biases on q, k, v only
            s[b + "attn.b_O"] = torch.zeros(a.d_model, dtype=torch.float64)
        m = f"layers.{l}.mlp."
        s[b + "ffn.W_g"] = T[m + "gate_proj.weight"].T
        s[b + "ffn.W_1"] = T[m + "up_proj.weight"].T
        s[b + "ffn.W_2"] = T[m + "down_proj.weight"].T
        s[b + "norm1.gamma"] = T[f"layers.{l}.input_layernorm.weight"]
        s[b + "norm2.gamma"] = T[f"layers.{l}.post_attention_layernorm.weight"]
    return s
