"""BERT-family checkpoints (model_type bert, roberta, xlm-roberta) as attnlab modules.

BERT (Devlin et al. 2019, arXiv:1810.04805) as transformers' ``BertModel`` computes it:

    X_0 = LN_e(W_tok[x_i] + W_type[t_i] + W_pos[p_i])             p_i = i (BERT)
    u   = LN_1(X + MHA(X))                                       post-LN, §1.2.2 of the math text
    X'  = LN_2(u + GELU(u W_1 + b_1) W_2 + b_2)                  hidden_act "gelu": exact erf GELU

with every LN the standard (z - mu) / sqrt(var + eps) form at config.json's layer_norm_eps
(attnlab's ``LayerNorm(variant="standard")``). RoBERTa (arXiv:1907.11692) is the same network;
its positions start after the padding index: p_i = pad_token_id + 1 + (index of token i among
the real tokens), padded positions p = pad_token_id.

Weights (transformers' names, nn.Linear stores (out, in) and computes x W^T + b):

    encoder.layer.l.attention.self.query.weight (d, d)  -> W_q = weight^T, heads = its column
                                                           blocks (eq. 3): W_Q[h] = W_q[:, h d_h:(h+1) d_h]
    ...self.key / ...self.value                          -> W_K, W_V likewise; biases reshaped (H, d_h)
    encoder.layer.l.attention.output.dense.weight (d, d) -> W_c = weight^T, W_O[h] its row blocks
    encoder.layer.l.attention.output.LayerNorm           -> blocks[l].norm1
    encoder.layer.l.intermediate.dense (d_ff, d)         -> ffn.W_1 = weight^T, b_1
    encoder.layer.l.output.dense (d, d_ff)               -> ffn.W_2 = weight^T, b_2
    encoder.layer.l.output.LayerNorm                     -> blocks[l].norm2
    embeddings.{word,position,token_type}_embeddings     -> embed.W_E, embed.positions.P, embed.W_T
    embeddings.LayerNorm                                 -> embed.norm

The pooler and any task head are not part of the encoder and are ignored.
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

MODEL_TYPES = ("bert", "roberta", "xlm-roberta")
HIDDEN_ACTS = {"gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "relu": "relu"}
_LAYER = r"encoder\.layer\.(\d+)\."


def architecture(config: dict[str, Any], path: Path) -> Architecture:
    """The :class:`Architecture` of a BERT-family config.json."""
    def get(key, kind, **kw):
        return config_value(config, key, kind, path=path, **kw)

    model_type = get("model_type", str)
    d, H = get("hidden_size", int, minimum=1), get("num_attention_heads", int, minimum=1)
    if d % H:
        raise ConfigError(f"{path / 'config.json'}: hidden_size {d} is not a multiple of num_attention_heads {H}")
    act = get("hidden_act", str, default="gelu")
    if act not in HIDDEN_ACTS:
        raise ConfigError(f"{path / 'config.json'}: hidden_act {act!r} is not supported; "
                          f"attnlab runs {', '.join(HIDDEN_ACTS)}")
    position = get("position_embedding_type", str, default="absolute")
    if position != "absolute":
        raise ConfigError(f"{path / 'config.json'}: position_embedding_type {position!r} is not supported; "
                          "attnlab runs 'absolute' (learned) positions")
    if get("is_decoder", bool, default=False) or get("add_cross_attention", bool, default=False):
        raise ConfigError(f"{path / 'config.json'}: is_decoder/add_cross_attention are set; attnlab loads "
                          "BERT-family checkpoints as bidirectional encoders only")
    roberta = model_type != "bert"
    pad = get("pad_token_id", int, default=1 if roberta else 0, minimum=0)
    return Architecture(
        family="bert", model_type=model_type, d_model=d, n_heads=H,
        d_ff=get("intermediate_size", int, minimum=1), n_layers=get("num_hidden_layers", int, minimum=1),
        vocab_size=get("vocab_size", int, minimum=1), max_len=get("max_position_embeddings", int, minimum=1),
        type_vocab_size=get("type_vocab_size", int, minimum=1), eps=get("layer_norm_eps", float, minimum=0.0),
        activation=HIDDEN_ACTS[act], scales=((d // H) ** -0.5,) * get("num_hidden_layers", int),
        position_offset=pad + 1 if roberta else 0, pad_token_id=pad if roberta else None,
    )


def expected_shapes(a: Architecture) -> dict[str, tuple[int, ...]]:
    """transformers' tensor names -> shapes that ``a`` implies (after the base-model prefix)."""
    d, ff = a.d_model, a.d_ff
    out = {"embeddings.word_embeddings.weight": (a.vocab_size, d),
           "embeddings.position_embeddings.weight": (a.max_len, d),
           "embeddings.token_type_embeddings.weight": (a.type_vocab_size, d),
           "embeddings.LayerNorm.weight": (d,), "embeddings.LayerNorm.bias": (d,)}
    for l in range(a.n_layers):
        p = f"encoder.layer.{l}."
        for name in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
            out[p + name + ".weight"], out[p + name + ".bias"] = (d, d), (d,)
        out[p + "intermediate.dense.weight"], out[p + "intermediate.dense.bias"] = (ff, d), (ff,)
        out[p + "output.dense.weight"], out[p + "output.dense.bias"] = (d, ff), (d,)
        for name in ("attention.output.LayerNorm", "output.LayerNorm"):
            out[p + name + ".weight"], out[p + name + ".bias"] = (d,), (d,)
    return out


