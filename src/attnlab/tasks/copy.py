"""Positional copy: read back the token at a queried position.

An example is a context of n tokens t_1..t_n drawn i.i.d. uniformly from a
vocabulary of size V, and a query that names one position p, drawn uniformly
from {0, ..., n-1} (0-based). The target is the token at that position:

    x = (t_0, ..., t_{n-1}),  t_j ~ U{0..V-1},   p ~ U{0..n-1},   y = t_p.

A model that reads the context through one attention head solves it exactly
when the query attends to position p alone: the weights must become (nearly)
one-hot. Saturation is then the right answer late in training, but a trap at
initialisation: a softmax that starts saturated on a random position passes
almost no gradient to the logits (math-behind-transformers §1.2.3, eq. 8-9),
so it learns slowly, if at all. The Bayes-optimal loss is 0: y is a
deterministic function of (x, p).

Randomness comes only from the ``generator`` passed in, so the same generator
state gives the same batch.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from attnlab.errors import ConfigError


@dataclass(frozen=True)
class CopyBatch:
    """A batch of the positional-copy task.

    tokens:    (B, n) int64 in [0, V), the context t
    positions: (B,)   int64 in [0, n), the queried position p
    targets:   (B,)   int64 in [0, V), targets[b] = tokens[b, positions[b]]
    """

    tokens: Tensor
    positions: Tensor
    targets: Tensor

    def to(self, device: str | torch.device) -> "CopyBatch":
        return CopyBatch(self.tokens.to(device), self.positions.to(device), self.targets.to(device))


def copy_batch(batch_size: int, n: int, V: int, *, generator: torch.Generator) -> CopyBatch:
    """Draw ``batch_size`` examples of the positional-copy task (module docstring).

    The draws happen on the generator's device; ``batch_size``, ``n`` >= 1 and
    ``V`` >= 2 (with V = 1 every target is the same token and no attention is needed).
    """
    for name, value, minimum in (("batch_size", batch_size, 1), ("n", n, 1), ("V", V, 2)):
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ConfigError(f"{name} must be an integer >= {minimum}, got {value!r}")
    device = generator.device
    tokens = torch.randint(0, V, (batch_size, n), generator=generator, device=device)  # (B, n)
    positions = torch.randint(0, n, (batch_size,), generator=generator, device=device)  # (B,)
    targets = tokens.gather(1, positions[:, None]).squeeze(1)  # (B,)
    return CopyBatch(tokens, positions, targets)
