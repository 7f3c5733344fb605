"""The transformer block and the decoder block (math-behind-transformers §1.2.2, §1.2.4, §1.2.5).

Encoder block f_theta: R^{n x d} -> R^{n x d}, post-LN exactly as §1.2.2:

    u = LN(x + MHA(x); gamma_1, beta_1)
    z = LN(u + FFN(u); gamma_2, beta_2),     FFN(u) = phi(u W_1 + b_1) W_2 + b_2

with W_1 in R^{d x m}, b_1 in R^m, W_2 in R^{m x d}, b_2 in R^d (the text
writes b_1, b_2 in R: a typo, they are vectors; it also repeats gamma_1, beta_1
where gamma_2, beta_2 are meant) and phi = ReLU in the text (GELU in BERT and
GPT-2: :mod:`attnlab.nn.activations`). Pre-LN (GPT-2 and later):

    u = x + MHA(LN(x)),   z = u + FFN(LN(u)).

Gated MLP (``ffn="gated"``; Shazeer 2020, "GLU Variants Improve Transformer"; SwiGLU with
phi = SiLU is Llama's MLP):

    FFN(u) = (phi(u W_g) * (u W_1)) W_2,    W_g, W_1 in R^{d x m},  W_2 in R^{m x d},  * elementwise

Llama-family blocks are pre-LN with RMSNorm (``norm="rms"``), grouped-query attention
(``n_kv_heads``), no biases, and rotary positions passed to :meth:`TransformerBlock.forward` as
``qkv_transform``, the map (q, k, v) -> (R(p) q, R(p) k, v) of one pass
(:class:`attnlab.nn.positional.QKVTransform`, :class:`attnlab.nn.positional.RoPE`).

Decoder block (§1.2.5): masked (causal, eq. 10) self-attention, cross-attention
to the encoder output Z, FFN, each with residual + LN. The text writes the
cross-attention as softmax(X Z^T / sqrt(k)) Z, which omits the projections:
queries are X W_Q,h and keys/values Z W_K,h, Z W_V,h with the cross-attention
layer's own W_K, W_V (and W_O), as in [1].

Parts that can be switched off (:class:`BlockParts`, one per block, changeable after
construction so a loaded model can be ablated and restored; switched-off parts keep their
parameters). With S(x) = x (skip on) or 0 (off), N = LN (layer_norm on) or the identity
(off), A = MHA with softmax (softmax on) or with the unnormalized (c Q_h K_h^T) V_h of
:mod:`attnlab.ops.unnormalized` (off; same scale c, masked pairs weigh 0):

    post-LN:  u = N_1(S(x) + A(x)),   z = N_2(S(u) + FFN(u))   (mlp on)   or  z = u   (mlp off)
    pre-LN:   u = S(x) + A(N_1(x)),   z = S(u) + FFN(N_2(u))   (mlp on)   or  z = u   (mlp off)

"mlp off" removes the whole second sublayer (FFN, its skip and its LayerNorm). With every
part off but softmax, a block is pure self-attention z = MHA(x), the network whose output
collapses to rank one (rank-collapse notes, "pure attention"). The decoder block follows
the same rule for its three sublayers (mlp off removes the third).

Dropout is optional and 0.0 by default, so every forward is deterministic.

Hook points of :class:`TransformerBlock` (:class:`attnlab.nn.hooks.HookPoint`, TransformerLens' names;
every one (B, n, d_model) but hook_post (B, n, d_ff)), with A the attention sublayer's output
(after W_O, b_O and dropout) and F the FFN's:

    hook_resid_pre    x, the stream entering the block
    hook_attn_out     A
    hook_resid_mid    pre-LN: u = S(x) + A;  post-LN: u = N_1(S(x) + A) (the stream entering the FFN)
    ffn.hook_post     phi(u' W_1 + b_1) (gated: phi(u' W_g + b_g) * (u' W_1 + b_1)), u' the FFN's input
    hook_mlp_out      F
    hook_resid_post   z, the block's output (the next block's hook_resid_pre)

With mlp off, hook_post and hook_mlp_out are not reached and resid_post = resid_mid. The attention's
own points are ``attn.hook_q`` ... ``attn.hook_z`` (:mod:`attnlab.nn.attention`).

Hook points of :class:`DecoderBlock`, with C the cross-attention sublayer's output (the names of
TransformerLens' encoder-decoder block; the self-attention module is ``self_attn``, whose points carry
TransformerLens' names ``attn.hook_*``, :data:`attnlab.nn.hooked.TL_NAMES`):

    hook_resid_pre        x
    hook_attn_out         A, the masked self-attention's output
    hook_resid_mid        pre-LN: u = S(x) + A;  post-LN: u = N_1(S(x) + A)
    hook_cross_attn_out   C, the cross-attention's output (queries from u, keys and values from Z)
    hook_resid_mid_cross  pre-LN: v = S(u) + C;  post-LN: v = N_2(S(u) + C) (the stream entering the FFN)
    ffn.hook_post         as above
    hook_mlp_out          F
    hook_resid_post       z

The cross-attention's own points are ``cross_attn.hook_q`` ... ``cross_attn.hook_z``, with n_k the
encoder's positions.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import torch
from torch import Tensor, nn

from attnlab.config import check_bool
from attnlab.errors import ConfigError, UnknownNameError
from attnlab.nn.activations import resolve_activation
from attnlab.nn.attention import ATTENTIONS, MultiHeadAttention
from attnlab.nn.hooks import HookPoint
from attnlab.nn.layernorm import NORM_VARIANTS, LayerNorm
from attnlab.ops.multihead import QKVMap
from attnlab.ops.softmax import Scale

NORM_POSITIONS = ("post", "pre")
BLOCK_HOOK_POINTS = ("hook_resid_pre", "hook_attn_out", "hook_resid_mid", "hook_mlp_out", "hook_resid_post")
DECODER_BLOCK_HOOK_POINTS = ("hook_resid_pre", "hook_attn_out", "hook_resid_mid", "hook_cross_attn_out",
                             "hook_resid_mid_cross", "hook_mlp_out", "hook_resid_post")


class FeedForward(nn.Module):
    """FFN(u) = phi(u W_1 + b_1) W_2 + b_2, W_1 (d_model, d_ff), W_2 (d_ff, d_model) (§1.2.4).

    phi is ``activation``: "relu" (the text, default), "gelu" (BERT) or "gelu_tanh" (GPT-2),
    defined in :mod:`attnlab.nn.activations`.
    """

    def __init__(self, d_model: int, d_ff: int, bias: bool = True, dropout: float = 0.0,
                 activation: str = "relu"):
        super().__init__()
        if d_model <= 0 or d_ff <= 0:
            raise ConfigError(f"d_model and d_ff must be positive, got {d_model}, {d_ff}")
        self.phi = resolve_activation(activation)
        self.d_model, self.d_ff, self.activation = d_model, d_ff, activation
        self.W_1 = nn.Parameter(torch.randn(d_model, d_ff) / d_model**0.5)
        self.W_2 = nn.Parameter(torch.randn(d_ff, d_model) / d_ff**0.5)
        self.b_1 = nn.Parameter(torch.zeros(d_ff)) if bias else None
        self.b_2 = nn.Parameter(torch.zeros(d_model)) if bias else None
        self.dropout = nn.Dropout(dropout)
        self.hook_post = HookPoint()  # phi(u W_1 + b_1), (..., n, d_ff)

    def forward(self, u: Tensor) -> Tensor:
        """u: (..., n, d_model) -> (..., n, d_model)."""
        h = u @ self.W_1  # (..., n, d_ff)
        if self.b_1 is not None:
            h = h + self.b_1
        z = self.dropout(self.hook_post(self.phi(h))) @ self.W_2  # (..., n, d_model)
        return z if self.b_2 is None else z + self.b_2

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, d_ff={self.d_ff}, activation={self.activation!r}"


class GatedFeedForward(nn.Module):
    """FFN(u) = (phi(u W_g + b_g) * (u W_1 + b_1)) W_2 + b_2 (module docstring; SwiGLU with phi = SiLU).

    W_g, W_1: (d_model, d_ff); W_2: (d_ff, d_model); biases optional (Llama has none).
    """

    def __init__(self, d_model: int, d_ff: int, bias: bool = False, dropout: float = 0.0,
                 activation: str = "silu"):
        super().__init__()
        if d_model <= 0 or d_ff <= 0:
            raise ConfigError(f"d_model and d_ff must be positive, got {d_model}, {d_ff}")
        self.phi = resolve_activation(activation)
        self.d_model, self.d_ff, self.activation = d_model, d_ff, activation
        self.W_g = nn.Parameter(torch.randn(d_model, d_ff) / d_model**0.5)
        self.W_1 = nn.Parameter(torch.randn(d_model, d_ff) / d_model**0.5)
        self.W_2 = nn.Parameter(torch.randn(d_ff, d_model) / d_ff**0.5)
        self.b_g = nn.Parameter(torch.zeros(d_ff)) if bias else None
        self.b_1 = nn.Parameter(torch.zeros(d_ff)) if bias else None
        self.b_2 = nn.Parameter(torch.zeros(d_model)) if bias else None
        self.dropout = nn.Dropout(dropout)
        self.hook_post = HookPoint()  # phi(u W_g + b_g) * (u W_1 + b_1), (..., n, d_ff)

    def forward(self, u: Tensor) -> Tensor:
        """u: (..., n, d_model) -> (..., n, d_model)."""
        g, h = u @ self.W_g, u @ self.W_1  # (..., n, d_ff)
        if self.b_g is not None:
            g, h = g + self.b_g, h + self.b_1
        z = self.dropout(self.hook_post(self.phi(g) * h)) @ self.W_2
        return z if self.b_2 is None else z + self.b_2

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, d_ff={self.d_ff}, gated, activation={self.activation!r}"


FFN_KINDS = {"mlp": FeedForward, "gated": GatedFeedForward}


@dataclass(frozen=True)
class BlockParts:
    """Which parts of a block run (module docstring): True = on, as in the text.

    skip:       the residual connections x + ...
    mlp:        the feed-forward sublayer (with its skip and LayerNorm)
    layer_norm: every LayerNorm of the block
    softmax:    softmax attention; off = unnormalized (c Q K^T) V
    """

    skip: bool = True
    mlp: bool = True
    layer_norm: bool = True
    softmax: bool = True

    def __post_init__(self) -> None:
        for f in fields(self):
            check_bool(f.name, getattr(self, f.name))

    @classmethod
    def pure_attention(cls) -> "BlockParts":
        """No skip, no MLP, no LayerNorm: z = MHA(x)."""
        return cls(skip=False, mlp=False, layer_norm=False)


@dataclass(frozen=True)
class BlockConfig:
    """Everything of a block but its sizes (d_model, n_heads, d_ff), shared by
    :class:`TransformerBlock`, :class:`DecoderBlock` and the stacks of :mod:`attnlab.nn.transformer`.

    d_head:        k, the size of a query/key head (None: d_model / n_heads, eq. 3)
    norm:          the LayerNorm variant of :mod:`attnlab.nn.layernorm` ("paper" = the text's
                   (z - mu) / (sigma + eps), "standard", "rms")
    norm_position: "post" (§1.2.2, u = LN(x + MHA(x))) or "pre" (u = x + MHA(LN(x)))
    eps:           every LayerNorm's eps (None: the variant's default)
    dropout:       after every sublayer and inside the FFN (0.0: deterministic)
    bias:          the biases b_Q, b_K, b_V, b_O, b_1, b_2
    scale:         c of softmax(c Q K^T) (:func:`attnlab.ops.softmax.resolve_scale`; default 1/sqrt(k))
    attention:     the operator of every head, "softmax" (eq. 5) or "unnormalized" ((c Q K^T) V)
    activation:    phi of the FFN (:mod:`attnlab.nn.activations`; "relu" in the text)
    ffn:           "mlp" (§1.2.4, phi(u W_1 + b_1) W_2 + b_2) or "gated" (SwiGLU, module docstring)
    n_kv_heads:    H_kv, the key/value heads of grouped-query attention (None: H_kv = H)
    parts:         the :class:`BlockParts` switches every block starts with (all on: the text's block)

    Validated once, at construction (a one-line ConfigError naming the field).
    """

    d_head: int | None = None
    norm: str = "paper"
    norm_position: str = "post"
    eps: float | None = None
    dropout: float = 0.0
    bias: bool = True
    scale: Scale = "1/sqrt(d)"
    attention: str = "softmax"
    activation: str = "relu"
    ffn: str = "mlp"
    n_kv_heads: int | None = None
    parts: BlockParts = BlockParts()

    def __post_init__(self) -> None:
        _check_norm_position(self.norm_position)
        if self.ffn not in FFN_KINDS:
            raise ConfigError(f"unknown ffn {self.ffn!r}: use 'mlp' (the text, §1.2.4) or 'gated' (SwiGLU)")
        if self.norm not in NORM_VARIANTS:
            raise ConfigError(f"unknown LayerNorm variant {self.norm!r}: use 'paper' (eq. 2), 'standard' or 'rms'")
        if self.attention not in ATTENTIONS:
            raise UnknownNameError(f"unknown attention {self.attention!r}: choose one of {', '.join(ATTENTIONS)}")
        resolve_activation(self.activation)
        check_bool("bias", self.bias)
        for name in ("d_head", "n_kv_heads"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v <= 0):
                raise ConfigError(f"{name} must be a positive integer or None, got {v!r}")
        if isinstance(self.dropout, bool) or not isinstance(self.dropout, (int, float)) or not 0 <= self.dropout < 1:
            raise ConfigError(f"dropout must be a number in [0, 1), got {self.dropout!r}")
        if self.eps is not None and (isinstance(self.eps, bool) or not isinstance(self.eps, (int, float))
                                     or not self.eps > 0):
            raise ConfigError(f"eps must be a positive number or None, got {self.eps!r}")
        if not isinstance(self.parts, BlockParts):
            raise ConfigError(f"parts must be a BlockParts, got {type(self.parts).__name__}")


@dataclass(frozen=True)
class BlockOutput:
    """What one block's forward returns, always.

    output:        z (B, n, d_model)
    weights:       P (B, H, n_q, n_k), every head's (self-)attention weights of the same pass;
                   None unless ``return_weights``
    cross_weights: a decoder block's cross-attention weights C (B, H, n_tgt, n_src); None for an
                   encoder block or unless ``return_weights``
    """

    output: Tensor
    weights: Tensor | None = None
    cross_weights: Tensor | None = None


def _check_norm_position(norm_position: str) -> None:
    if norm_position not in NORM_POSITIONS:
        raise ConfigError(
            f"unknown norm_position {norm_position!r}: use 'post' (the text, §1.2.2) or 'pre'"
        )


class _Switchable(nn.Module):
    """The ``parts`` switches shared by both blocks."""

    _parts: BlockParts

    @property
    def parts(self) -> BlockParts:
        return self._parts

    @parts.setter
    def parts(self, parts: BlockParts) -> None:
        if not isinstance(parts, BlockParts):
            raise ConfigError(f"parts must be a BlockParts, got {type(parts).__name__}")
        self._parts = parts

    def _norm(self, norm: LayerNorm, h: Tensor) -> Tensor:
        return norm(h) if self._parts.layer_norm else h

    def _skip(self, h: Tensor) -> Tensor | float:
        return h if self._parts.skip else 0.0

    def _attention_name(self) -> str | None:
        return None if self._parts.softmax else "unnormalized"


class TransformerBlock(_Switchable):
    """One encoder block f_theta (module docstring): MHA + FFN, residuals, LayerNorm post or pre.

    d_model, n_heads (H), d_ff (m): the sizes; ``config``: every other choice, a :class:`BlockConfig`
    (default: the text's post-LN block with ReLU and c = 1/sqrt(k)).
    """

    def __init__(self, d_model: int, n_heads: int, d_ff: int, config: BlockConfig = BlockConfig()):
        super().__init__()
        if not isinstance(config, BlockConfig):
            raise ConfigError(f"config must be a BlockConfig, got {type(config).__name__}")
        c = self.config = config
        self.parts = c.parts
        self.norm_position = c.norm_position
        self.attn = MultiHeadAttention(d_model, n_heads, c.d_head, bias=c.bias, scale=c.scale, attention=c.attention,
                                       n_kv_heads=c.n_kv_heads)
        self.ffn = FFN_KINDS[c.ffn](d_model, d_ff, bias=c.bias, dropout=c.dropout, activation=c.activation)
        self.norm1 = LayerNorm(d_model, c.norm, c.eps)
        self.norm2 = LayerNorm(d_model, c.norm, c.eps)
        self.dropout = nn.Dropout(c.dropout)
        for point in BLOCK_HOOK_POINTS:  # module docstring
            setattr(self, point, HookPoint())

    def forward(
        self,
        x: Tensor,
        *,
        mask: Tensor | None = None,
        causal: bool | str | None = None,
        key_padding_mask: Tensor | None = None,
        return_weights: bool = False,
        qkv_transform: QKVMap | None = None,
    ) -> BlockOutput:
        """x: (B, n, d_model) -> :class:`BlockOutput` with z (B, n, d_model) and, with ``return_weights``,
        every head's weights P (B, H, n, n) of the same pass.
        ``qkv_transform`` (q, k, v) -> (q', k', v') acts on the projected queries, keys and values
        (rotary positions: :meth:`attnlab.nn.positional.QKVTransform.at`)."""
        weights = []

        def mha(h: Tensor) -> Tensor:
            res = self.attn(h, mask=mask, causal=causal, key_padding_mask=key_padding_mask,
                            return_weights=return_weights, attention=self._attention_name(),
                            qkv_transform=qkv_transform)
            weights.append(res.weights)
            return self.hook_attn_out(self.dropout(res.output))

        def mlp(h: Tensor) -> Tensor:
            return self.hook_mlp_out(self.dropout(self.ffn(h)))

        x = self.hook_resid_pre(x)
        if self.norm_position == "post":
            u = self.hook_resid_mid(self._norm(self.norm1, self._skip(x) + mha(x)))
            z = self._norm(self.norm2, self._skip(u) + mlp(u)) if self.parts.mlp else u
        else:
            u = self.hook_resid_mid(self._skip(x) + mha(self._norm(self.norm1, x)))
            z = self._skip(u) + mlp(self._norm(self.norm2, u)) if self.parts.mlp else u
        return BlockOutput(self.hook_resid_post(z), weights[0])


class DecoderBlock(_Switchable):
    """Masked self-attention, cross-attention to Z, FFN; each with residual + LN (§1.2.5).

    Sizes and ``config`` as :class:`TransformerBlock` (``n_kv_heads`` applies to both attentions).
    """

    def __init__(self, d_model: int, n_heads: int, d_ff: int, config: BlockConfig = BlockConfig()):
        super().__init__()
        if not isinstance(config, BlockConfig):
            raise ConfigError(f"config must be a BlockConfig, got {type(config).__name__}")
        c = self.config = config
        self.parts = c.parts
        self.norm_position = c.norm_position
        kw = dict(bias=c.bias, scale=c.scale, attention=c.attention, n_kv_heads=c.n_kv_heads)
        self.self_attn = MultiHeadAttention(d_model, n_heads, c.d_head, **kw)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, c.d_head, **kw)
        self.ffn = FFN_KINDS[c.ffn](d_model, d_ff, bias=c.bias, dropout=c.dropout, activation=c.activation)
        self.norm1 = LayerNorm(d_model, c.norm, c.eps)
        self.norm2 = LayerNorm(d_model, c.norm, c.eps)
        self.norm3 = LayerNorm(d_model, c.norm, c.eps)
        self.dropout = nn.Dropout(c.dropout)
        for point in DECODER_BLOCK_HOOK_POINTS:  # module docstring
            setattr(self, point, HookPoint())

    def forward(
        self,
        x: Tensor,
        Z: Tensor,
        *,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        return_weights: bool = False,
    ) -> BlockOutput:
        """x: (B, n_tgt, d_model) decoder stream, Z: (B, n_src, d_model) encoder output.

        Returns a :class:`BlockOutput`: z (B, n_tgt, d_model) and, with ``return_weights``, the
        self-attention weights (B, H, n_tgt, n_tgt) and cross-attention weights (B, H, n_tgt, n_src).
        """
        weights = {}
        name = self._attention_name()

        def self_mha(h: Tensor) -> Tensor:  # eq. (10): query i sees targets j <= i only
            res = self.self_attn(h, causal=True, key_padding_mask=tgt_key_padding_mask,
                                 return_weights=return_weights, attention=name)
            weights["self"] = res.weights
            return self.hook_attn_out(self.dropout(res.output))

        def cross_mha(h: Tensor) -> Tensor:  # queries from the decoder, keys/values from Z
            res = self.cross_attn(h, Z, key_padding_mask=memory_key_padding_mask,
                                  return_weights=return_weights, attention=name)
            weights["cross"] = res.weights
            return self.hook_cross_attn_out(self.dropout(res.output))

        def mlp(h: Tensor) -> Tensor:
            return self.hook_mlp_out(self.dropout(self.ffn(h)))

        S, N = self._skip, self._norm
        x = self.hook_resid_pre(x)
        if self.norm_position == "post":
            u = self.hook_resid_mid(N(self.norm1, S(x) + self_mha(x)))
            v = self.hook_resid_mid_cross(N(self.norm2, S(u) + cross_mha(u)))
            z = N(self.norm3, S(v) + mlp(v)) if self.parts.mlp else v
        else:
            u = self.hook_resid_mid(S(x) + self_mha(N(self.norm1, x)))
            v = self.hook_resid_mid_cross(S(u) + cross_mha(N(self.norm2, u)))
            z = S(v) + mlp(N(self.norm3, v)) if self.parts.mlp else v
        return BlockOutput(self.hook_resid_post(z), weights["self"], weights["cross"])
