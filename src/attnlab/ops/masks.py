"""Attention masks.

One convention holds everywhere in attnlab:

* a boolean ``mask`` is ``True`` where a query *may* attend to a key (the convention of
  PyTorch's ``scaled_dot_product_attention``);
* an additive (float) ``mask`` is added to the logits; ``-inf`` forbids a pair;
* ``key_padding_mask`` is boolean (B, n_k) with ``True`` marking a *padding* key (the
  meaning of PyTorch's ``nn.MultiheadAttention``): the one mask whose True forbids.

transformers' ``attention_mask`` has the opposite polarity and an integer dtype
(1 = real token, 0 = padding); :func:`key_padding_mask_from_attention_mask` converts it.
Because ``~attention_mask.bool()`` and ``attention_mask.bool()`` differ only in sign, an
inverted mask must not pass silently, so :func:`check_key_padding_mask` refuses

* a key_padding_mask that is not boolean (an integer or float tensor is what a
  transformers mask looks like), and
* a key_padding_mask that pads every key of every sequence: nothing could be attended
  to anywhere, which is what an inverted mask of an unpadded batch looks like.

Single sequences (or rows) with every key padded, within a batch that has real keys
elsewhere, stay legal: their attention weights and outputs are 0 (see
:mod:`attnlab.ops.softmax`). Checking "every key of every sequence" reads a value of the
mask, which for a mask on an accelerator means waiting for the device (a host
synchronisation in every operator call, every layer). So the operators read it only from
masks on the CPU, and a pretrained model's entry point
(:meth:`attnlab.pretrained.loader.PretrainedModel.position_ids`) reads it once per forward
pass on any device; on an accelerator an operator called directly with an all-padding mask
returns its well-defined answer, zeros.

Causal alignment (the masked decoder of math-behind-transformers §1.2.5, eq. 10):

* ``"top_left"``: query i sees keys j <= i (PyTorch's ``is_causal``);
* ``"bottom_right"``: query i sees keys j <= i + (n_k - n_q), so the last query
  sees every key. This is what a decoder with cached keys needs.

Both coincide when n_q == n_k; ``causal=True`` is accepted only then.
"""

from __future__ import annotations

import math
from typing import Literal

import torch
from torch import Tensor

from attnlab.errors import ConfigError

CausalAlignment = Literal["top_left", "bottom_right"]


def causal_mask(
    n_q: int, n_k: int, *, alignment: CausalAlignment = "top_left", device=None
) -> Tensor:
    """Boolean (n_q, n_k) mask, True where key j is visible to query i.

    top_left:     allowed[i, j] = j <= i
    bottom_right: allowed[i, j] = j <= i + (n_k - n_q)
    """
    if alignment not in ("top_left", "bottom_right"):
        raise ConfigError(
            f"causal alignment must be 'top_left' or 'bottom_right', got {alignment!r}"
        )
    offset = 0 if alignment == "top_left" else n_k - n_q
    i = torch.arange(n_q, device=device)[:, None]
    j = torch.arange(n_k, device=device)[None, :]
    return j <= i + offset


def resolve_causal(causal: bool | str | None, n_q: int, n_k: int) -> CausalAlignment | None:
    """Turn the user-facing ``causal`` argument into an alignment or None."""
    if causal is None or causal is False:
        return None
    if causal is True:
        if n_q != n_k:
            raise ConfigError(
                f"causal=True is ambiguous with {n_q} queries and {n_k} keys: "
                "pass causal='top_left' or causal='bottom_right'"
            )
        return "top_left"
    if causal in ("top_left", "bottom_right"):
        return causal  # type: ignore[return-value]
    raise ConfigError(
        f"causal must be False, True, 'top_left' or 'bottom_right', got {causal!r}"
    )


