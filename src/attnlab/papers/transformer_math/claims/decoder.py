"""A check of attnlab's masked decoder (math-behind-transformers §1.2.5, eq. 10): a test of attnlab's
code, since the text's mask makes every decoder causal by its definition."""

from __future__ import annotations

import torch

from attnlab.analysis.jacobian import decoder_jacobian_blocks
from attnlab.nn.block import BlockConfig
from attnlab.nn.transformer import EncoderDecoder
from attnlab.checks import Check, equals
from attnlab.registry import claim


@claim(
    "transformer-math.decoder-causal",
    where="§1.2.5, eq. (10)",
    statement="attnlab's masked decoder (EncoderDecoder, post- and pre-LN): its output at position i does not "
              "depend on target positions j > i",
    paper_value="exactly 0 (mask of -inf above the diagonal)",
)
def _decoder_causal(seed: int) -> Check:
    """max over j > i of N_ij = ||d y_i / d x_j||_F must be exactly 0, and min over j <= i
    must be > 1e-6 (the check is not vacuous: otherwise the measured value is NaN, a fail), for a
    post-LN and a pre-LN model. Eq. (10)'s mask makes this hold for every input: the row tests
    attnlab's decoder, not the text (sanity)."""
    g = torch.Generator().manual_seed(seed)
    worst_future, least_past = 0.0, float("inf")
    for norm_position in ("post", "pre"):
        with torch.random.fork_rng():  # module initialisation draws from the global generator
            torch.manual_seed(seed)
            model = EncoderDecoder(11, 13, 6, 3, 7, 2, block=BlockConfig(norm_position=norm_position)).double()
        src = torch.randint(0, 11, (1, 5), generator=g)
        tgt = torch.randint(0, 13, (1, 7), generator=g)
        N = decoder_jacobian_blocks(model, src, tgt)  # (7, 7)
        future = torch.triu(torch.ones_like(N, dtype=torch.bool), diagonal=1)  # j > i
        worst_future = max(worst_future, N[future].max().item())
        least_past = min(least_past, N[~future].min().item())
    detail = (
        f"max ||d out_i/d x_j|| over j > i = {worst_future:.1e} (autograd, float64, d=6, H=3, L=2, "
        f"n_src=5, n_tgt=7, post- and pre-LN); min over j <= i = {least_past:.3e} (> 0: not vacuous)"
    )
    values = {"max_future_norm": worst_future, "min_past_norm": least_past, "min_past_bound": 1e-6,
              "d_model": 6, "n_heads": 3, "n_layers": 2, "n_src": 5, "n_tgt": 7,
              "norm_positions": ["post", "pre"]}
    measured = worst_future if least_past > 1e-6 else float("nan")
    return equals(measured, 0.0, detail, values, role="sanity")
