"""Seeding the global generators a run may draw from."""

from __future__ import annotations

import random


def seed_everything(seed: int) -> None:
    """Seed Python's ``random``, NumPy's legacy global generator and torch (every device)."""
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device
