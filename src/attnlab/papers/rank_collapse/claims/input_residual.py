"""§2.4 problem 3 of the rank-collapse notes: "why is the input residual smaller than 1?"

Theorem 2.2's bound (4 beta / sqrt(d_qk))^{(3^L - 1)/2} ||res X||^{3^L} goes to 0 with L
only if c^{1/2} ||res X||_{1,inf} < 1, c = 4 beta / sqrt(d_qk): a residual below 1 is what
makes it shrink. Measured on real inputs, all-MiniLM-L6-v2's embedding-layer output X
(token + position + type embeddings after LayerNorm; float64) on English help text:
the residual is NOT small. LayerNorm gives every token mean 0 and variance 1 across its
d = 384 features (before gamma, beta), which fixes each token's scale but not how the tokens
differ (identical tokens would give res X = 0): the residual is measured, not implied. It is in the tens under all four definitions
(:func:`attnlab.analysis.residuals.residual`: row mean = the notes' 2-norm argmin, exact
composite argmin, rank-one SVD): about 30-50 on 8 tokens (seeds 0, 1). The relative residual ||res X|| / ||X|| is
0.7-0.9 for the exact argmin and 0.95-1.06 for the row mean, which can exceed 1 (the mean
does not minimise the composite norm, and x = 0 is no
candidate for it; the exact argmin's relative residual is <= 1 by construction). MiniLM's own heads have
beta = ||W_QK||_1 ||W_V||_{1,inf} (W_QK = W_Q W_K^T per head, layer 1) far above the
beta < sqrt(d_qk) / (4 ||res X||^2) the bound would need, so for a trained model the
answer is: it is not; the assumption is a condition of the theorem, not a fact about
embeddings.

Problem 3 is a question, not a statement of the notes, so the claim is attnlab's own
statement, its answer: the input residual is not smaller than 1 (role own, holds iff the
smallest residual is >= 1). What the notes do state, that the bound's right side goes to 0
(§2.2), needs kappa = 4 beta ||res X||^2 / sqrt(d_qk) < 1; the values here are the witness
of that missing hypothesis (errata rank-collapse.bound-to-zero).
"""

from __future__ import annotations

import math

import torch

from attnlab.analysis.residuals import KINDS, composite_norm, l1_norm, residual
from attnlab.papers.rank_collapse.minilm_text import minilm, pydoc_texts
from attnlab.checks import Check, at_least
from attnlab.registry import claim

N_TOKENS, N_TEXTS = 8, 2  # the exact composite residual costs ~1.5 s per 8 x 384 matrix


def head_betas(layer: int = 0) -> torch.Tensor:
    """beta_h = ||W_{Q,h} W_{K,h}^T||_1 ||W_{V,h}||_{1,inf} of MiniLM's heads in ``layer`` (H,)."""
    attn = minilm().model.blocks[layer].attn
    W_QK = attn.W_Q.detach() @ attn.W_K.detach().transpose(-1, -2)  # (H, d, d)
    return l1_norm(W_QK) * composite_norm(attn.W_V.detach())


@claim(
    "rank-collapse.input-residual",
    where="§2.4 problem 3; Theorem 2.2's premise",
    statement="attnlab's answer to the notes' problem 3: the input residual of a trained model is not smaller "
              "than 1: on MiniLM's LayerNorm'ed embedding output the smallest ||res X||_{1,inf} under every "
              "residual is >= 1",
    paper_value="not stated: the notes ask why the input residual is smaller than 1",
)
def _input_residual(seed: int) -> Check:
    """attnlab's own statement, the answer to problem 3: the smallest absolute
    ||res X||_{1,inf} over 2 texts (8 tokens each, seed picks the help topics) and the four
    residual kinds; holds iff >= 1 (it is in the tens). Values:
    the absolute and relative residual per kind, and the heads' beta against the largest
    beta for which the bound would contract."""
    m = minilm()
    X = m.run(pydoc_texts(N_TEXTS, seed), max_tokens=N_TOKENS, output_attentions=False).hidden_states[0]
    full = composite_norm(X)  # (texts,)
    absolute = {k: residual(X, k).norm for k in KINDS}
    relative = {k: (v / full).tolist() for k, v in absolute.items()}
    smallest = min(v.min().item() for v in absolute.values())
    d_qk = m.model.blocks[0].attn.W_Q.shape[-1]
    beta = head_betas(0)
    beta_needed = math.sqrt(d_qk) / (4 * absolute["composite"].min().item() ** 2)
    detail = (f"MiniLM embedding output, {N_TEXTS} pydoc texts x {N_TOKENS} tokens: ||res X||_1,inf "
              + ", ".join(f"{k} {v.min():.1f}-{v.max():.1f} (relative {min(relative[k]):.2f}-{max(relative[k]):.2f})"
                          for k, v in absolute.items())
              + f"; layer-1 heads' beta {beta.min():.3g}-{beta.max():.3g} vs < {beta_needed:.2g} needed for the bound "
              f"to contract (d_qk={d_qk})")
    values = {"absolute": {k: v.tolist() for k, v in absolute.items()}, "relative": relative,
              "full_norm": full.tolist(), "beta_heads_layer1": beta.tolist(), "beta_needed": beta_needed,
              "d_qk": d_qk, "n_tokens": N_TOKENS, "n_texts": N_TEXTS}
    return at_least(smallest, 1.0, detail, values=values, role="own")
