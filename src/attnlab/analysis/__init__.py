"""Measurements on tensors and models (ranks, spectra, Jacobians, residuals, attention heads)."""
