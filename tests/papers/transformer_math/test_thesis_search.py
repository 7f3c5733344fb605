"""The thesis notebook's random grid search (attnlab.papers.transformer_math.thesis_search): its members as the
notebook draws them, and the search's output."""

import math

import pytest
import torch

from attnlab.errors import ConfigError
from attnlab.papers.transformer_math.thesis_search import (
    NOTEBOOK_GRID,
    NOTEBOOK_TABLE,
    distinct_cells,
    notebook_positions,
    notebook_search,
    notebook_sigma1,
    notebook_sigma2,
    notebook_sigma3,
)


def _g(seed=0):
    return torch.Generator().manual_seed(seed)


def test_the_notebooks_constants():
    assert NOTEBOOK_GRID == (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)  # np.arange(0, 1.1, 0.1)
    assert len(NOTEBOOK_TABLE) == 8 and (min(NOTEBOOK_TABLE), max(NOTEBOOK_TABLE)) == (15.748942, 21.084405)


def test_noise_cells_are_distinct_and_uniform():
    cells = distinct_cells(20000, 256, 16, _g())
    assert all(len(set(row)) == 16 for row in cells[:200].tolist())
    counts = torch.bincount(cells.flatten(), minlength=256).double()
    # each cell is drawn with probability 16/256: 1250 of 20000 rows, binomial sd 34
    assert float(counts.mean()) == pytest.approx(1250) and float((counts - 1250).abs().max()) < 6 * 34


def test_sigma1_and_sigma2_members_as_the_notebook_draws_them():
    c = torch.full((400,), 0.5, dtype=torch.float64)
    S1 = notebook_sigma1(400, 16, c, _g())
    assert torch.allclose(S1.sum(-1), torch.ones(400, 16, dtype=torch.float64))
    assert float(S1.diagonal(dim1=-2, dim2=-1).min()) > 0.9 / (1 + 0.5 * 16)  # the diagonal is never dropped
    S2 = notebook_sigma2(400, 16, 3, torch.zeros(400, dtype=torch.float64), _g())
    ok = ~torch.isnan(S2).any(-1).any(-1)
    band = (torch.arange(16)[:, None] - torch.arange(16)[None, :]).abs() <= 3
    assert bool((S2[ok][:, ~band] == 0).all())  # no noise: nothing outside the band
    kept = S2[ok].diagonal(dim1=-2, dim2=-1) > 0
    # dropout 0.4 on the whole band, the diagonal too (createsintact): 60% of the diagonal cells kept
    assert float(kept.double().mean()) == pytest.approx(0.6, abs=0.02)
    # without noise a row that dropout empties is 0/0: NaN, a member the notebook never keeps
    assert not bool(ok.all())


def test_sigma3_members_have_two_windows_of_three_rows_on_their_first_token():
    pos = notebook_positions(3000, 16, 2, 3, _g())
    assert bool((pos >= 1).all() and (pos <= 14).all()) and bool((pos[:, 1] - pos[:, 0] >= 3).all())
    S3 = notebook_sigma3(50, 16, 2, 3, torch.ones(50, dtype=torch.float64), _g(1))
    P = notebook_sigma3(50, 16, 2, 3, torch.ones(50, dtype=torch.float64), _g(1))
    assert torch.equal(S3, P)  # seeded
    g = _g(1)
    torch.empty(50, 16, dtype=torch.float64).uniform_(0.7, 1.0, generator=g)  # the diagonal weights come first
    p = notebook_positions(50, 16, 2, 3, g)[0].tolist()
    top = S3[0].argmax(-1).tolist()  # noise is at most 0.5 against a weight of at least 0.7
    for start in p:
        assert top[start - 1: start + 2] == [start - 1] * 3  # rows pos-1 .. pos+1 attend column pos - 1
    # coeff_d = 0 leaves rows without weight: 0/0 where no noise falls, never kept by the search
    assert bool(torch.isnan(notebook_sigma3(20, 16, 2, 3, torch.zeros(20, dtype=torch.float64), _g())).any())
    with pytest.raises(ConfigError, match="loop would never end"):
        notebook_positions(5, 8, 3, 3, _g())


def test_the_search_keeps_the_smallest_distance_and_never_a_nan_member():
    maps = torch.stack([torch.eye(16, dtype=torch.float64), torch.full((16, 16), 1 / 16, dtype=torch.float64)])
    r = notebook_search(maps, grid=(0.0, 0.5), n_attempts=4, repetitions=2, seed=3)
    assert r.distances.shape == (2, 2) and bool(torch.isfinite(r.distances).all())
    assert r.settings["draws"] == 3 * 2 ** 3 * 4
    # the identity: Sigma_1 with coefficient 0 is diag(1 - 0.1 U) normalised, I itself
    assert r.families[0][0] == "sigma1" and r.params[0][0][1] == 0.0
    assert float(r.distances[0, 0]) == pytest.approx(0.0, abs=1e-12)
    assert float(r.distances[0, 1]) < 2 * 16 * (1 - 1 / 16)  # below the farthest a row-stochastic map can be
    assert torch.equal(r.distances, notebook_search(maps, grid=(0.0, 0.5), n_attempts=4, repetitions=2,
                                                    seed=3).distances)
    with pytest.raises(ConfigError, match="maps must be finite square maps"):
        notebook_search(torch.zeros(16, 16))
    assert not math.isnan(float(r.distances.max()))
