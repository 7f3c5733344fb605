"""Every head of a model fitted by Sigma on its maps: mean distances, labels and Voita et al.'s roles.

math-behind-transformers §3.1 and §3.1.1: a head's S maps (crop x crop) are each fitted exactly
(:func:`~attnlab.papers.transformer_math.sigma_fits.fit_all`, eq. 22 with eps = 0) and by the thesis's
random search; the distances averaged over the maps label the head
(:func:`~attnlab.papers.transformer_math.head_structure.label_from_distances`):

    unstructured   if d_Sigma / 2n >= the uniform map's d_Sigma / 2n under the same mask;
    positional     else if min(d_Sigma1, d_shift) <= d_Sigma + margin 2n;
    syntactic      else if d_Sigma2 <= d_Sigma3;
    special-token  else if at least half the rows of the Sigma_3 blocks attend a special token;
    rare-token     otherwise;

and, independently, by Voita et al.'s positional and rare-token rules
(:func:`attnlab.analysis.heads.voita.voita_labels`, averaged over the maps).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch

from attnlab.analysis.heads.projection import normalized_distance
from attnlab.analysis.heads.voita import POSITIONAL_FRACTION, RARE_TOKEN_FRACTION, voita_labels
from attnlab.errors import ConfigError
from attnlab.papers.transformer_math.head_structure import LABELS, SIGMA, label_from_distances, special_share
from attnlab.papers.transformer_math.head_taxonomy import HeadTaxonomy
from attnlab.papers.transformer_math.sigma_fits import FITS, MASKS, Baselines, fit_all, random_search
from attnlab.papers.transformer_math.thesis_maps import float32_rank


class FitSettings(Protocol):
    """What :func:`fit_heads` reads of a config: the crop side n, the largest bandwidth and shift w_max,
    the random search's draws per map, and the positional margin (a share of 2n)."""

    crop: int
    w_max: int
    search_draws: int
    margin: float


