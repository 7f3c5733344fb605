"""Settings and result of a batched training run, shared by every optimizer
(:mod:`attnlab.training.batched` for Adam/AdamW, :mod:`attnlab.training.lbfgs`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Union

import torch
from torch import Tensor

from attnlab.config import Config, check_bool, check_choice, check_device, check_int
from attnlab.errors import ConfigError

Params = dict[str, Tensor]
Schedule = Union[float, Callable[[int], float]]

OPTIMIZERS = ("adam", "adamw", "lbfgs")
DEFAULT_LR = {"adam": 1e-3, "adamw": 1e-3, "lbfgs": 1.0}
DEFAULT_WEIGHT_DECAY = {"adam": 0.0, "adamw": 1e-2, "lbfgs": 0.0}


@dataclass(frozen=True)
class TrainConfig(Config):
    """Settings of one batched training run (data and models are arguments, not settings).

    steps: optimizer updates (L-BFGS: ``optimizer.step`` calls, each up to
    ``lbfgs_max_iter`` iterations).  batch_size: None = full batch.
    lr: a number or a schedule ``step -> rate`` (training.schedules); None picks
    1e-3 for Adam/AdamW, 1.0 for L-BFGS.  weight_decay: None picks 0 (Adam, L-BFGS)
    or 1e-2 (AdamW, as torch.optim.AdamW).  lbfgs_*: torch.optim.LBFGS's max_iter,
    history_size, line_search_fn, tolerance_grad, tolerance_change (its defaults).
    compile: wrap the vmapped gradient in ``torch.compile`` (Adam/AdamW): on CPU a
    one-time compilation of tens of seconds, then steps several times faster
    (benchmarks/README.md); pays off for long runs.
    """

    steps: int
    batch_size: int | None = None
    optimizer: str = "adam"
    lr: Schedule | None = None
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    weight_decay: float | None = None
    eval_every: int = 100
    device: str = "cpu"
    lbfgs_max_iter: int = 20
    lbfgs_history: int = 100
    lbfgs_line_search: str | None = "strong_wolfe"
    lbfgs_tolerance_grad: float = 1e-7
    lbfgs_tolerance_change: float = 1e-9
    compile: bool = False

    @classmethod
    def normal_form(cls, values: dict[str, Any]) -> dict[str, Any]:
        """lr and weight_decay left None take the optimizer's defaults (DEFAULT_LR, DEFAULT_WEIGHT_DECAY);
        betas a tuple (checked here)."""
        v = super().normal_form(values)
        check_choice("optimizer", v["optimizer"], OPTIMIZERS)
        if v["lr"] is None:
            v["lr"] = DEFAULT_LR[v["optimizer"]]
        if v["weight_decay"] is None:
            v["weight_decay"] = DEFAULT_WEIGHT_DECAY[v["optimizer"]]
        if len(v["betas"]) != 2 or not all(0 <= b < 1 for b in v["betas"]):
            raise ConfigError(f"betas must be two numbers in [0, 1), got {v['betas']!r}")
        v["betas"] = tuple(v["betas"])
        return v

    def validate(self) -> None:
        check_choice("optimizer", self.optimizer, OPTIMIZERS)
        for name in ("steps", "eval_every", "lbfgs_max_iter", "lbfgs_history"):
            check_int(name, getattr(self, name), minimum=1)
        if self.batch_size is not None:
            check_int("batch_size (None: full batch)", self.batch_size, minimum=1)
        number = isinstance(self.lr, (int, float)) and math.isfinite(self.lr) and self.lr > 0
        if not callable(self.lr) and not number:
            raise ConfigError(f"lr must be a positive number or a schedule step -> rate, got {self.lr!r}")
        if not self.weight_decay >= 0:
            raise ConfigError(f"weight_decay must be >= 0, got {self.weight_decay!r}")
        if not self.eps > 0:
            raise ConfigError(f"eps must be > 0, got {self.eps!r}")
        if self.optimizer == "lbfgs" and callable(self.lr):
            raise ConfigError("L-BFGS takes a constant lr (a number), not a schedule")
        if self.lbfgs_line_search not in (None, "strong_wolfe"):
            raise ConfigError(
                f"lbfgs_line_search must be 'strong_wolfe' or None, got {self.lbfgs_line_search!r}"
            )
        if not (self.lbfgs_tolerance_grad >= 0 and self.lbfgs_tolerance_change >= 0):
            raise ConfigError("lbfgs_tolerance_grad and lbfgs_tolerance_change must be >= 0")
        check_bool("compile", self.compile)
        check_device(self.device)

    def rate(self, step: int) -> float:
        """eta(step) for update number step + 1."""
        return float(self.lr(step)) if callable(self.lr) else float(self.lr)


@dataclass(frozen=True)
class TrainResult:
    """params: stacked final parameters (M, ...).  eval_steps: updates made at each
    evaluation.  history: metric name -> (n_evals, M).  steps_to_stop: (M,) int64,
    updates made when the stop rule first held (-1: never).  stopped: (M,) bool."""

    params: Params
    eval_steps: list[int]
    history: dict[str, Tensor]
    steps_to_stop: Tensor
    stopped: Tensor


def train_result(params: Params, eval_steps: list[int], records: list[dict[str, Tensor]],
                 steps_to_stop: Tensor) -> TrainResult:
    """The TrainResult of a finished run: metric histories stacked as (n_evals, M)."""
    history = {k: torch.stack([r[k].cpu() for r in records]) for k in records[0]} if records else {}
    return TrainResult(params, eval_steps, history, steps_to_stop, steps_to_stop >= 0)
