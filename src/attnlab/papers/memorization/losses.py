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

import torch
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


def masked_cross_entropy(logits: Tensor, y: Tensor, T_m: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """The masked mean cross-entropy of M stacked models and its gradient in the logits.

    logits (M, T, C), y (T,) integer labels, T_m (M,) int64: model m is scored on its first
    T_m[m] rows,

        L_m = -(1 / T_m) sum_{t < T_m} log softmax(y_hat_m^(t))[y^(t)],
        dL_m / dy_hat_m^(t) = (softmax(y_hat_m^(t)) - onehot(y^(t))) / T_m   (0 for t >= T_m).

    -> loss (M,), G = dL/dlogits (M, T, C), correct (M,) int64: the labels among its T_m rows
    that are the argmax of y_hat_m.
    """
    M, T = logits.shape[:2]
    mask = torch.arange(T, device=logits.device) < T_m[:, None]  # (M, T)
    weight = mask.to(logits.dtype) / T_m[:, None].to(logits.dtype)  # 1 / T_m on the rows used
    logp = torch.log_softmax(logits, dim=-1)
    labels = y.expand(M, T)[..., None]  # (M, T, 1)
    loss = -(logp.gather(-1, labels)[..., 0] * weight).sum(-1)
    correct = ((logits.argmax(-1) == y) & mask).sum(-1)
    G = logp.exp_()
    G.scatter_add_(-1, labels, -torch.ones_like(G[..., :1])).mul_(weight[..., None])
    return loss, G, correct


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
