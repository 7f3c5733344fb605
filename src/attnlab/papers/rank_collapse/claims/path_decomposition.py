"""Theorem 2.1 of the rank-collapse notes: a SAN is a sum over paths of heads."""

from __future__ import annotations

import torch

from attnlab.analysis.path_decomposition import SANLayer, path_count, path_sum, san_forward
from attnlab.registry import Measurement, at_most, claim

TOL = 1e-12


def random_san(
    n_layers: int, n_heads: int, d_model: int, d_head: int, d_v: int, g: torch.Generator
) -> list[SANLayer]:
    """Gaussian weights (std 1/sqrt(fan-in)) and nonzero biases, in float64."""

    def randn(*shape, fan_in=1):
        return torch.randn(*shape, generator=g, dtype=torch.float64) / fan_in**0.5

    return [
        SANLayer(
            W_Q=randn(n_heads, d_model, d_head, fan_in=d_model),
            W_K=randn(n_heads, d_model, d_head, fan_in=d_model),
            W_V=randn(n_heads, d_model, d_v, fan_in=d_model),
            W_O=randn(n_heads, d_v, d_model, fan_in=d_v * n_heads),
            b_Q=randn(n_heads, d_head),
            b_K=randn(n_heads, d_head),
            b_V=randn(n_heads, d_v),
            b_O=randn(d_model),
        )
        for _ in range(n_layers)
    ]


@claim(
    "rank-collapse.path-decomposition",
    where="§2.1, Theorem 2.1",
    statement=(
        "a SAN of L layers with H heads equals the sum over the H^L paths (h_1..h_L) of "
        "P_{L,h_L}...P_{1,h_1} X W_{1,h_1}...W_{L,h_L} plus 1 b^T ((H+1)^L paths with skip connections)"
    ),
    paper_value="exact identity",
)
def _path_decomposition(seed: int) -> Measurement:
    g = torch.Generator().manual_seed(seed)
    n, d_model, d_head, d_v = 7, 5, 3, 2
    worst, worst_case, cases = 0.0, "", 0
    for L in (1, 2, 3):
        for H in (1, 2, 3):
            for skip in (False, True):
                layers = random_san(L, H, d_model, d_head, d_v, g)
                X = torch.randn(n, d_model, generator=g, dtype=torch.float64)
                out, P = san_forward(X, layers, skip=skip)
                err = ((out - path_sum(X, P, layers, skip=skip)).norm() / out.norm()).item()
                cases += 1
                if err >= worst:
                    worst = err
                    worst_case = f"L={L}, H={H}, skip={skip}, {path_count(H, L, skip=skip)} paths"
    detail = (
        f"max ||SAN(X) - path sum||_F / ||SAN(X)||_F over {cases} SANs "
        f"(L, H in 1..3, with/without skip; n={n}, d_model={d_model}, float64); worst at {worst_case}. "
        "Text's typos corrected: Q = X W^Q (not W^Q X), and the L=2 term is "
        "P_{2,h2} P_{1,h1} X W_{1,h1} W_{2,h2} (not P_{h1} P_{h2} X W_{h1} W_{h2})"
    )
    return at_most(worst, TOL, detail)
