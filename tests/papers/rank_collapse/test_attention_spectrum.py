"""Spectrum statistics of attention maps and Theorem 2.3's errors (rank-collapse.low-rank's measurements)."""

import math

import pytest
import torch

from attnlab.papers.rank_collapse.attention_spectrum import (MiniLMRow, SmolLM2Row, SpectrumStats, full_rank_share,
                                                             k_needed, k_reaching, measure_n, median, spectrum_stats)
from attnlab.papers.rank_collapse.spectrum_figures import (beside_figure, layer_text, projection_figure,
                                                           ranks_figure, spectrum_figure)
from tolerances import FLOAT64


def test_spectrum_stats_of_known_matrices():
    n = 20
    uniform = spectrum_stats(torch.full((1, n, n), 1.0 / n, dtype=torch.float64))  # rank one
    assert uniform.k90.item() == 1 and uniform.numerical_rank.item() == 1
    assert uniform.stable_rank.item() == pytest.approx(1, abs=FLOAT64)
    eye = spectrum_stats(torch.eye(n, dtype=torch.float64)[None])  # flat spectrum
    assert eye.k90.item() == math.ceil(0.9 * n) and eye.k99.item() == n
    assert eye.numerical_rank.item() == n and eye.stable_rank.item() == pytest.approx(n, rel=FLOAT64)
    both = SpectrumStats.concat([uniform, eye])
    assert both.k90.tolist() == [1.0, 18.0] and len(both.cumulative) == n
    assert both.cumulative[0] == pytest.approx((1.0 + 1 / n) / 2, rel=FLOAT64)
    assert full_rank_share(both, n) == 0.5 and median(torch.tensor([3.0, 1.0, 2.0])) == 2.0


def test_k_reaching_and_k_needed():
    c = torch.tensor([[0.5, 0.9, 1.0], [0.95, 0.99, 1.0]], dtype=torch.float64)
    assert k_reaching(c, 0.9).tolist() == [2, 1] and k_reaching(c, 0.99).tolist() == [3, 2]
    row = MiniLMRow(n=8, matrices=1, k90=1, k99=1, k90_energy=1, k99_energy=1, stable_rank=1, numerical_rank=1,
                    k90_q90=1, k99_max=1, full_rank_share=0, cumulative=[1.0], projection_error=[2.0, 0.8, 0.3],
                    svd_error=[0.0, 0.0, 0.0])
    assert k_needed(row, [2, 4, 8], 1.0) == 4 and k_needed(row, [2, 4, 8], 0.1) is None
    assert row.to_dict()["projection_error"] == [2.0, 0.8, 0.3]


def test_measure_n_on_minilm():
    g, gd = torch.Generator().manual_seed(0), torch.Generator().manual_seed(0)
    row = measure_n(8, 1, 0, (2, 8), 2, g, gd)
    assert row.n == 8 and row.matrices == 6 * 12 and len(row.cumulative) == 8
    assert row.svd_error[-1] <= FLOAT64  # rank 8 = n: the SVD is exact
    assert all(s <= p + 1e-12 for s, p in zip(row.svd_error, row.projection_error))
    # the figures of such rows
    assert spectrum_figure([row], 1).file == "lowrank-spectrum.png" and ranks_figure([row]).series
    assert len(projection_figure([row], (2, 8), 2).series) == 2
    smol = SmolLM2Row(**{k: v for k, v in row.to_dict().items() if k not in ("projection_error", "svd_error")},
                      k99_energy_max=1.0)
    beside = beside_figure([row], [smol], 1, 1, (0, 1))
    assert beside.file == "lowrank-minilm-vs-smollm2.png" and "layers 0, 1" in beside.caption


def test_layer_text():
    assert layer_text(tuple(range(30))) == "0-29 (all)" and layer_text((0, 15, 29)) == "0, 15, 29"
