"""Theorem 2.3 of the rank-collapse notes (§2.3): a random projection of rank Theta(log n)
keeps the action of an attention matrix on a values vector.

See :mod:`attnlab.analysis.approximation` for why the values carry a non-zero mean
(w ~ N(1, 1)): for zero-mean values the relative error grows like sqrt(n).
"""

from __future__ import annotations

import math

import torch

from attnlab.analysis.approximation import projection_action_errors, random_attention_and_values
from attnlab.registry import Measurement, at_least, claim


@claim(
    "rank-collapse.low-rank-log-n",
    where="§2.3, Theorem 2.3",
    statement="a rank k' = c log n random projection P R^T R keeps ||P~w - Pw|| <= eps ||Pw|| with "
              "probability >= 1 - delta, for a fixed c, as n grows",
    paper_value="rank(P~) = Theta(log n), probability 1 - o(1)",
)
def _low_rank_log_n(seed: int) -> Measurement:
    """c = 8 (k' = ceil(8 ln n)), eps = 0.75, delta = 0.1, 32 draws per n in {256, 1024, 4096}.

    Measured: the smallest empirical probability over n (about 0.99 at n = 256
    from 2000 draws, rising with n since the error shrinks like 1/sqrt(ln n)).
    The projection acts on the n keys; the error is measured on 256 query rows
    of P (256 x n): rows are exchangeable given K, so the norm ratio over 256
    rows estimates the one over all n, without an n x n float64 softmax.
    """
    g = torch.Generator().manual_seed(seed)
    c, eps, delta, draws = 8.0, 0.75, 0.1, 32
    probs, ks = [], []
    for n in (256, 1024, 4096):
        P, w = random_attention_and_values(n, 16, g, n_q=256)
        k_proj = math.ceil(c * math.log(n))
        err = projection_action_errors(P, w, [k_proj], draws=draws, generator=g)[0]  # (draws,)
        probs.append((err <= eps).double().mean().item())
        ks.append(k_proj)
    detail = (f"c={c:g}, eps={eps}, delta={delta}, {draws} draws, 256 queries, w ~ N(1,1); P(error <= eps) at "
              + ", ".join(f"n={n} (k'={k}): {p:.3f}" for n, k, p in zip((256, 1024, 4096), ks, probs)))
    values = {"c": c, "eps": eps, "delta": delta, "draws": draws, "n_queries": 256, "n_values": [256, 1024, 4096],
              "k_values": ks, "probabilities": probs}
    return at_least(min(probs), 1 - delta, detail, values=values)
