"""Layer normalisation (math-behind-transformers §1.2.2, eq. 2; §1.2.4).

Over the last axis of z in R^k (one token):

    mu_z    = (1/k) sum_i z_i
    sigma_z = sqrt((1/k) sum_i (z_i - mu_z)^2)                  (biased, 1/k)

    "paper":    LN(z) = gamma (z - mu_z) / (sigma_z + eps) + beta,        eps = 1e-6   (eq. 2)
    "standard": LN(z) = gamma (z - mu_z) / sqrt(sigma_z^2 + eps) + beta,  eps = 1e-5   (PyTorch)
    "rms":      RMSNorm(z) = gamma z / sqrt((1/k) sum_i z_i^2 + eps),      eps = 1e-6
                (Zhang & Sennrich 2019; Llama, SmolLM2 with eps = 1e-5: no centring, no beta)

gamma, beta in R^k. The first two differ by O(eps / sigma); RMSNorm equals "standard" on an
input of mean 0 (without beta). §1.2.4 says gamma is
used "to avoid division by 0": a typo, eps does that; gamma is the learned gain.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from attnlab.errors import ConfigError

NORM_VARIANTS = ("paper", "standard", "rms")
DEFAULT_EPS = {"paper": 1e-6, "standard": 1e-5, "rms": 1e-6}


def layer_norm_paper(z: Tensor, gamma: Tensor | None, beta: Tensor | None, eps: float = 1e-6) -> Tensor:
    """gamma (z - mu) / (sigma + eps) + beta over the last axis, eq. (2)."""
    mu = z.mean(dim=-1, keepdim=True)  # (..., 1)
    var = ((z - mu) ** 2).mean(dim=-1, keepdim=True)  # (..., 1), biased
    # clamp keeps d sigma / d var finite when z is constant (sigma = 0); the
    # value moves by at most sqrt(tiny) ~ 1e-154, far below eps.
    sigma = torch.sqrt(var.clamp_min(torch.finfo(z.dtype).tiny))
    out = (z - mu) / (sigma + eps)
    if gamma is not None:
        out = out * gamma
    if beta is not None:
        out = out + beta
    return out


class LayerNorm(nn.Module):
    """LayerNorm(z; gamma, beta) over the last axis, ``variant`` "paper" (eq. 2), "standard" or "rms"
    (RMSNorm: gamma only; ``bias`` defaults to True for the LayerNorms, False for "rms")."""

    def __init__(self, d_model: int, variant: str = "paper", eps: float | None = None, bias: bool | None = None):
        super().__init__()
        if variant not in NORM_VARIANTS:
            raise ConfigError(f"unknown LayerNorm variant {variant!r}: use 'paper' (eq. 2), 'standard' or 'rms'")
        bias = variant != "rms" if bias is None else bias
        if d_model <= 0:
            raise ConfigError(f"d_model must be positive, got {d_model}")
        self.d_model, self.variant = d_model, variant
        self.eps = DEFAULT_EPS[variant] if eps is None else float(eps)
        if not self.eps >= 0:
            raise ConfigError(f"eps must be >= 0, got {eps}")
        self.gamma = nn.Parameter(torch.ones(d_model))
        self.beta = nn.Parameter(torch.zeros(d_model)) if bias else None

    def forward(self, z: Tensor) -> Tensor:
        """z: (..., d_model) -> (..., d_model)."""
        if z.shape[-1] != self.d_model:
            raise ConfigError(f"LayerNorm expects last axis {self.d_model}, got {z.shape[-1]}")
        if self.variant == "paper":
            return layer_norm_paper(z, self.gamma, self.beta, self.eps)
        if self.variant == "rms":
            out = torch.nn.functional.rms_norm(z, (self.d_model,), self.gamma, self.eps)
            return out if self.beta is None else out + self.beta
        return torch.nn.functional.layer_norm(z, (self.d_model,), self.gamma, self.beta, self.eps)

    def extra_repr(self) -> str:
        return f"{self.d_model}, variant={self.variant!r}, eps={self.eps:g}"
