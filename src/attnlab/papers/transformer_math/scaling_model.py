"""The model the transformer-math.scaling experiment trains: one attention head on the
positional-copy task (:mod:`attnlab.tasks.copy`), with the logit scale c of §1.2.3 as
its only switch, and what is measured of it on a held-out batch.

math-behind-transformers §1.2.3 motivates the factor 1/sqrt(k) by saturation: the
unscaled logits q.k grow like sqrt(d_head), the softmax approaches one-hot (eq. 9),
its Jacobian diag(s) - s s^T (eq. 8) vanishes, and so does the gradient that reaches
the logits. :func:`measure` reads exactly those quantities off the model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnlab.analysis.logit_scaling import softmax_entropy
from attnlab.ops import attention_logits, masked_softmax
from attnlab.ops.softmax import Scale
from attnlab.stored import Stored
from attnlab.tasks import CopyBatch


class CopyAttention(nn.Module):
    """Embedding -> one attention head -> readout, for the positional-copy task.

        x_j = E[t_j] + P[j]      (n, d_model)  context rows, j = 0..n-1
        y   = R[p]               (d_model,)    the query token naming position p
        q = y W_Q,  K = X W_K,  V = X W_V      (d_head), (n, d_head), (n, d_head)
        z = c q K^T              (n,)          attention logits, the softmax input
        a = softmax(z),  logits = (a V) W_U    (V_vocab,)

    ``scale`` is c as :func:`attnlab.ops.attention_logits` takes it: "1/sqrt(d)" for
    c = 1/sqrt(d_head) (§1.2.3) or "none" for c = 1; it is a plain attribute, so a copy
    of a model can switch it and keep the same weights.

    Init, all from ``generator`` in the order E, P, R, W_Q, W_K, W_V, W_U:
    E, P ~ N(0, 1/2) (so x_j has unit-variance entries), R ~ N(0, 1),
    W_Q, W_K ~ N(0, s^2/d_model) with s = ``logit_init_scale`` (Var(q.k) = s^4 d_head),
    W_V ~ N(0, 1/d_model), W_U ~ N(0, 1/d_head).
    """

    def __init__(self, *, V: int, n: int, d_model: int, d_head: int, scale: Scale, logit_init_scale: float,
                 generator: torch.Generator):
        super().__init__()
        dm, dh, s = d_model, d_head, logit_init_scale

        def normal(*shape: int, std: float) -> nn.Parameter:
            return nn.Parameter(torch.randn(*shape, generator=generator) * std)

        self.scale = scale
        self.E, self.P = normal(V, dm, std=math.sqrt(0.5)), normal(n, dm, std=math.sqrt(0.5))
        self.R = normal(n, dm, std=1.0)
        self.W_Q, self.W_K = normal(dm, dh, std=s / math.sqrt(dm)), normal(dm, dh, std=s / math.sqrt(dm))
        self.W_V, self.W_U = normal(dm, dh, std=1 / math.sqrt(dm)), normal(dh, V, std=1 / math.sqrt(dh))

    def logits_and_values(self, b: CopyBatch) -> tuple[Tensor, Tensor]:
        """z (B, 1, n) and the values V (B, n, d_head)."""
        X = self.E[b.tokens] + self.P  # (B, n, d_model)
        y = self.R[b.positions][:, None]  # (B, 1, d_model)
        return attention_logits(y @ self.W_Q, X @ self.W_K, self.scale), X @ self.W_V

    def readout(self, z: Tensor, V: Tensor) -> Tensor:
        """Class logits (B, V_vocab) from attention logits z (B, 1, n) and values (B, n, d_head)."""
        return (masked_softmax(z, None) @ V).squeeze(1) @ self.W_U  # (B, V_vocab)

    def forward(self, b: CopyBatch) -> Tensor:
        return self.readout(*self.logits_and_values(b))


@dataclass(frozen=True)
class Measurement(Stored):
    """Held-out numbers of one model on a batch of B examples (:func:`measure`), each a mean over examples."""

    loss: float  # cross-entropy l_i of the class logits
    accuracy: float  # fraction with argmax = target
    entropy: float  # H(a_i) = -sum_j a_ij log a_ij of a_i = softmax(z_i): log n uniform, 0 one-hot (saturated)
    grad_norm: float  # ||dl_i/dz_i||, the gradient reaching the logits through the softmax Jacobian (eq. 8)


def measure(model: CopyAttention, b: CopyBatch) -> Measurement:
    """Held-out numbers of ``model`` on the batch ``b`` (B examples), each a mean over examples:

    loss      cross-entropy l_i of the class logits
    accuracy  fraction with argmax = target
    entropy   H(a_i) = -sum_j a_ij log a_ij of the attention weights a_i = softmax(z_i)
              (log n: uniform; 0: one-hot, saturated)
    grad_norm ||dl_i/dz_i||, the gradient of the example's loss reaching its logits
              through the softmax Jacobian (eq. 8): it vanishes as a_i saturates
    """
    z, V = model.logits_and_values(b)
    z = z.detach().requires_grad_(True)
    with torch.enable_grad():
        out = model.readout(z, V.detach())
        losses = F.cross_entropy(out, b.targets, reduction="none")  # (B,)
        (dz,) = torch.autograd.grad(losses.sum(), z)  # row i holds dl_i/dz_i: (B, 1, n)
    return Measurement(loss=losses.mean().item(),
                       accuracy=(out.argmax(-1) == b.targets).double().mean().item(),
                       entropy=softmax_entropy(z.detach()).mean().item(),
                       grad_norm=dz.norm(dim=-1).mean().item())
