"""Losses and metrics of the memorization paper's model (:mod:`attnlab.papers.memorization.model`).

memorization-capacity-of-mha §5.2 and Appendix A: classification of labels uniform over
``n_classes`` classes by the cross-entropy of y_hat (eq. (6), d_out = n_classes logits),
and regression of real labels by the mean squared error (App. A, Fig. 5). Every function
takes one model's parameters (unstacked) and the batch of one data set:

    E: (n, d) shared context or (B, n, d), one per example;  e: (B, d) queries;
    y: (B,) integer classes, or (B, d_out) / (B,) real labels.

Memorized means 100% train accuracy (argmax y_hat^(t) = y^(t) for every t) for
classification; for regression the experiments compare the MSE with a threshold.
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor

from attnlab.papers.memorization.model import attention_classifier


def classifier_loss(params: dict[str, Tensor], E: Tensor, e: Tensor, y: Tensor) -> Tensor:
    """Mean cross-entropy of the logits against integer labels y: (B,) -> scalar."""
    return F.cross_entropy(attention_classifier(params, E, e), y)


def classifier_metrics(params: dict[str, Tensor], E: Tensor, e: Tensor, y: Tensor) -> dict[str, Tensor]:
    """Full-data cross-entropy and accuracy (fraction of argmax y_hat == y)."""
    logits = attention_classifier(params, E, e)
    return {
        "loss": F.cross_entropy(logits, y),
        "accuracy": (logits.argmax(-1) == y).to(logits.dtype).mean(),
    }


def regression_loss(params: dict[str, Tensor], E: Tensor, e: Tensor, y: Tensor) -> Tensor:
    """Mean squared error of eqs. (1)-(6) with real labels (Appendix A, Fig. 5).

    y: (B, d_out) targets, or (B,) when d_out = 1 (the paper's y ~ U(0, 1));
    MSE = (1 / (B d_out)) sum_t ||y_hat^(t) - y^(t)||^2.  -> scalar.
    """
    y_hat = attention_classifier(params, E, e)  # (B, d_out)
    return F.mse_loss(y_hat, y.reshape(y_hat.shape))


def regression_metrics(params: dict[str, Tensor], E: Tensor, e: Tensor, y: Tensor) -> dict[str, Tensor]:
    """Full-data MSE ("loss" and "mse") and the largest error max_t |y_hat^(t) - y^(t)|."""
    y_hat = attention_classifier(params, E, e)
    err = y_hat - y.reshape(y_hat.shape)  # (B, d_out)
    mse = (err * err).mean()
    return {"loss": mse, "mse": mse, "max_abs_error": err.abs().amax()}
