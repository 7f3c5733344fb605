"""Learning-rate schedules (training/schedules.py): values derived by hand."""

from __future__ import annotations

import math

import pytest

from attnlab.errors import ConfigError
from attnlab.training import WarmupCosine, constant, warmup_cosine

# eta = 1e-3, W = 10, S = 110, eta_min = 1e-5 (module docstring's formulas)
SCHED = WarmupCosine(base_lr=1e-3, warmup_steps=10, total_steps=110, min_lr=1e-5)


@pytest.mark.parametrize(
    "step, expected",
    [
        (0, 1e-4),  # warmup: eta (s + 1) / W
        (4, 5e-4),
        (9, 1e-3),  # warmup ends exactly at eta
        (10, 1e-3),  # cosine start p = 0
        (60, (1e-3 + 1e-5) / 2),  # p = 50/100: midpoint
        (35, 1e-5 + (1e-3 - 1e-5) * (1 + math.cos(math.pi / 4)) / 2),  # p = 1/4
        (110, 1e-5),  # floor at S
        (10_000, 1e-5),  # and after
    ],
)
def test_warmup_cosine_values(step, expected):
    assert SCHED(step) == pytest.approx(expected, rel=1e-14, abs=0)


def test_decay_is_monotone_and_no_warmup_starts_at_peak():
    rates = [SCHED(s) for s in range(10, 111)]
    assert all(a >= b for a, b in zip(rates, rates[1:]))
    assert warmup_cosine(0, 0.1, 0, 100) == 0.1
    assert constant(0.3)(12345) == 0.3


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        (dict(base_lr=0.0, warmup_steps=0, total_steps=10), "base_lr"),
        (dict(base_lr=1e-3, warmup_steps=10, total_steps=10), "warmup_steps"),
        (dict(base_lr=1e-3, warmup_steps=0, total_steps=0), "total_steps"),
        (dict(base_lr=1e-3, warmup_steps=0, total_steps=10, min_lr=1e-2), "min_lr"),
    ],
)
def test_bad_schedules_raise_config_error(kwargs, fragment):
    with pytest.raises(ConfigError, match=fragment):
        WarmupCosine(**kwargs)


def test_negative_step_and_bad_constant_raise():
    with pytest.raises(ConfigError, match="step"):
        SCHED(-1)
    with pytest.raises(ConfigError, match="learning rate"):
        constant(-1.0)
