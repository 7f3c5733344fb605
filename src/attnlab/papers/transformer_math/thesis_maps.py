"""The thesis's own attention maps, fitted exactly as the thesis fitted them.

The math text's §3.1 rests on attention maps of a one-layer, 8-head translation model
(Figs. 11-12). Its author saved eight of them (``code experiments/matrix_list.pkl`` in the
public thesis repository, EddieConti/Master-Thesis-UB): each is 350 x 350, 16 real key
columns, captured with dropout on (p = 0.1, kept weights scaled by 1/0.9), so the rows of a
16 x 16 crop sum to 0.23-1.11, not 1. The thesis's ``Attn_approx.ipynb`` cuts each map to
``[:16, :16]`` and keeps the smallest L1 distance (eq. 22) to random members of Sigma_1,
Sigma_2(w) and Sigma_3 (2 tokens); its table prints 15.7-21.1 per map (w = 3).

Here the same crops are fitted exactly (:mod:`attnlab.papers.transformer_math.head_structure`):

- distance (like for like): the crop as saved, no renormalisation, against
  d_Sigma = min(d_Sigma1, d_Sigma2(w1, w2 <= 3), d_Sigma3), eps = 0 (the thesis's families;
  attnlab's shifts are reported apart);
- labels, rank and norm: the crop with every row divided by its sum (an attention map again;
  the division scales rows and changes no rank).

The file is read from ``$ATTNLAB_THESIS_MAPS`` or, by default, from ``../shared/data/`` beside
the repository (:data:`DEFAULT_PATH`); it is not copied into the package (its README gives no
licence). Without it :func:`load_thesis_maps` raises :class:`ThesisMapsAbsent`, and the
claims and the experiment that use it say so instead of measuring.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from attnlab.analysis.heads.projection import normalized_distance

THESIS_MAPS_ENV = "ATTNLAB_THESIS_MAPS"
DEFAULT_PATH = Path(__file__).resolve().parents[4].parent / "shared" / "data" / "conti-thesis-attention-maps.npz"
"""../shared/data/conti-thesis-attention-maps.npz from the repository root."""
CROP = 16
THESIS_RANGE = (15.7, 21.1)
"""The thesis's per-map random-search distances (w = 3, two rare tokens), on its 16 x 16 crops."""
THESIS_W = 3


class ThesisMapsAbsent(FileNotFoundError):
    """The thesis's maps are not where attnlab looks for them."""


def thesis_maps_path() -> Path:
    return Path(os.environ.get(THESIS_MAPS_ENV) or DEFAULT_PATH)


def load_thesis_maps(path: str | Path | None = None) -> Tensor:
    """The eight 16 x 16 crops ``maps[:, :16, :16]`` as saved (float64, rows not renormalised)."""
    p = Path(path) if path is not None else thesis_maps_path()
    if not p.is_file():
        raise ThesisMapsAbsent(f"the thesis's attention maps are not at {p} (set {THESIS_MAPS_ENV} to the .npz "
                               "of ../shared/data/README.md)")
    with np.load(p) as f:
        maps = np.asarray(f["maps"], dtype=np.float64)
    return torch.from_numpy(maps[:, :CROP, :CROP].copy())


def renormalised(H: Tensor) -> Tensor:
    """Every row divided by its sum (the crop as an attention map)."""
    return H / H.sum(-1, keepdim=True)


def float32_rank(H: Tensor) -> tuple[int, float, float]:
    """(rank at float32 precision, smallest singular value, spectral norm) of one map. The maps were
    computed in float32, so singular values below n * 2^-23 * sigma_max are not resolved."""
    s = torch.linalg.svdvals(H.to(torch.float64))
    tol = H.shape[-1] * float(torch.finfo(torch.float32).eps) * float(s[0])
    return int((s > tol).sum()), float(s[-1]), float(s[0])


@dataclass(frozen=True)
class ThesisMapFit:
    """One thesis map: exact distances of the crop as saved (d), of the renormalised crop
    (d_renormalised), rank and norms of the renormalised crop, and its label."""

    index: int
    d: dict
    d_thesis_sigma: float
    d_renormalised: dict
    row_sums: tuple[float, float]
    rank: int
    sigma_min: float
    l2_norm: float
    label: str
    fits: dict = field(repr=False, default_factory=dict)

    @property
    def per_entry(self) -> float:
        return self.d_thesis_sigma / CROP**2


THESIS_SIGMA = ("sigma1", "sigma2", "sigma3")
"""The thesis's families; attnlab's shifts are reported apart."""


def fit_thesis_maps(maps: Tensor, *, w_max: int = THESIS_W, margin: float = 0.05) -> list[ThesisMapFit]:
    """Fit every crop exactly (module docstring); labels as the head-structure experiment gives them,
    against bidirectional uniform attention (the maps are encoder self-attention: every row sees
    all 16 keys)."""
    from attnlab.papers.transformer_math.head_structure import label_from_distances, fit_families, sigma_distance
    from attnlab.analysis.heads.projection import uniform_attention

    n = maps.shape[-1]
    uniform = normalized_distance(sigma_distance(fit_families(uniform_attention(n), w_max)), n)
    out = []
    for i, H in enumerate(maps):
        raw = fit_families(H, w_max)
        A = renormalised(H)
        fits = fit_families(A, w_max)
        d = {k: f.distance for k, f in raw.items()}
        dr = {k: f.distance for k, f in fits.items()}
        dr["sigma"] = sigma_distance(fits)
        rank, smin, l2 = float32_rank(A)
        sums = H.sum(-1)
        out.append(ThesisMapFit(i, d, min(d[k] for k in THESIS_SIGMA), dr, (float(sums.min()), float(sums.max())),
                                rank, smin, l2, label_from_distances(dr, n, uniform, margin), fits))
    return out


__all__ = ["CROP", "DEFAULT_PATH", "THESIS_MAPS_ENV", "THESIS_RANGE", "THESIS_SIGMA", "ThesisMapFit",
           "ThesisMapsAbsent", "fit_thesis_maps", "float32_rank", "load_thesis_maps", "renormalised",
           "thesis_maps_path"]
