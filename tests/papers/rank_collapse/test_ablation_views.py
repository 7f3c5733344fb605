"""Each head's map residual and entropy (rank-collapse.ablations' attention viewer), by hand."""

import math

import pytest
import torch

from attnlab.papers.rank_collapse.ablation_views import VIEW_SCORES, head_scores
from tolerances import FLOAT64


def test_head_scores_of_uniform_identity_and_causal_maps():
    n = 5
    uniform = torch.full((n, n), 1 / n, dtype=torch.float64)
    identity = torch.eye(n, dtype=torch.float64)
    causal = torch.tril(torch.ones(n, n, dtype=torch.float64))
    causal = causal / causal.sum(-1, keepdim=True)  # row i attends uniformly to keys 0..i
    s = head_scores(torch.stack([uniform, identity, causal]))  # (3,)
    assert s.map_residual.shape == (3,) and s.map_residual[0].item() == 0.0  # every query alike: rank one
    # P = I: P - 1 mean^T = I - J/n; column abs sum 1 - 1/n + (n - 1)/n = 2 (n - 1)/n, rows alike, ||I|| = 1
    assert s.map_residual[1].item() == pytest.approx(2 * (n - 1) / n, rel=FLOAT64)
    assert s.entropy[0].item() == pytest.approx(math.log(n), rel=FLOAT64)
    assert s.entropy[1].item() == 0.0  # 0 log 0 = 0
    assert s.entropy[2].item() == pytest.approx(sum(math.log(i) for i in range(1, n + 1)) / n, rel=FLOAT64)
    assert set(s.to_dict()) == set(VIEW_SCORES)
