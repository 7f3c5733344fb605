"""Per-head evidence of an attnlab stack (:class:`attnlab.nn.Encoder`) read off one pass and its weights.

From a pass with ``output_hidden_states`` and ``output_attentions`` (hidden states X_0..X_L, the
input of block l being X_l; maps P_l (B, H, n, n)), with N_1 the block's first norm (pre-LN) or
the identity (post-LN, where attention reads X_l itself):

    V_l,g = N_1(X_l) W_V,g + b_V,g                               (B, H_kv, n, d_v)  value vectors
    o_l,h = P_l,h V_l,g(h) W_O,h                                 (B, H, n, d)       head h's write

and the per-head numbers of :mod:`attnlab.analysis.heads.evidence`: the attention on the first
token (the sink) beside its value-weighted share (Kobayashi et al. 2020), and, for a stack with an
output head, the direct logit attribution of o_l,h to the next token through the final norm frozen
at X_L (RMSNorm: s_i = gamma / rms(X_L,i); LayerNorm: gamma / sigma and centring), gamma folded into
the unembedding, W_U uncentred unless ``center_unembed`` (each row's mean over the vocabulary
subtracted, TransformerLens' default; :func:`~attnlab.analysis.heads.evidence.direct_logit_attribution`).

From the weights alone (:func:`weight_evidence`): the copying score of every head's OV circuit
W_E diag(gamma_1) W_OV,h diag(gamma_f) W_U (Elhage et al. 2021: sum lambda / sum |lambda|) and the
Frobenius norms of W_QK,h and W_OV,h (:mod:`attnlab.analysis.heads.circuits`). A stack without an
output head (an encoder) has no W_U: its copying scores read the embedding's transpose W_E^T
(tied readout), and are labelled as such by the caller.
"""

from __future__ import annotations

from dataclasses import dataclass

from attnlab.nn.transformer import Encoder
from attnlab.nn.block import TransformerBlock

import torch
from torch import Tensor

from attnlab.analysis.heads.circuits import copying_score, qk_ov_circuits
from attnlab.analysis.heads.evidence import (
    attention_sink_share,
    direct_logit_attribution,
    norm_weighted_share,
    value_weighted_attention,
)
from attnlab.errors import ConfigError
from attnlab.ops.multihead import project


def _norm_input(block: TransformerBlock, X: Tensor) -> Tensor:
    """What the attention of ``block`` reads: N_1(X) for a pre-LN block (with its norm on), else X."""
    if block.norm_position == "pre" and block.parts.layer_norm:
        return block.norm1(X)
    return X


def value_vectors(block, X: Tensor) -> Tensor:
    """V (B, H_kv, n, d_v) of ``block`` on its input X (B, n, d)."""
    return project(_norm_input(block, X), block.attn.W_V, block.attn.b_V)


def _final_scale(model: Encoder, X: Tensor) -> tuple[Tensor, bool]:
    """(s (B, n, d), center) of the final norm frozen at X (module docstring); identity without one."""
    norm = model.final_norm
    if norm is None:
        return torch.ones_like(X), False
    if norm.variant == "rms":
        return norm.gamma / torch.sqrt(X.pow(2).mean(-1, keepdim=True) + norm.eps), False
    mu = X.mean(-1, keepdim=True)
    var = (X - mu).pow(2).mean(-1, keepdim=True)
    denom = torch.sqrt(var + norm.eps) if norm.variant == "standard" else var.sqrt() + norm.eps
    return norm.gamma / denom, True


@dataclass(frozen=True)
class SegmentEvidence:
    """The evidence of one segment, each (L, H) float64: sink (attention on the first token), sink_norm
    (its value-weighted share), dla (mean direct logit attribution to the next token; None without an
    output head); and uniform attention's sink, (1, 1), under a causal and a bidirectional mask."""

    sink: Tensor
    sink_norm: Tensor
    dla: Tensor | None
    sink_chance_causal: Tensor
    sink_chance_bidirectional: Tensor


@dataclass(frozen=True)
class WeightEvidence:
    """The evidence of the weights, each (L, H) float64: copying (Elhage's sum lambda / sum |lambda| of the
    full OV circuit), copying_positive_fraction, qk_norm and ov_norm (Frobenius norms of W_QK,h, W_OV,h)."""

    copying: Tensor
    copying_positive_fraction: Tensor
    qk_norm: Tensor
    ov_norm: Tensor