def attnlab_state(a: Architecture, tensors: dict[str, Tensor], weights: Path) -> dict[str, Tensor]:
    """The state dict of :func:`attnlab.pretrained.architecture.build_encoder` (float64)."""
    t = strip_prefix(tensors, ("bert.", "roberta."))
    expected = expected_shapes(a)
    check_tensors(t, expected, weights, _LAYER, a.n_layers)
    T = {k: t[k].to(torch.float64) for k in expected}
    H, d_h = a.n_heads, a.d_head
    s = {"embed.W_E": T["embeddings.word_embeddings.weight"],
         "embed.positions.P": T["embeddings.position_embeddings.weight"],
         "embed.W_T": T["embeddings.token_type_embeddings.weight"],
         "embed.norm.gamma": T["embeddings.LayerNorm.weight"], "embed.norm.beta": T["embeddings.LayerNorm.bias"]}
    for l in range(a.n_layers):
        p, b = f"encoder.layer.{l}.", f"blocks.{l}."
        q, k, v, o = (T[p + n + ".weight"].T for n in  # (in, out): x W + b, the paper's orientation
                      ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"))
        s[b + "attn.W_Q"], s[b + "attn.W_K"], s[b + "attn.W_V"], s[b + "attn.W_O"] = split_heads(q, k, v, o, H)
        s[b + "attn.b_Q"] = T[p + "attention.self.query.bias"].reshape(H, d_h)
        s[b + "attn.b_K"] = T[p + "attention.self.key.bias"].reshape(H, d_h)
        s[b + "attn.b_V"] = T[p + "attention.self.value.bias"].reshape(H, d_h)
        s[b + "attn.b_O"] = T[p + "attention.output.dense.bias"]
        s[b + "norm1.gamma"], s[b + "norm1.beta"] = (T[p + "attention.output.LayerNorm." + n] for n in ("weight", "bias"))
        s[b + "ffn.W_1"], s[b + "ffn.b_1"] = T[p + "intermediate.dense.weight"].T, T[p + "intermediate.dense.bias"]
        s[b + "ffn.W_2"], s[b + "ffn.b_2"] = T[p + "output.dense.weight"].T, T[p + "output.dense.bias"]
        s[b + "norm2.gamma"], s[b + "norm2.beta"] = (T[p + "output.LayerNorm." + n] for n in ("weight", "bias"))
    return s
