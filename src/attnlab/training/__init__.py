"""Training many small models at once.

- ``batched``:   ``train_batched``: M stacked models, one vmapped gradient per step,
                 per-model data, minibatch order and early stopping.
- ``optim``:     functional Adam / AdamW on stacked parameter dicts.
- ``lbfgs``:     full-batch L-BFGS (torch.optim.LBFGS per model, same interface).
- ``schedules``: learning-rate schedules as pure functions of the step.

Models live with the paper that defines them (e.g. :mod:`attnlab.papers.memorization.model`);
``train_batched`` takes any model given as a pure function of a parameter dict.
"""

from attnlab.training.batched import (
    OPTIMIZERS,
    MinibatchSampler,
    TrainConfig,
    TrainResult,
    module_loss,
    train_batched,
)
from attnlab.training.optim import AdamState, adam_init, adam_update, adamw_update
from attnlab.training.schedules import WarmupCosine, constant, warmup_cosine

__all__ = [
    "OPTIMIZERS",
    "AdamState",
    "MinibatchSampler",
    "TrainConfig",
    "TrainResult",
    "WarmupCosine",
    "adam_init",
    "adam_update",
    "adamw_update",
    "constant",
    "module_loss",
    "train_batched",
    "warmup_cosine",
]
