"""Figure 1's Kruskal-rank estimates (papers/memorization/kruskal_figure.py) on a small grid, and their
memory and work counted by hand."""

from __future__ import annotations

from attnlab.analysis.kruskal import kruskal_rank_estimate
from attnlab.estimates import qr_flops, svd_flops
from attnlab.papers.memorization.kruskal_figure import (
    FIG_D_HEAD,
    figure1_estimates,
    figure1_point_estimate,
    kruskal_estimate_at,
)
from attnlab.papers.memorization.layer_outputs import random_outputs
from attnlab.papers.memorization.token_layers import sinusoidal_rank


def test_kruskal_estimate_at_is_the_estimate_of_the_attention_layers_queries():
    _, e = random_outputs("attention", 41, 7, 64, 64 // FIG_D_HEAD, seed=1)
    ref = kruskal_rank_estimate(e, trials=3, seed=1, rtol=1e-10).estimate_
    assert kruskal_estimate_at(41, 7, 64, trials=3, seed=1, rtol=1e-10) == ref == 41  # 41 generic queries in R^64


def test_figure1_estimates_on_a_small_grid():
    fig = figure1_estimates(T=70, fig_n=(6, 12), fig_d=(64, 96), fig_n_at_d=8, d=64, n=9, trials=4, seed=0,
                            rtol=1e-10)
    assert (fig.vs_n.d, fig.vs_n.n, fig.vs_d.n, fig.vs_d.d, fig.T) == (64, [6, 12], 8, [64, 96], 70)
    # one random attention layer mixes the context into [CLS]: the queries are generic, rank min(T, d)
    assert fig.vs_n.estimate == [64, 64] and fig.vs_d.estimate == [64, 70]
    assert fig.sinusoidal_rank.rank == sinusoidal_rank(9, 64, rtol=1e-10) == 9
    assert list(fig.to_dict()) == ["vs_n", "vs_d", "T", "sinusoidal_rank"]
    assert fig.to_dict()["sinusoidal_rank"] == {"n": 9, "d": 64, "rtol": 1e-10, "rank": 9}


def test_figure1_point_estimate_by_hand():
    T, n, d, trials = 70, 8, 64, 4
    est = figure1_point_estimate(T, n, d, trials)
    assert est.peak_bytes == 8 * 4 * T * n * d and est.calls == trials
    # one attention block of 2 heads of 32 (no MLP): 2 n 4 d^2 + 4 n^2 d per example
    assert abs(est.gemm - T * (2.0 * n * 4 * d * d + 4.0 * n * n * d)) < 1e-9 * est.gemm
    assert est.lapack == svd_flops(T, d, vectors=True) + trials * qr_flops(d, d + 1)
