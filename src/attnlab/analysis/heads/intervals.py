"""Means of per-head numbers over independent segments (documents, batches, seeds) with a Student-t
confidence interval, NaN-aware: a NaN entry (a head with nothing to score on that segment) is left
out of its own cell only.

For the m finite values x_1..x_m of one cell,

    mean = (1/m) sum_k x_k,     s^2 = (1/(m - 1)) sum_k (x_k - mean)^2,
    [low, high] = mean -+ t_{m-1, (1 + level)/2} s / sqrt(m),

t_{m-1, q} the q-quantile of Student's t distribution with m - 1 degrees of freedom
(scipy.stats.t.ppf). The interval assumes the segments are independent draws of one distribution
and the mean roughly normal (Student 1908); segments of one long text are not independent when
they overlap.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from attnlab.config import check_int, check_number
from attnlab.errors import ConfigError


@dataclass(frozen=True)
class MeanInterval:
    """Per cell (the input's shape without ``dim``), float64 tensors:

    - ``mean``: the mean of the non-NaN values (NaN where there is none);
    - ``low``, ``high``: the Student-t interval around it (NaN where fewer than 2 values);
    - ``n``: int64, how many values each cell had."""

    mean: Tensor
    low: Tensor
    high: Tensor
    n: Tensor


def mean_confidence_interval(x, dim: int = 0, level: float = 0.95) -> MeanInterval:
    """The mean of x over axis ``dim`` and its two-sided ``level`` Student-t confidence interval
    (module docstring), ignoring NaN entries cell by cell. x: real values (..., m, ...) with the
    segments along ``dim``; level in (0, 1)."""
    from scipy.stats import t as student_t

    level = check_number("level", level, 0.0, 1.0, open_min=True, open_max=True)
    x = torch.as_tensor(x).detach()
    if x.dtype.is_complex or x.dtype == torch.bool or x.ndim < 1:
        raise ConfigError(f"x must be real numbers with at least one axis (segments along dim), got dtype {x.dtype} "
                          f"and shape {tuple(x.shape)}")
    check_int("dim", dim, -x.ndim, x.ndim - 1)
    x = x.to(torch.float64)
    if bool(torch.isinf(x).any()):
        raise ConfigError("x holds an infinite value: pass finite numbers, or NaN for a missing one")
    valid = ~torch.isnan(x)
    n = valid.sum(dim)
    nan = torch.full(n.shape, float("nan"), dtype=torch.float64, device=x.device)
    mean = torch.where(n > 0, torch.where(valid, x, 0.0).sum(dim) / n.clamp_min(1), nan)
    dev = torch.where(valid, x - mean.unsqueeze(dim), 0.0)
    var = dev.square().sum(dim) / (n - 1).clamp_min(1)
    df = (n - 1).clamp_min(1).to(torch.float64).cpu().numpy()
    t = torch.as_tensor(student_t.ppf(0.5 + level / 2, df), dtype=torch.float64).to(x.device)
    half = torch.where(n >= 2, t * (var / n.clamp_min(1)).sqrt(), nan)
    return MeanInterval(mean=mean, low=mean - half, high=mean + half, n=n)
