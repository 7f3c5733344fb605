"""Measurements on tensors and models (ranks, spectra, Jacobians, residuals, attention heads)."""

from attnlab.analysis.residuals import (
    KINDS as RESIDUAL_KINDS,
    Residual,
    composite_norm,
    composite_shift,
    l1_norm,
    linf_norm,
    rank_one_approximation,
    relative_residual,
    residual,
)

__all__ = [
    "RESIDUAL_KINDS",
    "Residual",
    "composite_norm",
    "composite_shift",
    "l1_norm",
    "linf_norm",
    "rank_one_approximation",
    "relative_residual",
    "residual",
]
