"""The one table of test tolerances, keyed by dtype.

Every comparison of a computed tensor with an expected one goes through
:func:`assert_close` or :func:`max_rel_error`, so a tolerance is stated once.

    float64: atol = rtol = 1e-12   (the "1e-12 class": ~4500 ulps at 1.0)
    float32: atol = rtol = 1e-5    (~80 ulps at 1.0)

Errors are measured relative to the size of the expected tensor,
|actual - expected| <= atol * max(1, max|expected|) + rtol * |expected|,
so an operator whose outputs are O(10) (unnormalized attention) is held to the
same number of significant digits as one whose outputs are O(1).

Scalars, NumPy arrays and inequality slacks use the named bounds at the end (FLOAT64, FLOAT32,
and the looser ones, each with the reason it is looser). No other test file defines a tolerance
constant of its own (tests/test_tolerances.py checks).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass(frozen=True)
class Tolerance:
    atol: float
    rtol: float


TOLERANCES: dict[torch.dtype, Tolerance] = {
    torch.float64: Tolerance(atol=1e-12, rtol=1e-12),
    torch.float32: Tolerance(atol=1e-5, rtol=1e-5),
}

# Rows of normalised attention weights must sum to 1 within this (float64).
ROW_SUM_TOL_FLOAT64 = 1e-12

# Named bounds for comparisons other than tensor against tensor (a scalar, a pytest.approx, a
# NumPy array, the slack in an inequality); each says what it bounds, a looser one why.

FLOAT64 = TOLERANCES[torch.float64].atol
"""float64 agreement up to rounding: the 1e-12 class."""

FLOAT32 = TOLERANCES[torch.float32].atol
"""float32 agreement up to rounding."""

FLOAT64_LONG = 1e-10
"""float64 after a long chain (a whole block or model, a solve, an eigendecomposition, optimiser steps)."""

LP_SOLVE = 1e-9
"""A linear program's optimum (HiGHS; the library solves to rtol 1e-9) against another route to it."""

SVD_RATIO = 1e-9
"""A singular-value ratio sigma_k / sigma_1 from the library against NumPy's SVD (another LAPACK route)."""

RANK_RTOL = 1e-10
"""Numerical rank: singular values below this times the largest count as zero (the library's rtol)."""

CONSTRUCTION_LABELS = 1e-8
"""Labels of the memorization constructions: logit scales c ~ 1e5-1e7 leave ~1e-9 of rounding (measured)."""

VIEWER_ROUNDING = 5e-4
"""Half a shown unit: the viewer shows weights in thousandths and scores to four significant digits."""


def tolerance(dtype: torch.dtype) -> Tolerance:
    return TOLERANCES[dtype]


def max_rel_error(actual: Tensor, expected: Tensor) -> float:
    """max |actual - expected| / max(1, max |expected|), computed in float64."""
    a, e = actual.detach().to(torch.float64), expected.detach().to(torch.float64)
    scale = max(1.0, e.abs().max().item()) if e.numel() else 1.0
    return (a - e).abs().max().item() / scale if e.numel() else 0.0


def assert_close(actual: Tensor, expected: Tensor, dtype: torch.dtype | None = None) -> None:
    """Assert agreement within the table's tolerance for ``dtype`` (default: actual's dtype)."""
    tol = tolerance(dtype or actual.dtype)
    assert actual.shape == expected.shape, f"shape {tuple(actual.shape)} != {tuple(expected.shape)}"
    a, e = actual.detach().to(torch.float64), expected.detach().to(torch.float64)
    scale = max(1.0, e.abs().max().item()) if e.numel() else 1.0
    bound = tol.atol * scale + tol.rtol * e.abs()
    excess = (a - e).abs() - bound
    assert not torch.isnan(a).any(), "actual contains NaN"
    assert (excess <= 0).all(), (
        f"max |actual - expected| = {(a - e).abs().max().item():.3e} exceeds "
        f"atol={tol.atol:g} (x{scale:.3g}) + rtol={tol.rtol:g} |expected|"
    )
