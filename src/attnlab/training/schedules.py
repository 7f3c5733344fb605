"""Learning-rate schedules as pure functions of the step.

The memorization paper (Appendix A) trains with Adam, learning rate 1e-3, "a
scheduler with linear warmup and Cosine decay". With base rate eta, warmup
length W, total steps S and floor eta_min, the rate used by update number
s + 1 (s = 0, 1, ..., S - 1) is

    eta(s) = eta (s + 1) / W                                  s < W        (warmup)
    eta(s) = eta_min + (eta - eta_min) (1 + cos(pi p)) / 2,   p = (s - W) / (S - W)
                                                              W <= s < S   (cosine)
    eta(s) = eta_min                                          s >= S       (floor)

so the first update already moves (eta / W, not 0), the warmup ends exactly at
eta, the cosine midpoint p = 1/2 gives (eta + eta_min) / 2, and the rate reaches
the floor at s = S.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from attnlab.errors import ConfigError


def warmup_cosine(
    step: int, base_lr: float, warmup_steps: int, total_steps: int, min_lr: float = 0.0
) -> float:
    """eta(step) of the linear-warmup + cosine-decay schedule (module docstring)."""
    if step < 0:
        raise ConfigError(f"step must be >= 0, got {step}")
    if step < warmup_steps:
        return base_lr * (step + 1) / warmup_steps
    if step >= total_steps:
        return min_lr
    p = (step - warmup_steps) / (total_steps - warmup_steps)
    return min_lr + (base_lr - min_lr) * 0.5 * (1.0 + math.cos(math.pi * p))


@dataclass(frozen=True)
class WarmupCosine:
    """The schedule as a value: ``WarmupCosine(1e-3, 100, 10_000)(step) -> float``.

    base_lr: eta, the peak rate.  warmup_steps: W (0 = no warmup).
    total_steps: S.  min_lr: eta_min, the floor reached at step S.
    """

    base_lr: float
    warmup_steps: int
    total_steps: int
    min_lr: float = 0.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.base_lr) and self.base_lr > 0):
            raise ConfigError(f"base_lr must be a positive number, got {self.base_lr!r}")
        if not isinstance(self.total_steps, int) or self.total_steps < 1:
            raise ConfigError(f"total_steps must be an integer >= 1, got {self.total_steps!r}")
        if not isinstance(self.warmup_steps, int) or not 0 <= self.warmup_steps < self.total_steps:
            raise ConfigError(
                f"warmup_steps must be an integer in [0, total_steps={self.total_steps}), "
                f"got {self.warmup_steps!r}"
            )
        if not 0 <= self.min_lr <= self.base_lr:
            raise ConfigError(
                f"min_lr must be in [0, base_lr={self.base_lr:g}], got {self.min_lr!r}"
            )

    def __call__(self, step: int) -> float:
        return warmup_cosine(step, self.base_lr, self.warmup_steps, self.total_steps, self.min_lr)


def constant(lr: float):
    """eta(s) = lr for every step."""
    if not (math.isfinite(lr) and lr > 0):
        raise ConfigError(f"learning rate must be a positive number, got {lr!r}")
    return lambda step: lr