@dataclass(frozen=True)
class HeadFit:
    """One head fitted on its S maps (crop x crop) by :func:`fit_heads`: L1 distances d (eq. 22, eps = 0)
    averaged over the maps, its labels and Voita et al.'s roles, against the baselines of its mask."""

    model: str  # "translation 1 head", "MiniLM", ...
    kind: str  # "encoder self", "decoder self", "cross" or "layer <l>"
    mask: str  # bidirectional or causal
    head: int
    n: int  # side of the fitted maps (the crop)
    maps: int  # S, maps fitted
    d_sigma1: float  # d to Sigma_1 = {I}
    d_shift: float  # d to the best shift |k| <= w_max
    d_permutation: float  # d to the best permutation matrix
    d_sigma2: float  # d to Sigma_2(w <= w_max)
    d_sigma3: float  # d to Sigma_3
    d_sigma: float  # mean over the maps of d_Sigma = min(d_shift, d_Sigma2, d_Sigma3)
    per_entry: float  # d_sigma / n^2
    normalized: float  # d_sigma / 2n
    random_search: float  # mean over the maps of the thesis-style random search's minimum
    exact_minus_search_max: float  # max over the maps of (exact d_Sigma - random-search minimum), <= 0
    best_family: str  # the family of d_Sigma on the mean distances (shift, sigma2 or sigma3)
    label: str  # the Sigma label (module docstring)
    special_share: float  # share of the Sigma_3 blocks' rows on special tokens, mean over the maps
    uniform_sigma: float  # d_Sigma / 2n of uniform attention under the mask
    random_sigma: float  # mean d_Sigma / 2n of random maps under the mask
    full_rank_share: float  # share of the maps of full rank at float32 precision
    voita_positional: bool  # Voita's positional rule (argmax at offset -1 or +1 in >= 90% of rows)
    voita_offset_fraction: float  # the larger of those two argmax fractions
    voita_rare: bool  # Voita's rare-token rule (argmax on the rarest token in >= 90% of rows)
    voita_rare_argmax: float  # that argmax fraction
    confidence: float  # mean largest weight of a row
    example_fit: torch.Tensor  # (n, n) the best member of best_family for the first map
    example_map: torch.Tensor  # (n, n) the first map
    taxonomy: HeadTaxonomy | None = None  # pretrained models only
    mass_kept: float | None = None  # share of the attention inside the crop (1.0: nothing cropped)
    layer: int | None = None  # pretrained models only

    def distance(self, family: str) -> float:
        """d to ``family``: one of :data:`FITS`, or "sigma" for d_Sigma."""
        return {"sigma1": self.d_sigma1, "shift": self.d_shift, "permutation": self.d_permutation,
                "sigma2": self.d_sigma2, "sigma3": self.d_sigma3, "sigma": self.d_sigma}[family]

    def to_dict(self) -> dict:
        """The head's row as results.json stores it: every column but the example maps, the taxonomy's
        columns flattened, mass_kept and layer where set."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
               if f.name not in ("example_fit", "example_map", "taxonomy", "mass_kept", "layer")}
        if self.taxonomy is not None:
            out.update(self.taxonomy.to_dict())
        if self.mass_kept is not None:
            out["mass_kept"] = self.mass_kept
        if self.layer is not None:
            out["layer"] = self.layer
        return out


def fit_heads(maps: list[torch.Tensor], frequencies: list[torch.Tensor], *, causal: bool, cfg: FitSettings,
              seed: int, model: str, kind: str, base: Baselines, special: list[list[int]] | None = None) -> list[HeadFit]:
    """One :class:`HeadFit` per head: mean distances over the maps (each (H, n, n)), labels, Voita roles,
    against ``base`` (the baselines of the head's mask); ``special``: the special-token key positions of
    each map."""
    if base.mask != MASKS[int(causal)]:
        raise ConfigError(f"a {MASKS[int(causal)]} head needs {MASKS[int(causal)]} baselines, got {base.mask}")
    n = cfg.crop
    A = torch.stack(maps)  # (S, H, n, n)
    F = torch.stack(frequencies)  # (S, n)
    S, n_heads = A.shape[0], A.shape[1]
    voita = voita_labels(A.transpose(0, 1), frequencies=F.expand(n_heads, S, n), causal=causal)
    rows = []
    for h in range(n_heads):
        per = [fit_all(A[s, h], cfg.w_max) for s in range(S)]
        d = {k: float(np.mean([p.of(k).distance for p in per])) for k in FITS}
        d["sigma"] = float(np.mean([p.sigma.distance for p in per]))
        searched = [random_search(A[s, h], cfg.search_draws, cfg.w_max, seed + 7919 * s + h) for s in range(S)]
        search = float(np.mean(searched))
        gap = max(p.sigma.distance - q for p, q in zip(per, searched))
        fam = min(SIGMA, key=lambda k: d[k])  # the family of d_Sigma on the mean distances
        offs = torch.nan_to_num(voita.offset_fractions[h], nan=0.0).mean(0)  # (2,)
        rare = float(voita.rare_argmax[h].mean())
        spec = float(np.mean([special_share(p.sigma3, special[s] if special else []) for s, p in enumerate(per)]))
        ranks = [float32_rank(A[s, h])[0] for s in range(S)]
        rows.append(HeadFit(
            model=model, kind=kind, mask=base.mask, head=h, n=n, maps=S, d_sigma1=d["sigma1"], d_shift=d["shift"],
            d_permutation=d["permutation"], d_sigma2=d["sigma2"], d_sigma3=d["sigma3"], d_sigma=d["sigma"],
            per_entry=d["sigma"] / n**2, normalized=normalized_distance(d["sigma"], n), random_search=search,
            exact_minus_search_max=gap, best_family=fam,
            label=label_from_distances(d, n, base.uniform["sigma"], cfg.margin, spec), special_share=spec,
            uniform_sigma=base.uniform["sigma"], random_sigma=base.random["sigma"],
            full_rank_share=sum(r == n for r in ranks) / S, voita_positional=bool(offs.max() >= POSITIONAL_FRACTION),
            voita_offset_fraction=float(offs.max()), voita_rare=rare >= RARE_TOKEN_FRACTION, voita_rare_argmax=rare,
            confidence=float(voita.confidence[h].mean()), example_fit=per[0].of(fam).P, example_map=A[0, h]))
    return rows


@dataclass(frozen=True)
class LabelFractions:
    """Shares of a set of heads (rows of :func:`fit_heads`) under each Sigma label (module docstring), each
    in [0, 1] and summing to 1 over the five labels, and under Voita et al.'s two rules (independent of them)."""

    positional: float
    syntactic: float
    rare_token: float
    special_token: float
    unstructured: float
    voita_positional: float  # argmax at offset -1 or +1 in >= 90% of rows
    voita_rare_token: float  # argmax on the rarest token in >= 90% of rows

    def by_label(self) -> dict[str, float]:
        """{label: share} over :data:`LABELS`, in that order."""
        return {"positional": self.positional, "syntactic": self.syntactic, "rare-token": self.rare_token,
                "special-token": self.special_token, "unstructured": self.unstructured}

    def to_dict(self) -> dict[str, float]:
        """The shares keyed by label, then "voita positional" and "voita rare-token", as results.json stores them."""
        return {**self.by_label(), "voita positional": self.voita_positional, "voita rare-token": self.voita_rare_token}


def fractions(rows: list[HeadFit]) -> LabelFractions:
    """The :class:`LabelFractions` of the heads ``rows``."""
    n = len(rows)
    share = {lab: sum(r.label == lab for r in rows) / n for lab in LABELS}
    return LabelFractions(positional=share["positional"], syntactic=share["syntactic"],
                          rare_token=share["rare-token"], special_token=share["special-token"],
                          unstructured=share["unstructured"],
                          voita_positional=sum(r.voita_positional for r in rows) / n,
                          voita_rare_token=sum(r.voita_rare for r in rows) / n)
