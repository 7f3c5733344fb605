"""transformer-math.sweep-selftest: a seeded random computation that exercises the sweep engine.

Not an experiment from the paper: it checks what :mod:`attnlab.sweeps` promises. Its
draws come from the global generators of torch, NumPy and Python's ``random`` on
purpose, since seeding those from the run's seed is what the engine must do::

    mean   = mean(x * z),  z = torch.randn(n, float64) after torch.manual_seed(seed)
    np_u   = numpy.random.random_sample() after numpy.random.seed(seed)
    py_u   = random.random() after random.seed(seed)
    x_n    = x * n  (exact, independent of any generator)

It sleeps ``sleep`` seconds before returning (to test interrupted sweeps) and raises
when ``fail`` is true (to test failure recording). ``attnlab reproduce`` skips it.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass

from attnlab.errors import ConfigError
from attnlab.experiments.registry import Experiment, register

SELFTEST_ID = "transformer-math.sweep-selftest"


@dataclass(frozen=True)
class SweepSelftestConfig:
    """x: scale of the draws; n: number of draws; fail: raise; sleep: seconds to wait."""

    scale: str = "quick"
    seed: int = 0
    device: str = "cpu"
    x: float = 1.0
    n: int = 3
    fail: bool = False
    sleep: float = 0.0

    def __post_init__(self) -> None:
        if self.scale not in ("quick", "paper"):
            raise ConfigError(f"scale must be quick or paper, got {self.scale!r}")
        if not isinstance(self.seed, int) or isinstance(self.seed, bool) or self.seed < 0:
            raise ConfigError(f"seed must be a non-negative integer, got {self.seed!r}")
        if self.device != "cpu" and not self.device.startswith("cuda"):
            raise ConfigError(f"device must be 'cpu' or 'cuda', got {self.device!r}")
        if isinstance(self.x, bool) or not isinstance(self.x, (int, float)) or not math.isfinite(self.x):
            raise ConfigError(f"x must be a finite number, got {self.x!r}")
        if isinstance(self.n, bool) or not isinstance(self.n, int) or self.n < 1:
            raise ConfigError(f"n must be an integer >= 1, got {self.n!r}")
        if not isinstance(self.fail, bool):
            raise ConfigError(f"fail must be true or false, got {self.fail!r}")
        if isinstance(self.sleep, bool) or not isinstance(self.sleep, (int, float)) or not 0 <= self.sleep <= 60:
            raise ConfigError(f"sleep must be a number of seconds in [0, 60], got {self.sleep!r}")


def run_sweep_selftest(cfg: SweepSelftestConfig, run_dir=None) -> dict:
    import numpy as np
    import torch

    print(f"selftest: x={cfg.x} n={cfg.n} seed={cfg.seed}")
    z = torch.randn(cfg.n, dtype=torch.float64, device=cfg.device)  # global generator, seeded by the engine
    mean = (cfg.x * z).mean().item()
    np_u, py_u = float(np.random.random_sample()), random.random()
    if run_dir is not None:
        run_dir.append_metric({"experiment": SELFTEST_ID, "mean": mean})
    if cfg.sleep:
        time.sleep(cfg.sleep)
    if cfg.fail:
        raise RuntimeError(f"requested failure (fail=true, x={cfg.x}, n={cfg.n})")
    return {"scalars": {"mean": mean, "np_u": np_u, "py_u": py_u, "x_n": cfg.x * cfg.n},
            "data": {"z": z.tolist()},
            "notes": ["engine self-test: draws from the generators the sweep engine seeds"]}


register(Experiment(SELFTEST_ID, "engine self-test: a seeded random computation",
                    SweepSelftestConfig, run_sweep_selftest, in_reproduce=False))
