"""Training many small models at once.

- ``batched``:   ``train_batched``: M stacked models, one vmapped gradient per step,
                 per-model data, minibatch order and early stopping.
- ``optim``:     functional Adam / AdamW on stacked parameter dicts.
- ``lbfgs``:     full-batch L-BFGS (torch.optim.LBFGS per model, same interface).
- ``schedules``: learning-rate schedules as pure functions of the step.
- ``models``:    the memorization paper's single-layer attention classifier, eqs. (1)-(6),
                 with cross-entropy (classes) and MSE (real labels) losses.
- ``authors_model``: the model the paper trains (§5.2): linear embedding + sinusoidal
                 positional encoding + one attention layer, read out at the first token.
"""

from attnlab.training.authors_model import (
    KEYS,
    authors_loss,
    authors_metrics,
    authors_model,
    authors_regression_loss,
    authors_regression_metrics,
    init_authors_model,
)
from attnlab.training.batched import (
    OPTIMIZERS,
    MinibatchSampler,
    TrainConfig,
    TrainResult,
    module_loss,
    train_batched,
)
from attnlab.training.models import (
    attention_classifier,
    classifier_loss,
    classifier_metrics,
    init_attention_classifier,
    regression_loss,
    regression_metrics,
    training_flops_per_step,
)
from attnlab.training.optim import AdamState, adam_init, adam_update, adamw_update
from attnlab.training.schedules import WarmupCosine, constant, warmup_cosine

__all__ = [
    "KEYS",
    "authors_loss",
    "authors_metrics",
    "authors_model",
    "authors_regression_loss",
    "authors_regression_metrics",
    "init_authors_model",
    "regression_loss",
    "regression_metrics",
    "OPTIMIZERS",
    "AdamState",
    "MinibatchSampler",
    "TrainConfig",
    "TrainResult",
    "WarmupCosine",
    "adam_init",
    "adam_update",
    "adamw_update",
    "attention_classifier",
    "classifier_loss",
    "classifier_metrics",
    "constant",
    "init_attention_classifier",
    "module_loss",
    "train_batched",
    "training_flops_per_step",
    "warmup_cosine",
]
