"""The attention viewer of rank-collapse.ablations: the pretrained networks' maps, each head beside its scores.

Every head of pretrained all-MiniLM-L6-v2 (and SmolLM2-135M-Instruct when measured) on the first text, as the
network is (no ablation), beside its map residual r(P) = ||P - 1 mean^T||_{1,inf} / ||P||_{1,inf} (0 when every
query attends alike, so that the head alone maps any input to rank one) and its mean row entropy
(:func:`head_scores`).
"""

from __future__ import annotations

import math
from typing import Any
from dataclasses import dataclass

import torch

from attnlab.analysis.residuals import relative_residual
from attnlab.papers.rank_collapse.stacks import minilm, smollm2


VIEW_MODELS = ("pretrained", "smollm2")  # the pretrained networks whose maps the report's viewer shows
VIEW_SCORES = {
    "map residual": "r(P) = ||P - 1 mean^T||_{1,inf} / ||P||_{1,inf}, mean = the average query's row: 0 when "
                    "every query attends alike (P = 1 p^T, so P X has rank one)",
    "entropy": "mean over queries of -sum_j P_ij log P_ij (nats); uniform attention: log n, or mean_i log i "
               "under a causal mask",
}


@dataclass(frozen=True)
class HeadScores:
    """Per-head scores of attention maps P (..., n, n) (rows = queries), shown beside the maps."""

    map_residual: torch.Tensor  # r(P) = ||P - 1 mean^T||_{1,inf} / ||P||_{1,inf}, (...)
    entropy: torch.Tensor  # mean row entropy -(1/n) sum_ij P_ij log P_ij in nats, (...)

    def to_dict(self) -> dict[str, torch.Tensor]:
        """The viewer's scores, keyed by their names in :data:`VIEW_SCORES`."""
        return {"map residual": self.map_residual, "entropy": self.entropy}


def head_scores(P: torch.Tensor) -> HeadScores:
    """Per head, for maps P (..., n, n) (rows = queries): the map's own relative residual

        r(P) = ||P - 1 mean^T||_{1,inf} / ||P||_{1,inf},   mean = P^T 1 / n  (the average row),

    0 exactly when every query puts the same weights on the keys, P = 1 p^T: then P X = 1 (p^T X)
    has rank one, whatever X, so a head with r(P) near 0 alone collapses its input towards one row
    (Dong et al.'s mechanism, one head at a time); and the mean row entropy
    -(1/n) sum_i sum_j P_ij log P_ij (nats; 0 log 0 = 0): log n for uniform attention, (1/n) sum_i log i
    for uniform causal attention (row i, from 1, on i keys). Each (...)."""
    return HeadScores(map_residual=relative_residual(P, "mean"), entropy=-torch.special.xlogy(P, P).sum(-1).mean(-1))


def attention_view(model_name: str, batch: Any, attentions: list[torch.Tensor], device: str = "cpu") -> dict:
    """The report's attention viewer block of ``model_name`` ("pretrained" or "smollm2"): every head's
    weights on the first text of ``batch`` (its run as it is, ``attentions`` L x (B, H, n, n)), the
    tokens as the figures label them, and :func:`head_scores` of each map beside it."""
    from attnlab.pretrained.labels import token_labels
    from attnlab.reports.viewer import viewer_data

    pm = smollm2(device) if model_name == "smollm2" else minilm(device)
    A = torch.stack([a[0] for a in attentions])  # (L, H, n, n)
    L, H, n, _ = A.shape
    tokens = token_labels(pm.tokenizer, pm.tokenizer.convert_ids_to_tokens(batch.input_ids[0].tolist()))
    causal = model_name == "smollm2"
    name = "SmolLM2-135M-Instruct" if causal else "all-MiniLM-L6-v2"
    mask = "causal: query i sees keys j <= i" if causal else "bidirectional"
    # uniform attention under the mask: log n per row, or log i on row i (1-based) of a causal map
    uniform = (sum(math.log(i) for i in range(1, n + 1)) / n if causal else math.log(n))
    return viewer_data(
        A, tokens, title=f"Pretrained {name}: every head on the first text",
        caption=f"The weights of the {L} x {H} heads of pretrained {name} as it is (no ablation; {mask}) on the "
                f"first text ({n} tokens). Beside the map, each head's map residual r(P) (0: every query attends "
                "alike, so the head alone maps its input to rank one) and mean row entropy (nats; "
                f"{uniform:.2f} for uniform attention under the mask).",
        scores=head_scores(A).to_dict(), score_descriptions=VIEW_SCORES)
