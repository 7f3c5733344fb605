"""Theorem 2.1 of the rank-collapse notes: a SAN is a sum over paths of heads.

The notes' two-layer step writes the term P_{h1} P_{h2} X W_{h1} W_{h2}: the P's and the
W's in the same order. Whichever layer h1 indexes, one of the two products is then
reversed; :func:`literal_two_layer_error` measures both readings against the network.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnlab.analysis.path_decomposition import accumulated_bias, path_count, path_sum, random_san, san_forward
from attnlab.checks import Check, at_most
from attnlab.registry import claim
from attnlab.stored import Stored

TOL = 1e-12  # an exact identity: float64 rounding over <= 64 path terms stays far below this


@dataclass(frozen=True)
class LiteralTwoLayerError(Stored):
    """||SA o SA(X) - 1 b^T - T||_F / ||SA o SA(X) - 1 b^T||_F for the text's two-layer term T, read both ways."""

    h1_in_layer_1: float  # T = sum P_{1,h1} P_{2,h2} X W_{1,h1} W_{2,h2}: the P's reversed
    h1_in_layer_2: float  # T = sum P_{2,h1} P_{1,h2} X W_{2,h1} W_{1,h2}: the W's reversed


def literal_two_layer_error(g: torch.Generator, n: int = 7, d_model: int = 5, d_head: int = 3,
                            d_v: int = 2) -> LiteralTwoLayerError:
    """||SA o SA(X) - 1 b^T - T|| / ||SA o SA(X) - 1 b^T|| (Frobenius) for the text's term T read
    both ways: h1 in layer 1 (sum P_{1,h1} P_{2,h2} X W_{1,h1} W_{2,h2}: the P's reversed) and
    h1 in layer 2 (sum P_{2,h1} P_{1,h2} X W_{2,h1} W_{1,h2}: the W's reversed); H = 2."""
    layers = random_san(2, 2, d_model, d_head, d_v, g)
    X = torch.randn(n, d_model, generator=g, dtype=torch.float64)
    out, P = san_forward(X, layers)
    W = [layer.path_weights() for layer in layers]  # (H, d_model, d_model) each
    target = out - accumulated_bias(layers)
    p_reversed = sum(P[0][a] @ P[1][b] @ X @ W[0][a] @ W[1][b] for a in range(2) for b in range(2))
    w_reversed = sum(P[1][b] @ P[0][a] @ X @ W[1][b] @ W[0][a] for a in range(2) for b in range(2))
    return LiteralTwoLayerError(h1_in_layer_1=((target - p_reversed).norm() / target.norm()).item(),
                                h1_in_layer_2=((target - w_reversed).norm() / target.norm()).item())


@claim(
    "rank-collapse.path-decomposition",
    where="§2.1, Theorem 2.1",
    statement=(
        "a SAN of L layers with H heads equals the sum over the H^L paths (h_1..h_L) of "
        "P_{L,h_L}...P_{1,h_1} X W_{1,h_1}...W_{L,h_L} plus 1 b^T ((H+1)^L paths with skip connections)"
    ),
    paper_value="exact identity",
    anchor="rank-collapse.theorem-2-1",
    falsifier="a random SAN (L, H in 1..3, with or without skips) whose path sum misses its output by more than "
              "1e-12 relative (Frobenius)",
)
def _path_decomposition(seed: int) -> Check:
    g = torch.Generator().manual_seed(seed)
    n, d_model, d_head, d_v = 7, 5, 3, 2
    worst, worst_case, worst_at, cases = 0.0, "", {}, 0
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
                    worst_at = {"L": L, "H": H, "skip": skip, "paths": path_count(H, L, skip=skip)}
    detail = (
        f"max ||SAN(X) - path sum||_F / ||SAN(X)||_F over {cases} SANs "
        f"(L, H in 1..3, with/without skip; n={n}, d_model={d_model}, float64); worst at {worst_case}. "
        "Read with Q = X W^Q (the text writes W^Q X) and the L=2 term "
        "P_{2,h2} P_{1,h1} X W_{1,h1} W_{2,h2} (the text writes P_{h1} P_{h2} X W_{h1} W_{h2}): errata"
    )
    literal = literal_two_layer_error(g)
    readings = (literal.h1_in_layer_1, literal.h1_in_layer_2)
    detail += (f"; the text's literal two-layer term is off by {min(readings):.2g}-"
               f"{max(readings):.2g} relative (both readings)")
    values = {"text_literal_two_layer_error": literal.to_dict(), "max_rel_error": worst, "worst_at": worst_at,
              "cases": cases, "n": n, "d_model": d_model, "d_head": d_head, "d_v": d_v}
    return at_most(worst, TOL, detail, values=values)
