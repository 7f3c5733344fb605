"""The synthetic data sets of memorization-capacity-of-mha §5.2 (and App. I.1).

Tokens and queries are iid U(0, 1)^d, so Assumptions 1 and 2 hold almost surely: the
queries e^(t) are in general position and every context E^(t) (n tokens, n < d) has
rank n. The context is one E (n, d) shared by all T examples (§5.2, Proposition 2) or
one E^(t) per example (App. I.1), in the orientation of
:mod:`attnlab.papers.memorization.model`.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from attnlab.config import check_int


def draw_dataset(T: int, n: int, d: int, d_out: int, *, shared: bool, seed: int) -> tuple:
    """(E, e, y) as in §5.2: tokens and queries iid U(0, 1)^d (Assumptions 1 and 2 hold
    almost surely), regression labels y iid N(0, 1) of shape (T, d_out).

    E: (n, d) if ``shared`` else (T, n, d); e: (T, d); float64 NumPy arrays."""
    for name, v in dict(T=T, n=n, d=d, d_out=d_out).items():
        check_int(name, v, 1)
    rng = np.random.default_rng(seed)
    E = rng.uniform(size=(n, d) if shared else (T, n, d))
    e = rng.uniform(size=(T, d))
    y = rng.standard_normal((T, d_out))
    return E, e, y


def draw_nested_dataset(T: int, n: int, d: int, n_classes: int, seed: int,
                        dtype: torch.dtype = torch.float32) -> tuple[Tensor, Tensor, Tensor]:
    """(E (n, d), e (T, d), y (T,) int64), §5.2: E and e iid U(0, 1), y uniform on [n_classes].

    The rows of e and y are drawn one example at a time from one stream, so the data
    set of size T is exactly the first T rows of any larger draw with the same seed."""
    for name, v in dict(T=T, n=n, d=d, n_classes=n_classes).items():
        check_int(name, v, 1)
    ctx, queries, labels = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3))
    E = ctx.uniform(size=(n, d))
    e = queries.uniform(size=(T, d))
    y = labels.integers(0, n_classes, size=T)
    return (torch.tensor(E, dtype=dtype), torch.tensor(e, dtype=dtype), torch.tensor(y))
