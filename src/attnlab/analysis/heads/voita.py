"""Voita et al. 2019's head roles: positional, syntactic and rare-token heads, and confidence.

E. Voita, D. Talbot, F. Moiseev, R. Sennrich, I. Titov, "Analyzing Multi-Head Self-Attention:
Specialized Heads Do the Heavy Lifting, the Rest Can Be Pruned", ACL 2019 (the text's [12]).
Their code (github.com/lena-voita/the-story-of-heads) prunes heads and has no role
classifier, so the rules below are the paper's sentences made exact. A: (..., n, n)
row-stochastic maps, rows are queries (:mod:`attnlab.analysis.heads.maps`).

    positional   a head is positional if, for one offset o in {-1, +1}, the maximum of row i
                 falls on key i + o in >= POSITIONAL_FRACTION = 90% of the rows, counted over the
                 rows where key i + o exists (is real, and visible when causal). "Falls on" is
                 a_{i,i+o} = max_j a_ij, so a tie for the maximum counts (a deterministic reading
                 of argmax that does not depend on the order of the keys). ``ties="split"``
                 instead credits a tie of m keys 1/m each: the expected fraction when the tie is
                 broken at random. Uniform attention ties on every row, so the chance level of
                 an argmax score is read with ties split: 1/|K_i| per row, not 1.
    confidence   mean over query rows of max_j a_ij, leaving the ``exclude`` positions (Voita's
                 end-of-sentence token) out both as queries and as keys: attention parked on EOS
                 is not confidence (the paper's "excluding EOS" names no side; we take both).
    rare token   given a frequency f_p for the token at every position p, the rarest positions
                 R = argmin_p f_p over the real tokens (all of them on a tie);
                   rare_mass   = mean_i sum_{j in R} a_ij      (attention on the rarest token)
                   rare_argmax = the fraction of rows whose maximum falls on R
                 over the rows that can see R (all, or i >= min R when causal). Labelled
                 rare-token when rare_argmax >= RARE_TOKEN_FRACTION = 0.9, the positional rule's
                 90% carried over (the paper gives no number for this role).
    syntactic    for gold heads h_i of the scored tokens, the head's prediction is
                 argmax_{j != i, j not ignored} a_ij; accuracy = mean [prediction = h_i]; the
                 baseline predicts h_i = i + o for the best fixed offset o (the most frequent
                 relative position, which is the best offset); a head is syntactic for the
                 relation when accuracy >= baseline + SYNTACTIC_MARGIN = 0.10. Filter the gold
                 heads to one relation (nsubj, dobj, amod, advmod) by setting the others to -1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch
from torch import Tensor

from attnlab.analysis.heads.maps import as_maps, key_set, per_position, real_tokens, row_mean, visible_keys
from attnlab.config import check_choice, check_ints
from attnlab.errors import ConfigError

POSITIONAL_FRACTION = 0.9  # "at least 90% of the time"
RARE_TOKEN_FRACTION = 0.9
SYNTACTIC_MARGIN = 0.10  # "at least 10 points above the baseline"
VOITA_OFFSETS = (-1, 1)
TIES = ("count", "split")
BASELINE_OFFSETS = (-3, -2, -1, 1, 2)  # the fixed offsets Clark et al. compare with


def _tied(A: Tensor, vis: Tensor, ties: str) -> tuple[Tensor, Tensor]:
    """(rowmax (..., n), credit (..., n)): each row's maximum over its visible keys and what one key at
    that maximum is credited: 1 (ties="count") or 1/m for a tie of m keys (ties="split")."""
    check_choice("ties", ties, TIES)
    rowmax = torch.where(vis, A, -1.0).amax(-1)
    if ties == "count":
        return rowmax, torch.ones_like(rowmax)
    m = (vis & (A >= rowmax[..., None])).sum(-1).clamp_min(1).to(torch.float64)
    return rowmax, 1.0 / m


def offset_argmax_fraction(A, offsets: Sequence[int] = VOITA_OFFSETS, *, key_padding_mask=None,
                           causal: bool = False, ties: str = "count") -> Tensor:
    """F (..., len(offsets)): for each offset o, the fraction of rows whose maximum falls on key i + o,
    over the real rows where key i + o is a visible real key (NaN where there is none); a tie for the
    maximum counts fully or is split (module docstring, ``ties``)."""
    offsets = check_ints("offsets", offsets)
    A = as_maps(A)
    real = real_tokens(A, key_padding_mask)
    vis = visible_keys(A, real, causal)
    n = A.shape[-1]
    rowmax, credit = _tied(A, vis, ties)  # (..., n)
    i = torch.arange(n)
    out = []
    for o in offsets:
        j = i + o
        exists = (j >= 0) & (j < n)
        jc = j.clamp(0, n - 1)
        at = torch.gather(A, -1, jc.expand(A.shape[:-1])[..., None])[..., 0]  # a_{i, i+o}, (..., n)
        ok = exists & torch.gather(vis, -1, jc.expand(A.shape[:-1])[..., None])[..., 0] & real
        out.append(row_mean((at >= rowmax).to(torch.float64) * credit, ok))
    return torch.stack(out, -1)


def confidence(A, *, key_padding_mask=None, exclude=()) -> Tensor:
    """Mean max weight (...) over the real query rows not in ``exclude``, the max over keys not in
    ``exclude`` (positions, or a bool mask (..., n), e.g. the EOS token)."""
    A = as_maps(A)
    real = real_tokens(A, key_padding_mask)
    keep = real & ~key_set(A, exclude, name="exclude")
    return row_mean(torch.where(keep[..., None, :], A, 0.0).amax(-1), keep)


def rare_token_scores(A, frequencies, *, key_padding_mask=None, causal: bool = False,
                      ties: str = "count") -> tuple[Tensor, Tensor]:
    """(rare_mass, rare_argmax), each (...): the attention on the rarest token(s) and the fraction of
    rows whose maximum falls there (module docstring; ``ties`` as in :func:`offset_argmax_fraction`).
    frequencies: (..., n) per position."""
    A = as_maps(A)
    real = real_tokens(A, key_padding_mask)
    f = per_position(torch.as_tensor(frequencies, dtype=torch.float64), A, name="frequencies")
    if not bool(torch.isfinite(f).all()):
        raise ConfigError("frequencies must be finite numbers, one per position")
    fmin = torch.where(real, f, torch.inf).amin(-1, keepdim=True)
    rare = real & (f == fmin)  # (..., n)
    vis = visible_keys(A, real, causal)
    sees = (vis & rare[..., None, :]).any(-1) & real  # (..., n): row i can attend a rarest position
    mass = (A * rare[..., None, :]).sum(-1)
    rowmax, credit = _tied(A, vis, ties)
    at_max = rare[..., None, :] & vis & (A >= rowmax[..., None])  # rarest keys tied at the row maximum
    hit = at_max.any(-1).to(torch.float64) if ties == "count" else at_max.sum(-1).to(torch.float64) * credit
    return row_mean(mass, sees), row_mean(hit, sees)


@dataclass(frozen=True)
class VoitaLabels:
    """positional: bool (...); positional_offset: int (...) the offset that decided it (0 if none);
    offset_fractions: (..., len(offsets)) for ``offsets``; confidence: (...);
    rare: bool (...) or None without frequencies, with rare_mass and rare_argmax (...);
    thresholds: the constants used."""

    positional: Tensor
    positional_offset: Tensor
    offset_fractions: Tensor
    offsets: tuple[int, ...]
    confidence: Tensor
    rare: Tensor | None
    rare_mass: Tensor | None
    rare_argmax: Tensor | None
    thresholds: dict

    def summary(self, index: Sequence[int] = ()) -> str:
        """One line for one map: its roles with the numbers and thresholds behind them."""
        idx = tuple(index)
        frac = ", ".join(f"{o:+d}: {f:.3f}" for o, f in zip(self.offsets, self.offset_fractions[idx].tolist()))
        roles = ([f"positional {int(self.positional_offset[idx]):+d}"] if bool(self.positional[idx]) else []) + (
            ["rare-token"] if self.rare is not None and bool(self.rare[idx]) else [])
        line = (f"{', '.join(roles) or 'no role'}: argmax at offset {frac} (>= "
                f"{self.thresholds['positional_fraction']:g}); confidence {self.confidence[idx].item():.3f}")
        if self.rare_argmax is not None:
            line += (f"; rarest token: argmax {self.rare_argmax[idx].item():.3f} (>= "
                     f"{self.thresholds['rare_token_fraction']:g}), mass {self.rare_mass[idx].item():.3f}")
        return line


def voita_labels(A, *, key_padding_mask=None, causal: bool = False, frequencies=None, exclude=(),
                 offsets: Sequence[int] = VOITA_OFFSETS, ties: str = "count") -> VoitaLabels:
    """Positional and rare-token roles and confidence of maps A (..., n, n) (module docstring);
    ``ties="split"`` reads the argmax scores with ties split (for chance levels)."""
    F = offset_argmax_fraction(A, offsets, key_padding_mask=key_padding_mask, causal=causal, ties=ties)
    mass = argmax = None
    if frequencies is not None:
        mass, argmax = rare_token_scores(A, frequencies, key_padding_mask=key_padding_mask, causal=causal,
                                         ties=ties)
    return voita_labels_from_scores(F, offsets, confidence(A, key_padding_mask=key_padding_mask, exclude=exclude),
                                    rare_mass=mass, rare_argmax=argmax)


def voita_labels_from_scores(offset_fractions: Tensor, offsets: Sequence[int], confidence: Tensor, *,
                             rare_mass: Tensor | None = None, rare_argmax: Tensor | None = None) -> VoitaLabels:
    """The roles of the module docstring decided on given scores (..., len(offsets)) and (...),
    e.g. averages over documents: positional where the best offset's fraction is >=
    POSITIONAL_FRACTION, rare-token where rare_argmax >= RARE_TOKEN_FRACTION."""
    offsets = check_ints("offsets", offsets)
    F = torch.as_tensor(offset_fractions, dtype=torch.float64)
    best = torch.nan_to_num(F, nan=-1.0).amax(-1)
    which = torch.nan_to_num(F, nan=-1.0).argmax(-1)
    positional = best >= POSITIONAL_FRACTION
    offs = torch.tensor(tuple(offsets))
    rare = None if rare_argmax is None else rare_argmax >= RARE_TOKEN_FRACTION
    return VoitaLabels(positional=positional, positional_offset=torch.where(positional, offs[which], 0),
                       offset_fractions=F, offsets=tuple(offsets), confidence=confidence,
                       rare=rare, rare_mass=rare_mass, rare_argmax=rare_argmax,
                       thresholds={"positional_fraction": POSITIONAL_FRACTION,
                                   "rare_token_fraction": RARE_TOKEN_FRACTION})


@dataclass(frozen=True)
class DependencyAccuracy:
    """Counts per map, each of the maps' leading shape (...): hits (the head's argmax is the gold
    head), offset_hits (..., len(offsets)) (i + o is the gold head), scored (tokens with a gold
    head). Pool documents by summing counts (:meth:`pooled`), then read the rates."""

    hits: Tensor
    offset_hits: Tensor
    scored: Tensor
    offsets: tuple[int, ...]
    margin: float = SYNTACTIC_MARGIN

    @property
    def accuracy(self) -> Tensor:
        return self.hits / self.scored.clamp_min(1)

    @property
    def offset_accuracy(self) -> Tensor:
        return self.offset_hits / self.scored.clamp_min(1)[..., None]

    @property
    def baseline(self) -> Tensor:
        """The best fixed-offset accuracy (...)."""
        return self.offset_accuracy.amax(-1)

    @property
    def best_offset(self) -> Tensor:
        return torch.tensor(self.offsets)[self.offset_accuracy.argmax(-1)]

    @property
    def syntactic(self) -> Tensor:
        """accuracy >= baseline + margin (Voita et al.'s rule)."""
        return self.accuracy >= self.baseline + self.margin

    def pooled(self, dims: Sequence[int] = (0,)) -> "DependencyAccuracy":
        """The counts summed over ``dims`` (e.g. the documents axis)."""
        dims = tuple(d % self.hits.ndim for d in dims)
        return DependencyAccuracy(self.hits.sum(dims), self.offset_hits.sum(dims), self.scored.sum(dims),
                                  self.offsets, self.margin)


def dependency_accuracy(A, gold_heads, *, key_padding_mask=None, ignore=(),
                        offsets: Sequence[int] = BASELINE_OFFSETS) -> DependencyAccuracy:
    """How often each head's argmax is the gold syntactic head (module docstring, "syntactic").

    gold_heads: int (..., n), the position of token i's head, -1 where token i is not scored
    (the root, punctuation, other relations), aligned as :func:`per_position`.
    ignore: positions (or a bool mask) never predicted, e.g. [CLS] and [SEP] as Clark et al. do.
    """
    offsets = check_ints("offsets", offsets)
    A = as_maps(A)
    n = A.shape[-1]
    gold = per_position(torch.as_tensor(gold_heads).to(torch.int64), A, name="gold_heads")
    real = real_tokens(A, key_padding_mask)
    scored = real & (gold >= 0)
    if int(scored.sum()) == 0:
        raise ConfigError("gold_heads scores no token: give the head position of at least one real token")
    if bool(((gold >= n) & scored).any()):
        raise ConfigError(f"gold_heads must be positions in [0, {n}) or -1, got {int(gold.max())}")
    allowed = real[..., None, :] & ~torch.eye(n, dtype=torch.bool) & ~key_set(A, ignore, name="ignore")[..., None, :]
    pred = torch.where(allowed, A, -1.0).argmax(-1)  # (..., n)
    i = torch.arange(n)
    offset_hits = torch.stack([((i + o == gold) & scored).sum(-1) for o in offsets], -1).to(torch.float64)
    return DependencyAccuracy(hits=((pred == gold) & scored).sum(-1).to(torch.float64), offset_hits=offset_hits,
                              scored=scored.sum(-1).to(torch.float64), offsets=tuple(offsets))
