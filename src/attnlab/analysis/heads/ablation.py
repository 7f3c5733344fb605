"""Causal evidence per head: what the next-token loss does when a head's output is replaced.

For a model with an output head (an :class:`attnlab.nn.Encoder` with ``lm_head``; GPT-2, the Llama
family) on S segments of m tokens, the loss of segment s is the mean next-token cross-entropy

    loss_s = -(1/(m-1)) sum_{i<m-1} log softmax(logits_s,i)[x_s,i+1].

Head h of layer l writes z_h W_O,h with z_h = P_h V_g(h) (B, n, d_v). An ablation replaces z_h by

    zero       0
    mean       mu_h, the mean of z_h over every segment and position (one d_v vector)
    resample   z_h of another segment at the same position (segment s reads segment s+1 mod S)

and measures Delta_s = loss_s(ablated) - loss_s, per segment, so that every head's number has a
confidence interval over segments (:func:`~attnlab.analysis.heads.intervals.mean_confidence_interval`).
A positive Delta means the head helps predict the text.

Exact ablations re-run the model from the residual stream entering layer l (the layers below
are untouched by the replacement), one forward pass of L - l layers per head and kind. Every
replacement and every read of z goes through the stack's ``blocks.{l}.attn.hook_z`` (z in
TransformerLens' orientation (S, m, H, d_v)) inside ``model.hooks(...)``, which detaches it on exit,
also on error (:mod:`attnlab.nn.hooked`).
:func:`ablation_estimates` gives every head's first-order estimate from one forward and one
backward pass (attribution patching; Syed, Rager & Conmy 2023, "Attribution Patching Outperforms
Automated Circuit Discovery"):

    Delta_s ~= sum_{i, k} (z'_h - z_h)_{s,i,k} d loss_s / d z_h,s,i,k,

exact for a model linear in z_h and a first-order Taylor estimate otherwise (an ablation is not
a small change, so it can be far off where the loss curves). :func:`exact_ablations` measures
any chosen heads exactly; the two are reported side by side.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import torch
from torch import Tensor

from attnlab.errors import ConfigError
from attnlab.nn.transformer import Encoder

KINDS = ("zero", "mean", "resample")


@dataclass(frozen=True)
class Baseline:
    """One clean pass: inputs (S, m) token ids, per-segment loss (S,), the residual stream entering every
    layer X_l (S, m, d) for l = 0..L-1, every head's output z (L, S, H, m, d_v) and its mean mu (L, H, d_v)."""

    input_ids: Tensor
    loss: Tensor
    residuals: list[Tensor]
    z: Tensor
    mu: Tensor
    scored: Tensor | None = None


def _check_model(model: Encoder) -> None:
    if getattr(model, "lm_head", "none") == "none":
        raise ConfigError("head ablations measure the next-token loss, so the model needs an output head "
                          "(GPT-2 or a Llama-family decoder); this one has none")


def _nll(logits: Tensor, targets: Tensor) -> Tensor:
    """-log softmax(logits)[target] in the logits' dtype (float32 rounding ~1e-6 of a loss), then float64."""
    return -torch.log_softmax(logits, dim=-1).gather(-1, targets[..., None]).squeeze(-1).to(torch.float64)


def segment_loss(logits: Tensor, input_ids: Tensor, scored: Tensor | None = None) -> Tensor:
    """Mean next-token cross-entropy per segment: logits (S, m, l), input_ids (S, m) -> (S,) float64;
    ``scored`` (m - 1,) bool keeps only the predictions of those positions (e.g. the second copy of a
    repeated sequence, where an induction head helps)."""
    logits, targets = logits[:, :-1], input_ids[:, 1:]
    if scored is not None:
        logits, targets = logits[:, scored], targets[:, scored]
    return _nll(logits, targets).mean(-1)


def _rotary(model: Encoder, input_ids: Tensor) -> Any:
    """The stack's q/k/v map of positions 0..m-1 (RoPE's rotations; None without a qkv_transform)."""
    return model.qkv_map(torch.arange(input_ids.shape[-1], device=input_ids.device)[None], model.embed.W_E.dtype)


def _run_from(model: Encoder, X: Tensor, layer: int, rot: Any) -> Tensor:
    """Blocks layer..L-1 on the residual X entering ``layer``, then the final norm -> Z (S, m, d); the hooks
    attached to the model act as in a full pass."""
    causal = model.causal or None
    for block in model.blocks[layer:]:
        X = block(X, causal=causal, qkv_transform=rot).output
    return X if model.final_norm is None else model.final_norm(X)


def _hook_z(layer: int) -> str:
    """The name of block ``layer``'s head outputs z (TransformerLens' name)."""
    return f"blocks.{layer}.attn.hook_z"


def _loss(model: Encoder, Z: Tensor, input_ids: Tensor, scored: Tensor | None) -> Tensor:
    """:func:`segment_loss` from the final-normed residual Z (S, m, d), unembedding only the scored
    predictions (the (S, m, vocab) logits are most of an ablation's cost)."""
    Z = Z[:, :-1] if scored is None else Z[:, :-1][:, scored]
    targets = input_ids[:, 1:] if scored is None else input_ids[:, 1:][:, scored]
    return _nll(Z @ model.unembedding(), targets).mean(-1)


