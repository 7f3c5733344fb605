"""The thesis's own procedure for its distance table: the random grid search of its notebook.

The distances 15.7-21.1 beside the thesis's eight saved maps are printed in its repository's
``code experiments/Attn_approx.ipynb`` (EddieConti/Master-Thesis-UB, cells 3-4 and 15-17), not in
the text. The text defines the families (§3.1.1-3.1.2) and the distance (eq. 22); the notebook
draws random members of them and keeps the closest:

    grid_search_distances(A, num_pos=2, w=3, n_attempts=30)
        for (coeff_d, coeff_v, coeff_sp) in {0, 0.1, ..., 1}^3:           11^3 = 1331 combinations
            30 draws of creatediagonal(16, coeff_sp)                         Sigma_1 with noise
            30 draws of createsintact(16, w, dropout 0.4, coeff_sp)          Sigma_2(w) with noise
            30 draws of raretoken(16, num_pos, w, coeff_d)                   Sigma_3 with noise
        -> the smallest sum_ij |a_ij - x_ij| (eq. 22) over all 119,790 draws

with, for a map of side n (every member's rows are then divided by their sums):

    noise(c)           c times n distinct cells drawn uniformly among the n^2 (scipy.sparse.random
                       at density 1/n), each U[0, 1), its diagonal cells set to 0
    creatediagonal     diag(1 - 0.1 U[0, 1)) + noise(coeff_sp)
    createsintact      every cell with |i - j| <= w kept with probability 0.6 (dropout 0.4, the
                       diagonal included) at a weight U(0.7, 1), + noise(coeff_sp)
    raretoken          diag(coeff_d U(0.7, 1)); num_pos window starts drawn from 1..n - w + 1 at
                       least w apart (each uniform among those compatible with the ones before, as
                       the notebook's rejection loop draws them); rows pos-1 .. pos+w-2 move their
                       diagonal weight to column pos - 1 (the printed P_r: the token opens its
                       window); + noise(0.5), the coefficient fixed.

``coeff_v`` is in the grid but used by no member (the notebook's ``verticalmatrix`` is never
called), so each (coeff_d, coeff_sp) pair gets 11 x 30 draws per family. A member with an empty
row divides 0 by 0: its distance is NaN, which the notebook's ``distance < best_distance`` never
keeps (here: never kept either).

:func:`notebook_search` runs that search in torch, one bank of members per repetition shared by
all maps: each map's search output has the notebook's distribution (its own draws are independent
of the map), and the maps of one repetition are not independent of one another, which no
comparison here uses. The notebook is unseeded; ``seed`` fixes the draws here.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import torch
from torch import Tensor

from attnlab.config import check_int, check_number, check_seed
from attnlab.errors import ConfigError

NOTEBOOK_GRID = tuple(round(0.1 * k, 1) for k in range(11))
"""np.arange(0, 1.1, 0.1): the notebook's values of coeff_d, coeff_v and coeff_sp."""
NOTEBOOK_TABLE = (17.229423, 15.748942, 21.084405, 18.796007, 16.912899, 17.232267, 18.121464, 18.711096)
"""The notebook's printed "Min_distance" per head (cell 17: w = 3, num_pos = 2, n_attempts = 30, the
grid search), heads 1-8 = the saved maps 0-7."""
NOTEBOOK_W = 3
NOTEBOOK_POSITIONS = 2
NOTEBOOK_ATTEMPTS = 30
NOTEBOOK_DROPOUT = 0.4
RARE_NOISE = 0.5  # raretoken's noise coefficient, fixed in the notebook
FAMILIES = ("sigma1", "sigma2", "sigma3")


