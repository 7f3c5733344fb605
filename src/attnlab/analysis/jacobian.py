"""Jacobians of a model's outputs with respect to its inputs, position by position.

The masked decoder of math-behind-transformers §1.2.5 (eq. 10) lets position i see
only the target positions j <= i. Its output logits y_i (l values, l = target
vocabulary) then cannot depend on the embedded target rows x_j for j > i:

    N_ij = || d y_i / d x_j ||_F,    y_i in R^l,   x_j in R^d,   i, j = 1..n'

must be exactly 0 above the diagonal (j > i), where the mask adds -inf before the
softmax, so the weight is exactly 0 and so is every gradient through it.
"""

from __future__ import annotations

import torch
from torch import Tensor

from attnlab.nn.transformer import EncoderDecoder


def decoder_jacobian_blocks(model: EncoderDecoder, src_tokens: Tensor, tgt_tokens: Tensor) -> Tensor:
    """N_ij = ||d logits_i / d X_j||_F for the position-aware target embeddings X; shape (n', n').

    src_tokens: (1, n) and tgt_tokens: (1, n') token ids of one sequence (batch 1).
    X = the decoder's embedding of the target (token embedding + positions), (1, n', d);
    the encoder output Z is held fixed. Entry (i, j) is the Frobenius norm of the
    (l x d) block of the autograd Jacobian of the logits (1, n', l) with respect to X,
    computed in the model's dtype (float64 for exact zeros to mean "independent").
    """
    Z = model.encoder(src_tokens).output  # (1, n, d)
    X = model.decoder.embed(tgt_tokens).detach()  # (1, n', d)
    J = torch.autograd.functional.jacobian(lambda X_: model.decoder.decode(X_, Z).logits, X,
                                           vectorize=True)  # (1, n', l, 1, n', d)
    J = J[0, :, :, 0]  # (n', l, n', d)
    return J.pow(2).sum(dim=(1, 3)).sqrt()  # (n', n')