def combine_masks(
    n_q: int,
    n_k: int,
    *,
    batch_shape: tuple[int, ...] = (),
    mask: Tensor | None = None,
    causal: bool | str | None = None,
    key_padding_mask: Tensor | None = None,
    device=None,
) -> tuple[Tensor | None, Tensor | None]:
    """Merge every kind of mask into (allowed, additive) for logits of shape
    (*batch_shape, n_q, n_k).

    Returns
    -------
    allowed : bool tensor broadcastable to the logits, or None when every pair
        is allowed.
    additive : float tensor broadcastable to the logits with finite or ``-inf``
        entries, or None. ``-inf`` entries of a float mask are folded into
        ``allowed`` as well, so ``allowed`` alone decides which rows are fully
        masked.

    ``key_padding_mask`` has shape (B, n_k) with B = batch_shape[0]; it is
    broadcast as (B, 1, ..., 1, n_k).
    """
    allowed: Tensor | None = None
    additive: Tensor | None = None
    logits_shape = (*batch_shape, n_q, n_k)

    def _and(a: Tensor | None, b: Tensor) -> Tensor:
        return b if a is None else a & b

    if mask is not None:
        if not _broadcasts_to(tuple(mask.shape), logits_shape):
            raise ConfigError(
                f"mask has shape {tuple(mask.shape)}, which does not broadcast to the "
                f"logits' shape {logits_shape} (..., queries, keys)"
            )
        if mask.dtype == torch.bool:
            allowed = _and(allowed, mask)
        elif mask.is_floating_point():
            top = float(mask.amax()) if mask.numel() else 0.0  # one pass: NaN propagates, +inf shows
            if math.isnan(top) or top == math.inf:
                raise ConfigError("an additive mask may hold finite values and -inf only, not NaN or +inf")
            additive = mask
            allowed = _and(allowed, mask != float("-inf"))
        else:
            raise ConfigError(f"mask must be bool or floating point, got dtype {mask.dtype}")

    alignment = resolve_causal(causal, n_q, n_k)
    if alignment is not None:
        allowed = _and(allowed, causal_mask(n_q, n_k, alignment=alignment, device=device))

    if key_padding_mask is not None:
        check_key_padding_mask(key_padding_mask, batch_shape, n_k)
        keep = ~key_padding_mask  # (B, n_k)
        shape = (batch_shape[0],) + (1,) * (len(batch_shape) - 1) + (1, n_k)
        allowed = _and(allowed, keep.reshape(shape))  # (B, 1, ..., 1, n_k)
    return allowed, additive


def check_key_padding_mask(key_padding_mask: Tensor, batch_shape: tuple[int, ...], n_k: int, *,
                           values: bool | None = None) -> None:
    """ConfigError unless ``key_padding_mask`` is boolean of shape (batch_shape[0], n_k) and
    leaves at least one key of the batch unpadded (the rules of the module docstring).

    values: read the mask's values for the all-padding check: True always, False never,
    None (default) only when the mask is on the CPU, where it costs no synchronisation.
    """
    if key_padding_mask.dtype != torch.bool:
        raise ConfigError(
            f"key_padding_mask must be boolean (True marks a padding key), got {key_padding_mask.dtype}; "
            "a transformers attention_mask (1 = real token) converts with "
            "attnlab.ops.masks.key_padding_mask_from_attention_mask"
        )
    if not batch_shape:
        raise ConfigError("key_padding_mask needs batched inputs of shape (batch, ..., n, d)")
    expected = (batch_shape[0], n_k)
    if tuple(key_padding_mask.shape) != expected:
        raise ConfigError(
            f"key_padding_mask must have shape (batch, n_k) = {expected}, "
            f"got {tuple(key_padding_mask.shape)}"
        )
    if values is None:
        values = key_padding_mask.device.type == "cpu"
    if values and key_padding_mask.numel() and bool(key_padding_mask.all()):
        raise ConfigError(
            "key_padding_mask marks every key of every sequence as padding (True = padding): if it is "
            "a transformers attention_mask (1 = real token), convert it with "
            "attnlab.ops.masks.key_padding_mask_from_attention_mask"
        )


def key_padding_mask_from_attention_mask(attention_mask: Tensor) -> Tensor:
    """transformers' ``attention_mask`` (B, n), 1 = real token, 0 = padding -> attnlab's
    boolean ``key_padding_mask`` (B, n), True = padding: ``attention_mask == 0``.

    The mask may be integer, boolean, or floating point holding only 0 and 1; anything else
    (an additive mask of 0 and -inf, a 4-D extended mask) is a ConfigError.
    """
    if not isinstance(attention_mask, Tensor):
        raise ConfigError(f"attention_mask must be a tensor of 0 and 1, got {type(attention_mask).__name__}")
    if attention_mask.ndim != 2:
        raise ConfigError(
            f"attention_mask must have shape (batch, n) with 1 = real token, got {tuple(attention_mask.shape)}"
        )
    if attention_mask.dtype == torch.bool:
        return ~attention_mask
    if attention_mask.is_complex() or not bool(((attention_mask == 0) | (attention_mask == 1)).all()):
        raise ConfigError(
            "attention_mask must hold only 0 (padding) and 1 (real token); an additive mask of 0 and "
            "-inf goes to mask=, not through this conversion"
        )
    return attention_mask == 0

def _broadcasts_to(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    """True iff a tensor of ``shape`` broadcasts to exactly ``target``."""
    if len(shape) > len(target):
        return False
    return all(a == b or a == 1 for a, b in zip(reversed(shape), reversed(target)))


def reject_finite_additive(additive: Tensor | None, what: str) -> None:
    """Operators without logits accept float masks of 0 and -inf only."""
    if additive is not None and bool(((additive != 0) & torch.isfinite(additive)).any()):
        raise ConfigError(
            f"finite non-zero additive mask values have no logits to shift in {what}; "
            "pass a boolean mask (or a float mask of 0 and -inf)"
        )
