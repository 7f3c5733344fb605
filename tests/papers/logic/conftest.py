"""A trained-models record built by hand for the logic paper's tests: no training, the hand-built weights."""

import numpy as np
import pytest
import torch

from attnlab.papers.logic.encoding import random_sequences, targets
from attnlab.papers.logic.lbfgs_training import Trained
from attnlab.papers.logic.members import Member, Task
from attnlab.papers.logic.model import hand_built_params
from attnlab.papers.logic.solutions import build

N, M = 3, 7  # distinct primes: an axis mix-up of categories and positions fails


@pytest.fixture
def hand_trained() -> Trained:
    """Seed index 0 (q_true from rng 0, 30 training and 50 fresh sequences) with two main members: system 2
    holding solution 2's weights and the free flavour holding solution 3's, as if training had found them."""
    rng = np.random.default_rng(0)
    q = rng.standard_normal((N, N))
    tok, test = random_sequences(N, M, 30, rng), random_sequences(N, M, 50, rng)
    tk = Task(q, tok, targets(tok, q), test, targets(test, q))
    p2, p3 = hand_built_params(build("2", q, M)), hand_built_params(build("3", q, M))
    mem = [Member("main", "system 2", 0, (0.0, 0.0, 0.0), 1.0), Member("main", "free", 0, (0.0, 0.0, 0.0), 1.0)]
    params = {k: torch.stack([p2[k], p3[k]]) for k in p2}
    return Trained(mem, [tk], params, np.array([[-1.0, -2.0]]), {"system 2": [0], "lean-2": [], "free": [1]}, 0.0)
