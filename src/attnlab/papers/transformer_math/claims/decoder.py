"""Claim about the masked decoder (math-behind-transformers §1.2.5, eq. 10)."""

from __future__ import annotations

import torch

from attnlab.registry import Measurement, claim
from attnlab.nn.transformer import EncoderDecoder


def decoder_jacobian_blocks(
    model: EncoderDecoder, src_tokens: torch.Tensor, tgt_tokens: torch.Tensor
) -> torch.Tensor:
    """||d logits_i / d X_j||_F for the position-aware target embeddings X, shape (n', n').

    One sequence (batch 1). Entry (i, j) is the Frobenius norm of the (l x d) block
    of the autograd Jacobian, computed in the model's dtype.
    """
    Z = model.encoder(src_tokens)
    X = model.decoder.embed(tgt_tokens).detach()  # (1, n', d)
    J = torch.autograd.functional.jacobian(lambda X_: model.decoder.decode(X_, Z), X, vectorize=True)  # (1, n', l, 1, n', d)
    J = J[0, :, :, 0]  # (n', l, n', d)
    return J.pow(2).sum(dim=(1, 3)).sqrt()  # (n', n')


@claim(
    "transformer-math.decoder-causal",
    where="§1.2.5, eq. (10)",
    statement="the masked decoder's output at position i does not depend on target positions j > i",
    paper_value="exactly 0 (mask of -inf above the diagonal)",
)
def _decoder_causal(seed: int) -> Measurement:
    g = torch.Generator().manual_seed(seed)
    worst_future, least_past = 0.0, float("inf")
    for norm_position in ("post", "pre"):
        with torch.random.fork_rng():  # module initialisation draws from the global generator
            torch.manual_seed(seed)
            model = EncoderDecoder(11, 13, 6, 3, 7, 2, norm_position=norm_position).double()
        src = torch.randint(0, 11, (1, 5), generator=g)
        tgt = torch.randint(0, 13, (1, 7), generator=g)
        N = decoder_jacobian_blocks(model, src, tgt)  # (7, 7)
        future = torch.triu(torch.ones_like(N, dtype=torch.bool), diagonal=1)  # j > i
        worst_future = max(worst_future, N[future].max().item())
        least_past = min(least_past, N[~future].min().item())
    passed = worst_future == 0.0 and least_past > 1e-6
    detail = (
        f"max ||d out_i/d x_j|| over j > i = {worst_future:.1e} (autograd, float64, d=6, H=3, L=2, "
        f"n_src=5, n_tgt=7, post- and pre-LN); min over j <= i = {least_past:.3e} (> 0: not vacuous)"
    )
    return Measurement(worst_future, 0.0, passed, "==", detail)