def segment_evidence(model, hidden_states: list[Tensor], attentions: list[Tensor],
                     input_ids: Tensor, *, center_unembed: bool = False) -> SegmentEvidence:
    """Per-head numbers of one unpadded segment: hidden_states [X_0..X_L] each (1, n, d), attentions
    [P_1..P_L] each (1, H, n, n), input_ids (1, n): :class:`SegmentEvidence` (W_U centred over the
    vocabulary for the DLA with ``center_unembed``)."""
    if hidden_states[0].shape[0] != 1:
        raise ConfigError("segment_evidence reads one unpadded segment at a time (batch 1)")
    W_U = model.unembedding() if hasattr(model, "unembedding") else None
    A = torch.stack([P[0] for P in attentions]).to(torch.float64)  # (L, H, n, n)
    sink = attention_sink_share(A)
    norms, outs = [], []
    for l, block in enumerate(model.blocks):
        V = value_vectors(block, hidden_states[l])[0].to(torch.float64)  # (H_kv, n, d_v)
        W_O = block.attn.W_O.to(torch.float64)
        norms.append(value_weighted_attention(A[l], V, W_O))
        if W_U is not None:
            G = A.shape[1] // V.shape[0]
            z = A[l] @ V.repeat_interleave(G, 0)  # (H, n, d_v)
            outs.append(torch.einsum("hnv,hvd->hnd", z, W_O))
    share = norm_weighted_share(A, torch.stack(norms), [0])
    dla = None
    if W_U is not None:
        X_L = hidden_states[-1][0].to(torch.float64)  # (n, d), before the final norm
        s, center = _final_scale(model, X_L.to(model.embed.W_E.dtype))
        targets = torch.cat([input_ids[0, 1:], input_ids.new_full((1,), -1)])
        dla = direct_logit_attribution(torch.stack(outs), s.to(torch.float64)[None].expand(len(outs), -1, -1),
                                       W_U.to(torch.float64),
                                       targets[None].expand(len(outs), -1), center=center,
                                       center_unembed=center_unembed).mean
    return SegmentEvidence(sink=sink.share, sink_norm=share.norm, dla=dla,
                           sink_chance_causal=sink.causal_chance.reshape(-1)[:1].reshape(1, 1),
                           sink_chance_bidirectional=sink.bidirectional_chance.reshape(-1)[:1].reshape(1, 1))


def weight_evidence(model) -> WeightEvidence:
    """:class:`WeightEvidence` (each (L, H) float64) from the weights alone.

    The full circuit F_h = W_E diag(gamma_1) W_V,g W_O,h diag(gamma_f) W_U (V x V) has the nonzero
    eigenvalues of the d_v x d_v matrix W_O,h K diag(gamma_1) W_V,g with K = diag(gamma_f) W_U W_E (d x d),
    formed once (AB and BA share their nonzero spectrum), so 270 heads cost 270 eigenproblems of
    size 64, not of size 49,152."""
    W_E = model.embed.W_E.detach().to(torch.float64)
    W_U = model.unembedding() if hasattr(model, "unembedding") else None
    W_U = W_E.T if W_U is None else W_U.detach().to(torch.float64)
    if model.final_norm is not None:
        W_U = model.final_norm.gamma.detach().to(torch.float64)[:, None] * W_U
    K = W_U @ W_E  # (d, d)
    copying, positive, qk, ov = [], [], [], []
    for block in model.blocks:
        a = block.attn
        W_Q, W_K, W_V, W_O = (W.detach().to(torch.float64) for W in (a.W_Q, a.W_K, a.W_V, a.W_O))
        W_QK, W_OV = qk_ov_circuits(W_Q, W_K, W_V, W_O)
        if block.norm_position == "pre":
            W_V = block.norm1.gamma.detach().to(torch.float64)[:, None] * W_V
        G = W_O.shape[0] // W_V.shape[0]
        small = W_O @ K @ W_V.repeat_interleave(G, 0)  # (H, d_v, d_v): W_O,h K diag(gamma_1) W_V,g(h)
        eye = torch.eye(small.shape[-1], dtype=torch.float64)
        c = copying_score(small, eye, eye)
        copying.append(c.elhage_score)
        positive.append(c.positive_fraction)
        qk.append(torch.linalg.matrix_norm(W_QK))
        ov.append(torch.linalg.matrix_norm(W_OV))
    return WeightEvidence(copying=torch.stack(copying), copying_positive_fraction=torch.stack(positive),
                          qk_norm=torch.stack(qk), ov_norm=torch.stack(ov))
