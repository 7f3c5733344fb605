"""What attnlab needs to know of a checkpoint's architecture, and the attnlab model it becomes.

A BERT-family, GPT-2-family or Llama-family checkpoint is an :class:`attnlab.nn.Encoder`
(the Llama family: :mod:`attnlab.pretrained.llama`, pre-RMSNorm blocks with RoPE, grouped-query
attention and a SwiGLU MLP, and an output head):

    BERT (post-LN, bidirectional)               GPT-2 (pre-LN, causal)
    X_0 = LN_e(W_E[x] + W_T[t] + P[p])          X_0 = W_E[x] + P[p]
    X_l = f_l(X_{l-1}), post-LN blocks, GELU     X_l = f_l(X_{l-1}), pre-LN blocks, causal mask
    Z = X_L                                      Z = LN_f(X_L)

Every LayerNorm is the "standard" variant of :mod:`attnlab.nn.layernorm`,
gamma (z - mu) / sqrt(sigma^2 + eps) + beta with the checkpoint's eps (BERT's layer_norm_eps,
GPT-2's layer_norm_epsilon), which is what both families compute; the text's (sigma + eps)
form would differ by O(eps / sigma).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.overrides import TorchFunctionMode

from attnlab.nn.block import BlockConfig
from attnlab.nn.positional import RoPE
from attnlab.nn.transformer import Encoder


@dataclass(frozen=True)
class Architecture:
    """The numbers of a checkpoint's config.json, in attnlab's names.

    family: "bert" or "gpt2"; model_type: config.json's; d_model, n_heads, d_ff, n_layers,
    vocab_size; max_len: rows of the position table; type_vocab_size: rows of W_T (0: none);
    eps: every LayerNorm's; activation: an :mod:`attnlab.nn.activations` name; scales: the
    attention scale c of every layer; position_offset, pad_token_id: RoBERTa's positions
    (p_i = pad_token_id + 1 + index among real tokens), 0 and None elsewhere; Llama family:
    n_kv_heads (grouped-query attention), head_dim, rope_base and rope_scaling (linear factor),
    tied (W_U = W_E^T), qkv_bias / o_bias (Qwen2: q, k, v only).
    """

    family: str
    model_type: str
    d_model: int
    n_heads: int
    d_ff: int
    n_layers: int
    vocab_size: int
    max_len: int
    type_vocab_size: int
    eps: float
    activation: str
    scales: tuple[float, ...]
    position_offset: int = 0
    pad_token_id: int | None = None
    n_kv_heads: int | None = None
    head_dim: int | None = None
    rope_base: float | None = None
    rope_scaling: float = 1.0
    tied: bool = True
    qkv_bias: bool = True
    o_bias: bool = True

    @property
    def causal(self) -> bool:
        return self.family in ("gpt2", "llama")

    @property
    def d_head(self) -> int:
        return self.head_dim if self.head_dim is not None else self.d_model // self.n_heads

    @property
    def kv_heads(self) -> int:
        """Key/value heads: n_heads unless grouped-query attention shares them."""
        return self.n_heads if self.n_kv_heads is None else self.n_kv_heads


class _Uninitialised(TorchFunctionMode):
    """Allocate parameters without drawing them: ``torch.randn``/``torch.rand`` become ``torch.empty``
    and ``Tensor.normal_``/``uniform_`` do nothing (the checkpoint overwrites every value)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.randn or func is torch.rand:
            kwargs.pop("generator", None)
            return torch.empty(*args, **kwargs)
        if func is torch.Tensor.normal_ or func is torch.Tensor.uniform_:
            return args[0]
        return func(*args, **kwargs)


def build_encoder(arch: Architecture, dtype: torch.dtype, device: str) -> Encoder:
    """The attnlab Encoder of ``arch``, parameters allocated (uninitialised) in ``dtype`` on ``device``.

    No random draws (the caller's generator state is untouched) and no time spent initialising
    weights the checkpoint overwrites: the random initialisers allocate only (:class:`_Uninitialised`),
    on ``device`` directly. (Not the meta device: its first operations import sympy and
    torch._dynamo, about a second on a CPU.)
    """
    if arch.family == "llama":
        return _build_llama(arch, dtype, device)
    bert = arch.family == "bert"
    with torch.random.fork_rng(devices=[]), torch.device(device), _Uninitialised():
        model = Encoder(
            arch.vocab_size, arch.d_model, arch.n_heads, arch.d_ff, arch.n_layers,
            max_len=arch.max_len, positional="learned", causal=arch.causal, embedding_scale=False,
            type_vocab_size=arch.type_vocab_size, embedding_norm="standard" if bert else None,
            block=BlockConfig(norm="standard", norm_position="post" if bert else "pre", eps=arch.eps,
                              activation=arch.activation, scale=arch.scales[0]),
        )
    for block, c in zip(model.blocks, arch.scales):
        block.attn.scale = c  # GPT-2's scale_attn_by_inverse_layer_idx: c_l = 1 / (sqrt(d_head) (l + 1))
    return model.to(dtype).eval()


def _build_llama(arch: Architecture, dtype: torch.dtype, device: str) -> Encoder:
    """A causal pre-RMSNorm stack with RoPE, grouped-query attention and SwiGLU (:mod:`attnlab.pretrained.llama`)."""
    with torch.random.fork_rng(devices=[]), torch.device(device), _Uninitialised():
        model = Encoder(
            arch.vocab_size, arch.d_model, arch.n_heads, arch.d_ff, arch.n_layers, max_len=arch.max_len,
            positional="none", causal=True, embedding_scale=False,
            block=BlockConfig(norm="rms", norm_position="pre", eps=arch.eps, activation="silu", ffn="gated",
                              n_kv_heads=arch.kv_heads, d_head=arch.d_head, bias=arch.qkv_bias or arch.o_bias,
                              scale=arch.scales[0]),
            qkv_transform=RoPE(arch.rope_base, arch.rope_scaling), lm_head="tied" if arch.tied else "separate",
        )
    for block in model.blocks:  # Llama-family MLPs have no biases, whatever the attention has
        block.ffn.b_g = block.ffn.b_1 = block.ffn.b_2 = None
    return model.to(dtype).eval()
