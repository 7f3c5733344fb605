"""Figure 1's Kruskal-rank estimates of a random attention layer's queries, and the rank of P[:n].

memorization-capacity-of-mha Figure 1 (§5.1) plots the Kruskal rank of the [CLS] outputs of one layer
against the context size n and the model dimension d. Here the layer is a random pre-LN attention
layer (:mod:`attnlab.papers.memorization.token_layers`) of d / :data:`FIG_D_HEAD` heads on T English
examples, and the Kruskal rank is estimated from random orderings
(:func:`attnlab.analysis.kruskal.kruskal_rank_estimate`: the largest k for which every sampled k-subset
is independent, an upper estimate). §4.4's "P is inherently full rank" is measured beside it: the
numerical rank of the sinusoidal P[:n] in d.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from attnlab.analysis.kruskal import kruskal_rank_estimate
from attnlab.estimates import Estimate, qr_flops, svd_flops
from attnlab.papers.memorization.layer_outputs import random_outputs
from attnlab.papers.memorization.token_layers import sinusoidal_rank
from attnlab.pretrained.sizes import ModelSize

FIG_D_HEAD = 32  # Figure 1 grid: H = d / 32 heads of MiniLM's head size


@dataclass(frozen=True)
class KruskalVsN:
    """Kruskal-rank estimates of the random attention layer's queries against the context size n."""

    d: int  # model dimension
    n: list[int]  # context sizes (fig_n)
    estimate: list[int]  # (len(n),): the estimate at each n


@dataclass(frozen=True)
class KruskalVsD:
    """Kruskal-rank estimates of the random attention layer's queries against the model dimension d."""

    n: int  # context size
    d: list[int]  # model dimensions (fig_d)
    estimate: list[int]  # (len(d),): the estimate at each d


@dataclass(frozen=True)
class SinusoidalRank:
    """Numerical rank of the sinusoidal positions P[:n] (n, d): #{sigma_i > rtol sigma_1} (§4.4)."""

    n: int  # positions
    d: int  # model dimension
    rtol: float  # rank tolerance
    rank: int  # numerical rank, at most min(n, d)


@dataclass(frozen=True)
class Figure1:
    """Figure 1's Kruskal-rank estimates on T = fig_T examples, and the rank of the sinusoidal positions."""

    vs_n: KruskalVsN  # against n at d
    vs_d: KruskalVsD  # against d at fig_n_at_d
    T: int  # examples (fig_T)
    sinusoidal_rank: SinusoidalRank  # of P[:n] in d (cfg.n, cfg.d)

    def to_dict(self) -> dict:
        """The stored data.figure1: the fields in order, each a dict by name."""
        return dataclasses.asdict(self)


def kruskal_estimate_at(T: int, n: int, d: int, *, trials: int, seed: int, rtol: float) -> int:
    """The Kruskal-rank estimate (``trials`` random orderings) of the queries of a random attention layer
    of width d (d / FIG_D_HEAD heads) on T English examples of n words, examples and weights from ``seed``."""
    _, e = random_outputs("attention", T, n, d, d // FIG_D_HEAD, seed)
    return kruskal_rank_estimate(e, trials=trials, seed=seed, rtol=rtol).estimate_


def figure1_estimates(*, T: int, fig_n: tuple[int, ...], fig_d: tuple[int, ...], fig_n_at_d: int, d: int,
                      n: int, trials: int, seed: int, rtol: float) -> Figure1:
    """Kruskal-rank estimates of the random attention layer's queries on T examples vs fig_n (at d) and vs
    fig_d (at fig_n_at_d), each from ``trials`` orderings; and the numerical rank of the sinusoidal P[:n]
    in d at ``rtol``."""
    def est(n_: int, d_: int) -> int:
        return kruskal_estimate_at(T, n_, d_, trials=trials, seed=seed, rtol=rtol)

    return Figure1(vs_n=KruskalVsN(d=d, n=list(fig_n), estimate=[est(x, d) for x in fig_n]),
                   vs_d=KruskalVsD(n=fig_n_at_d, d=list(fig_d), estimate=[est(fig_n_at_d, x) for x in fig_d]),
                   T=T, sinusoidal_rank=SinusoidalRank(n=n, d=d, rtol=rtol, rank=sinusoidal_rank(n, d, rtol=rtol)))


def figure1_point_estimate(T: int, n: int, d: int, trials: int) -> Estimate:
    """The memory and work of one point (n, d) of Figure 1's grid (:func:`kruskal_estimate_at`, float64):
    the layer's 4 T n d hidden values, the pass of one attention block of d / FIG_D_HEAD heads over T
    examples, the SVD of the T x d queries and ``trials`` QRs of r x (r + 1), r = min(T, d)."""
    block = ModelSize(1, d, d // FIG_D_HEAD, d // FIG_D_HEAD, FIG_D_HEAD, 0, vocab_size=0)
    r = min(T, d)
    return Estimate(8 * 4 * T * n * d, "Figure 1's random attention layer", gemm=T * block.block_flops(n),
                    lapack=svd_flops(T, d, vectors=True) + trials * qr_flops(r, r + 1), calls=trials)
