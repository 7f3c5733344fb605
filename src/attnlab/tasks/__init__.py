"""Synthetic tasks with seeded generators, used by the training experiments.

- :mod:`attnlab.tasks.copy`: positional copy, the target is the token at a
  queried position (one attention head must attend to exactly one key).
"""

from attnlab.tasks.copy import CopyBatch, copy_batch

__all__ = ["CopyBatch", "copy_batch"]