# ---- the notebook's members, B at a time ----------------------------------------------------------
def _noise(B: int, n: int, coeff: Tensor, g: torch.Generator) -> Tensor:
    """coeff[b] times n distinct uniform cells of U[0, 1) each, diagonal zeroed: (B, n, n)."""
    cells = distinct_cells(B, n * n, n, g)
    vals = torch.rand(B, n, generator=g, dtype=torch.float64)
    vals = vals.masked_fill(cells // n == cells % n, 0.0)  # setdiag(0)
    E = torch.zeros(B, n * n, dtype=torch.float64).scatter_(1, cells, vals).view(B, n, n)
    return coeff.view(B, 1, 1) * E


def distinct_cells(B: int, N: int, k: int, g: torch.Generator) -> Tensor:
    """B uniform k-subsets of {0, ..., N - 1} (what rng.choice(N, k, replace=False) draws, as a set), by
    Floyd's algorithm: for j = N - k .. N - 1 draw t uniform in 0..j and take j if t is taken already. (B, k)."""
    out = torch.empty(B, k, dtype=torch.int64)
    for idx, j in enumerate(range(N - k, N)):
        t = (torch.rand(B, generator=g, dtype=torch.float64) * (j + 1)).long().clamp_(max=j)
        taken = (out[:, :idx] == t[:, None]).any(-1)
        out[:, idx] = torch.where(taken, j, t)
    return out


def _rows_normalised(M: Tensor) -> Tensor:
    """Each row divided by its sum; a row summing to 0 gives NaN, as in the notebook."""
    return M / M.sum(-1, keepdim=True)


def notebook_sigma1(B: int, n: int, coeff_sp: Tensor, g: torch.Generator) -> Tensor:
    """B draws of the notebook's ``creatediagonal(n, coeff_sp)``: (B, n, n)."""
    d = 1 - 0.1 * torch.rand(B, n, generator=g, dtype=torch.float64)
    return _rows_normalised(torch.diag_embed(d) + _noise(B, n, coeff_sp, g))


def notebook_sigma2(B: int, n: int, w: int, coeff_sp: Tensor, g: torch.Generator,
                    dropout: float = NOTEBOOK_DROPOUT) -> Tensor:
    """B draws of the notebook's ``createsintact(n, w, dropout, coeff_sp)``: every cell |i - j| <= w kept
    with probability 1 - dropout (the diagonal too) at a weight U(0.7, 1), plus the noise: (B, n, n)."""
    i = torch.arange(n)
    band = (i[:, None] - i[None, :]).abs() <= w
    keep = (torch.rand(B, n, n, generator=g, dtype=torch.float64) > dropout) & band
    weight = torch.empty(B, n, n, dtype=torch.float64).uniform_(0.7, 1.0, generator=g)
    return _rows_normalised(torch.where(keep, weight, 0.0) + _noise(B, n, coeff_sp, g))


def notebook_positions(B: int, n: int, num_pos: int, w: int, g: torch.Generator) -> Tensor:
    """B draws of the notebook's ``generate_positions(n, num_pos, w)``, sorted, 1-based: (B, num_pos).

    Each position is uniform on 1..n - w + 1 among those at least w from the ones drawn before
    (what the notebook's rejection loop draws); ConfigError where none is left (the notebook loops)."""
    top = n - w + 1
    if top < 1:
        raise ConfigError(f"a window of w = {w} does not fit a map of side {n}: lower w")
    cand = torch.arange(1, top + 1)
    valid = torch.ones(B, top, dtype=torch.bool)
    out = []
    for _ in range(num_pos):
        if not bool(valid.any(-1).all()):
            raise ConfigError(f"{num_pos} windows of w = {w}, {w} apart, do not fit a map of side {n}: the notebook's "
                              "loop would never end; lower num_pos or w")
        k = torch.rand(B, top, generator=g).masked_fill(~valid, -1.0).argmax(-1)  # uniform among the valid
        p = cand[k]
        out.append(p)
        valid &= (cand[None, :] - p[:, None]).abs() >= w
    return torch.stack(out, -1).sort(-1).values


def notebook_sigma3(B: int, n: int, num_pos: int, w: int, coeff_d: Tensor, g: torch.Generator) -> Tensor:
    """B draws of the notebook's ``raretoken(n, num_pos, w, coeff_d)`` (module docstring): (B, n, n)."""
    d = coeff_d.view(B, 1) * torch.empty(B, n, dtype=torch.float64).uniform_(0.7, 1.0, generator=g)
    pos = notebook_positions(B, n, num_pos, w, g)  # (B, num_pos), 1-based window starts
    cols = torch.arange(n).repeat(B, 1)  # (B, n): the column each row's weight sits in
    for p in pos.unbind(-1):
        for i in range(w):
            rows = p - 1 + i
            cols.scatter_(1, rows[:, None], (p - 1)[:, None])
    M = torch.zeros(B, n, n, dtype=torch.float64).scatter_(2, cols[..., None], d[..., None])
    return _rows_normalised(M + _noise(B, n, torch.full((B,), RARE_NOISE, dtype=torch.float64), g))


# ---- the search ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class NotebookSearch:
    """The notebook's grid search run ``repetitions`` times on ``maps`` (module docstring).

    distances: (repetitions, maps) the search's output, the smallest L1 distance found
    families:  the family of each output's member ("sigma1", "sigma2", "sigma3"), [repetition][map]
    params:    its coefficients (coeff_d, coeff_sp) of the draw, [repetition][map]
    settings:  w, num_pos, n_attempts, grid, repetitions, seed, draws (per map and repetition)
    """

    distances: Tensor
    families: list = field(default_factory=list)
    params: list = field(default_factory=list)
    settings: dict = field(default_factory=dict)

    def per_map(self) -> list[list[float]]:
        """[map][repetition] distances."""
        return self.distances.T.tolist()


def notebook_search(maps: Tensor, *, w: int = NOTEBOOK_W, num_pos: int = NOTEBOOK_POSITIONS,
                    n_attempts: int = NOTEBOOK_ATTEMPTS, grid: tuple[float, ...] = NOTEBOOK_GRID,
                    repetitions: int = 5, seed: int = 0, chunk: int = 8192) -> NotebookSearch:
    """The notebook's ``grid_search_distances`` on every map of ``maps`` (k, n, n), ``repetitions`` times.

    Each repetition draws, per family, n_attempts members for each of the |grid|^3 coefficient
    triples (the notebook's loop order does not matter: its output is the minimum over all draws)
    and keeps, per map, the smallest L1 distance (eq. 22) and its member's family and coefficients;
    a member with an empty row (NaN) is never kept. ``chunk``: members drawn at once (memory)."""
    maps = torch.as_tensor(maps, dtype=torch.float64)
    if maps.ndim != 3 or maps.shape[-1] != maps.shape[-2] or not bool(torch.isfinite(maps).all()):
        raise ConfigError(f"maps must be finite square maps (k, n, n), got shape {tuple(maps.shape)}")
    k, n = maps.shape[0], maps.shape[-1]
    check_int("w", w, 0, n - 1)
    check_int("num_pos", num_pos, 1)
    check_int("n_attempts", n_attempts, 1)
    check_int("repetitions", repetitions, 1)
    check_int("chunk", chunk, 1)
    grid = tuple(check_number("grid value", float(c), 0.0) for c in grid)
    if not grid:
        raise ConfigError("grid needs at least one coefficient value")
    g = torch.Generator().manual_seed(check_seed(seed))
    combos = list(itertools.product(grid, grid, grid))  # (coeff_d, coeff_v, coeff_sp), the notebook's order
    coeff_d = torch.tensor([c[0] for c in combos for _ in range(n_attempts)], dtype=torch.float64)
    coeff_sp = torch.tensor([c[2] for c in combos for _ in range(n_attempts)], dtype=torch.float64)
    total = coeff_d.numel()
    A = maps.reshape(k, n * n)
    dist, fams, params = [], [], []
    for _ in range(repetitions):
        best = torch.full((k,), math.inf, dtype=torch.float64)
        fam = [""] * k
        par: list = [None] * k
        for family in FAMILIES:
            for start in range(0, total, chunk):
                cd, cs = coeff_d[start:start + chunk], coeff_sp[start:start + chunk]
                B = cd.numel()
                if family == "sigma1":
                    X = notebook_sigma1(B, n, cs, g)
                elif family == "sigma2":
                    X = notebook_sigma2(B, n, w, cs, g)
                else:
                    X = notebook_sigma3(B, n, num_pos, w, cd, g)
                D = torch.cdist(X.reshape(B, n * n), A, p=1.0)  # (B, k): sum_ij |x_ij - a_ij|
                D = torch.nan_to_num(D, nan=math.inf)  # an empty row: never kept
                m, arg = D.min(0)
                for j in range(k):
                    if float(m[j]) < float(best[j]):
                        best[j] = m[j]
                        fam[j] = family
                        par[j] = (float(cd[arg[j]]), float(cs[arg[j]]))
        dist.append(best)
        fams.append(fam)
        params.append(par)
    return NotebookSearch(torch.stack(dist), fams, params,
                          {"w": w, "num_pos": num_pos, "n_attempts": n_attempts, "grid": list(grid),
                           "repetitions": repetitions, "seed": seed, "draws": 3 * total})


__all__ = ["FAMILIES", "NOTEBOOK_ATTEMPTS", "NOTEBOOK_DROPOUT", "NOTEBOOK_GRID", "NOTEBOOK_POSITIONS",
           "NOTEBOOK_TABLE", "NOTEBOOK_W", "NotebookSearch", "notebook_positions", "notebook_search",
           "notebook_sigma1", "notebook_sigma2", "notebook_sigma3"]
