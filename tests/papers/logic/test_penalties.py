"""The extra losses of §4.1's lean flavours on the restricted systems' access patterns."""

import torch

from attnlab.papers.logic.model import init_params, masks
from attnlab.papers.logic.penalties import penalties
from tolerances import FLOAT64


def test_penalties_vanish_on_the_hand_built_structures():
    N, M = 3, 6
    p = init_params(N, M, torch.Generator().manual_seed(0))
    m3 = masks("3", N, M)
    e = {k: p[k] * m3[k] if k in m3 else p[k] for k in p}
    P = penalties(e, N, M)
    assert float(P[2]) <= FLOAT64  # system 3's access pattern is solution 3's structure
    assert float(P[1]) >= 1.0  # and entirely outside solution 2's (A in PP, v in CC)
