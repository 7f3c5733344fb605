"""One attention map fitted exactly by every family of Sigma, the thesis's random search, and the baselines.

math-behind-transformers §3.1.2 (eqs. 21-22), error box eps = 0 (the plain L1 distance): a square map
H (n, n) is fitted by Sigma_1 = {I}, the best clamped shift |k| <= w_max, the best permutation matrix,
Sigma_2(w1, w2 <= w_max) with every dropout pattern and Sigma_3 (any blocks)
(:func:`~attnlab.papers.transformer_math.head_structure.fit_families`); d_Sigma = min(d_shift, d_Sigma2,
d_Sigma3). :func:`random_search` re-enacts the thesis's search (random members, the best kept), which the
exact minimum can only be at or below; :func:`baselines` fits uniform attention and random row-stochastic
maps under a head's own mask (bidirectional, or causal: row i over the keys j <= i).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attnlab.analysis.heads.maps import uniform_attention
from attnlab.analysis.heads.projection import random_attention
from attnlab.papers.transformer_math.head_structure import StructureFit, best_sigma, fit_families, sigma2, sigma3

FITS = ("sigma1", "shift", "permutation", "sigma2", "sigma3")
MASKS = ("bidirectional", "causal")


@dataclass(frozen=True)
class SigmaFits:
    """The exact fits (eps = 0, the plain L1 distance of eq. 22) of one square map H (n, n) to each family."""

    sigma1: StructureFit  # Sigma_1 = {I}
    shift: StructureFit  # the best clamped shift of the diagonal, |k| <= w_max
    permutation: StructureFit  # the best permutation matrix
    sigma2: StructureFit  # Sigma_2(w1, w2 <= w_max), every dropout pattern
    sigma3: StructureFit  # Sigma_3, any blocks

    @property
    def sigma(self) -> StructureFit:
        """The fit realising d_Sigma = min(d_shift, d_Sigma2, d_Sigma3) (:func:`best_sigma`)."""
        return best_sigma(self.by_family())

    def of(self, family: str) -> StructureFit:
        """The fit of ``family``, one of :data:`FITS`."""
        return self.by_family()[family]

    def by_family(self) -> dict[str, StructureFit]:
        """{family: fit} in the order of :data:`FITS`, as :func:`fit_families` returns it."""
        return {"sigma1": self.sigma1, "shift": self.shift, "permutation": self.permutation, "sigma2": self.sigma2,
                "sigma3": self.sigma3}


def fit_all(H: torch.Tensor, w_max: int) -> SigmaFits:
    """The :class:`SigmaFits` of one square map H (n, n), eps = 0, shifts and bandwidths up to ``w_max``."""
    return SigmaFits(**fit_families(H, w_max))


def random_search(H: torch.Tensor, draws: int, w_max: int, seed: int) -> float:
    """The thesis's search: the smallest L1 distance of H (n, n) to I (Sigma_1) and to ``draws`` random
    members drawn from ``seed``, alternately of Sigma_2(w1, w2 <= w_max, p = 0.4) and of Sigma_3 (2 tokens,
    windows 3). An upper bound on the exact d_Sigma of :func:`fit_all`, which minimises over a superset."""
    n = H.shape[-1]
    rng = np.random.default_rng(seed)
    best = float((H - torch.eye(n, dtype=H.dtype)).abs().sum())
    for k in range(draws):
        if k % 2 == 0:
            w1, w2 = (int(v) for v in rng.integers(0, w_max + 1, size=2))
            P = sigma2(n, w1, w2, 0.4, seed=int(rng.integers(2**31)))
        else:
            w = min(3, n // 2)
            a1 = int(rng.integers(0, n - 2 * w + 1))
            a2 = int(rng.integers(a1 + w, n - w + 1))
            P = sigma3(n, [a1 + int(rng.integers(w)), a2 + int(rng.integers(w))], [w, w], [a1, a2])
        best = min(best, float((H - P).abs().sum()))
    return best


@dataclass(frozen=True)
class Baselines:
    """Per family, the normalised distance of the uniform map and the mean over random maps, under one
    mask (``mask``: bidirectional or causal)."""

    uniform: dict[str, float]  # family (FITS and "sigma") -> d / 2n of uniform attention
    random: dict[str, float]  # family -> mean d / 2n over the random maps
    mask: str = "bidirectional"


def baselines(n: int, w_max: int, draws: int, seed: int, *, causal: bool = False) -> Baselines:
    """The fits of uniform attention and of ``draws`` random maps under the mask a head works with:
    a causal head is compared with causal uniform and causal random attention."""
    U = uniform_attention(n, causal=causal)
    R = random_attention(n, seed=seed, batch=(draws,), causal=causal)

    def norm(fits: SigmaFits) -> dict[str, float]:
        out = {k: f.normalized for k, f in fits.by_family().items()}
        out["sigma"] = fits.sigma.normalized
        return out

    uni = norm(fit_all(U, w_max))
    rand = [norm(fit_all(r, w_max)) for r in R]
    return Baselines(uni, {k: float(np.mean([r[k] for r in rand])) for k in uni}, MASKS[int(causal)])