def baseline(model, input_ids: Tensor, scored: Tensor | None = None) -> Baseline:
    """The clean pass over ``input_ids`` (S, m) (no padding: segments of one length), recording every head;
    ``scored`` (m - 1,) bool restricts the loss to those predictions (:func:`segment_loss`)."""
    _check_model(model)
    if input_ids.ndim != 2 or input_ids.shape[0] < 2 or input_ids.shape[1] < 2:
        raise ConfigError(f"ablations need at least 2 segments of at least 2 tokens, shape (S, m); got "
                          f"{tuple(input_ids.shape)}")
    residuals: list[Tensor] = []
    zs: list[Tensor] = []
    L = len(model.blocks)
    record = ([(f"blocks.{l}.hook_resid_pre", lambda x, name: residuals.append(x)) for l in range(L)]
              + [(_hook_z(l), lambda z, name: zs.append(z.transpose(-3, -2))) for l in range(L)])  # (S, H, m, d_v)
    with torch.no_grad(), model.hooks(record):
        Z = _run_from(model, model.embed(input_ids), 0, _rotary(model, input_ids))
        loss = _loss(model, Z, input_ids, scored)
    z = torch.stack(zs)  # (L, S, H, m, d_v)
    return Baseline(input_ids, loss, residuals, z, z.mean(dim=(1, 3)), scored)


def _replacement(base: Baseline, layer: int, kind: str, fraction: float = 1.0) -> Tensor:
    """z + fraction (z' - z) of every head of ``layer`` for ``kind``: (S, H, m, d_v); fraction 1 is the
    ablation itself, a small fraction a partial one (the limit the first-order estimate is exact in)."""
    z = base.z[layer]
    if kind == "zero":
        new = torch.zeros_like(z)
    elif kind == "mean":
        new = base.mu[layer][None, :, None, :].expand_as(z)
    elif kind == "resample":
        new = z.roll(-1, dims=0)  # segment s reads segment s + 1 (mod S)
    else:
        raise ConfigError(f"unknown ablation {kind!r}: choose one of {', '.join(KINDS)}")
    return new if fraction == 1.0 else z + fraction * (new - z)


def exact_ablations(model, base: Baseline, heads: Sequence[tuple[int, int]], kinds: Sequence[str] = KINDS, *,
                    fraction: float = 1.0) -> dict[str, dict[tuple[int, int], Tensor]]:
    """kind -> (layer, head) -> Delta per segment (S,) float64, each measured by re-running the model
    from layer l with head h's output replaced (module docstring)."""
    rot = _rotary(model, base.input_ids)
    out: dict[str, dict[tuple[int, int], Tensor]] = {k: {} for k in kinds}
    with torch.no_grad():
        for (l, h) in heads:
            for kind in kinds:
                new = _replacement(base, l, kind, fraction)[:, h]

                def hook(z: Tensor, name: str, h: int = h, new: Tensor = new) -> Tensor:
                    z = z.clone()  # (S, m, H, d_v)
                    z[:, :, h] = new
                    return z

                with model.hooks([(_hook_z(l), hook)]):
                    Z = _run_from(model, base.residuals[l], l, rot)
                out[kind][(l, h)] = _loss(model, Z, base.input_ids, base.scored) - base.loss
    return out


def ablation_estimates(model, base: Baseline, kinds: Sequence[str] = KINDS, *, fraction: float = 1.0
                       ) -> dict[str, Tensor]:
    """kind -> first-order Delta (L, H, S) float64 of every head (attribution patching, module docstring):
    one forward pass with gradients to every head's output and one backward pass. The gradients are
    total derivatives: through later layers' attention as well as the residual stream."""
    rot = _rotary(model, base.input_ids)
    kept: list[Tensor] = []

    def keep(z: Tensor, name: str) -> None:
        z.retain_grad()  # (S, m, H, d_v), a view of the pass's z
        kept.append(z)

    flags = [p.requires_grad for p in model.parameters()]
    model.requires_grad_(False)
    try:
        with torch.enable_grad():
            X = base.residuals[0].detach().clone().requires_grad_(True)
            with model.hooks([(_hook_z(l), keep) for l in range(len(model.blocks))]):
                Z = _run_from(model, X, 0, rot)
            _loss(model, Z, base.input_ids, base.scored).sum().backward()
    finally:
        for p, f in zip(model.parameters(), flags):
            p.requires_grad_(f)
    grads = [z.grad.transpose(-3, -2) for z in kept]  # L x (S, H, m, d_v): d loss_s / d z (segments independent)
    out = {}
    for kind in kinds:
        rows = []
        for l, g in enumerate(grads):
            dz = _replacement(base, l, kind, fraction) - base.z[l]
            rows.append((dz.to(torch.float64) * g.to(torch.float64)).sum(dim=(-1, -2)).T)  # (H, S)
        out[kind] = torch.stack(rows)  # (L, H, S)
    return out
