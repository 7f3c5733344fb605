"""Double centring: what remains of a block of k^t q (or of v) once the gauge's row and column
offsets are removed.

In the categories' block A_CC of A = k^t q the gauge A -> A + g w^t + w' g^t
(:mod:`attnlab.papers.logic.model`, g = (1_N; -1_M)) adds 1 w^t + w' 1^t, and §3.3's freedom
q(r, t) + a(t) is of the same kind: only the doubly centred part

    dc(a)_rt = a_rt - mean_r' a_r't - mean_t' a_rt' + mean_r't' a_r't'

is seen by the output. Fig. 1 compares dc(A_CC) with dc(q_true), each scaled to unit root mean
square (:func:`centred_unit`); :func:`attnlab.papers.logic.mechanism.centred_fit` correlates them.
"""

from __future__ import annotations

import numpy as np


def double_centre(a: np.ndarray) -> np.ndarray:
    """dc(a) (module docstring): a with its row means, its column means and (back) its grand mean removed."""
    return a - a.mean(0, keepdims=True) - a.mean(1, keepdims=True) + a.mean()


def centred_unit(a: np.ndarray) -> np.ndarray:
    """dc(a) / RMS(dc(a)), RMS(x) = sqrt(mean x^2) (at least 1e-300, so that a zero block stays zero)."""
    a = double_centre(a)
    return a / max(float(np.sqrt(np.mean(a * a))), 1e-300)
