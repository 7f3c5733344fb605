"""Softmax saturation of a model that memorizes (memorization-capacity-of-mha App. H, Figure 3).

For every example t and head h of a trained model, the softmax coefficients
theta_h^(t) = Softmax(alpha_h^(t)) of eq. (2) (:mod:`attnlab.papers.memorization.model`) are measured
over the n context tokens; head h is *saturated* for example t if max_i theta_h,i^(t) > 0.99
(:data:`THRESHOLD`). :func:`saturation_stats` gives, for theta (T, H, n), what Fig. 3 plots: which heads
are saturated (a), the histogram of saturated heads per example (b: T entries) and of max_i theta_h,i
over all H x T (head, example) pairs (c), with the fractions of saturated pairs and of examples with at
least one unsaturated head. :func:`measure_saturation` trains a model (the authors' as released, or the
plain eqs. (1)-(6)) until it memorizes, with :mod:`attnlab.papers.memorization.capacity_search`, and
measures it at its first memorizing step and at the end.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attnlab.errors import ConfigError
from attnlab.papers.memorization.capacity_search import (
    SearchConfig,
    attention_coefficients,
    authors_coefficients,
    search_capacity,
    train_candidates,
)
from attnlab.papers.memorization.data import draw_nested_dataset
from attnlab.papers.memorization.model import theorem1_bound

THRESHOLD = 0.99  # App. H: saturated if one softmax coefficient > 0.99
GRID_EXAMPLES = 20  # Fig. 3 (a), (d): the first 20 examples


def max_theta_edges(threshold: float = THRESHOLD) -> tuple[float, ...]:
    """Bin edges of the max-theta histogram (Fig. 3 (c), (f)): 0.05 wide below the threshold,
    then [.., threshold] and (threshold, 1]."""
    return tuple(round(0.05 * i, 2) for i in range(20) if 0.05 * i < threshold) + (threshold, 1.0)


@dataclass(frozen=True)
class SaturationStats:
    """Saturation of softmax coefficients theta (T, H, n) (rows sum to 1), App. H; a head is
    saturated for an example where max_i theta_h,i^(t) > threshold."""

    max_theta: np.ndarray  # (T, H): max_i theta_h,i^(t)
    saturated: np.ndarray  # (T, H) bool: max_theta > threshold
    saturated_per_example: np.ndarray  # (T,): heads saturated for each example
    heads_histogram: np.ndarray  # (H + 1,): examples with 0, 1, ..., H saturated heads (sums to T)
    max_theta_histogram: np.ndarray  # (len(max_theta_edges) - 1,): the H T values of max_theta per bin
    fraction_saturated: float  # saturated (head, example) pairs / (H T)
    fraction_with_unsaturated: float  # examples with at least one unsaturated head / T


@dataclass(frozen=True)
class SaturationMeasurement:
    """One trained model of App. H at (H, T): how it trained and the saturation of its softmax."""

    model: str  # "released" (the authors' model) or "plain" (eqs. (1)-(6))
    H: int  # heads
    T: int  # examples trained on (the searched largest T memorized where searched)
    searched: bool  # T found by search_capacity (config T = 0)
    bound: int  # Theorem 1's H (min(n, d_h) - 1) + 1
    memorized: bool  # all T labels memorized
    accuracy: float  # final train accuracy
    memorized_at: int  # first memorizing step (-1: never)
    steps: int  # Adam updates trained
    final_loss: float  # training loss at the end
    at_memorization: SaturationStats  # theta at the first memorizing step
    final: SaturationStats  # theta at the end (after ``steps`` updates)

    def to_dict(self) -> dict:
        """What data.per_H keeps: the histograms, the fractions and the first GRID_EXAMPLES rows of
        max theta (GRID_EXAMPLES, H), not the (T, H) arrays."""
        f = self.final
        return {"model": self.model, "H": self.H, "T": self.T, "searched": self.searched, "bound": self.bound,
                "memorized": self.memorized, "accuracy": self.accuracy, "memorized_at": self.memorized_at,
                "steps": self.steps, "final_loss": self.final_loss,
                "at_memorization": {"fraction_saturated": self.at_memorization.fraction_saturated,
                                    "fraction_with_unsaturated": self.at_memorization.fraction_with_unsaturated},
                "heads_histogram": f.heads_histogram.tolist(), "max_theta_histogram": f.max_theta_histogram.tolist(),
                "fraction_saturated": f.fraction_saturated, "fraction_with_unsaturated": f.fraction_with_unsaturated,
                "max_theta_first_examples": f.max_theta[:GRID_EXAMPLES].tolist()}


def saturation_stats(theta: np.ndarray, threshold: float = THRESHOLD) -> SaturationStats:
    """Saturation of softmax coefficients theta (T, H, n) (rows sum to 1), App. H
    (:class:`SaturationStats`): max_theta = max_i theta_h,i^(t), saturated where it exceeds
    ``threshold``; max_theta_histogram counts the H T values of max_theta in the max_theta_edges
    bins [0, 0.05), ..., [0.95, threshold], (threshold, 1] (the last bin holds exactly the
    saturated pairs)."""
    theta = np.asarray(theta, dtype=np.float64)
    if theta.ndim != 3:
        raise ConfigError(f"theta must be (T, H, n), got shape {theta.shape}")
    max_theta = theta.max(axis=-1)  # (T, H)
    saturated = max_theta > threshold
    per_example = saturated.sum(axis=1)  # (T,)
    H = theta.shape[1]
    return SaturationStats(
        max_theta=max_theta, saturated=saturated, saturated_per_example=per_example,
        heads_histogram=np.bincount(per_example, minlength=H + 1),
        # bins [0, 0.05), ..., [0.95, threshold] of the unsaturated values, then (threshold, 1]
        max_theta_histogram=np.append(
            np.histogram(max_theta[~saturated], bins=np.asarray(max_theta_edges(threshold)[:-1]))[0],
            saturated.sum()),
        fraction_saturated=float(saturated.mean()),
        fraction_with_unsaturated=float((per_example < H).mean()),
    )


def measure_saturation(scfg: SearchConfig, T: int, model: str = "plain", *, min_steps: int = 0,
                       threshold: float = THRESHOLD) -> SaturationMeasurement:
    """Train ``model`` ("released": the authors' model as ``scfg`` sets it up; "plain") at (scfg.H, T)
    (T = 0: the largest T :func:`search_capacity` memorizes within scfg.max_steps) on the nested data
    draw of scfg.seed, by full-batch Adam (:func:`train_candidates`) for at least ``min_steps`` updates
    and until it memorizes; measure the saturation of its softmax (max_i theta_h,i > ``threshold``,
    computed in float64) at its first memorizing step and at the end."""
    H = scfg.H
    searched = T == 0
    if searched:
        T = search_capacity(scfg).largest_success
        if T == 0:
            raise ConfigError(f"no T >= 1 memorized at H={H} within {scfg.max_steps} steps: raise max_steps")
    E, e, y = draw_nested_dataset(T, scfg.n, scfg.d, scfg.n_classes, scfg.seed)
    run = train_candidates([T], E, e, y, scfg, min_steps=min_steps)
    (attempt,) = run.attempts
    E64, e64 = E.to(torch.float64), e.to(torch.float64)

    def stats(params: dict[str, torch.Tensor]) -> SaturationStats:
        p64 = {k: v.cpu().to(torch.float64) for k, v in params.items()}
        if model == "released":  # keys="context": theta over the n context tokens, as eq. (2)
            theta = authors_coefficients(p64, E64, e64, scfg.keys)[0]
        else:
            theta = attention_coefficients(p64, E64, e64)[0]
        return saturation_stats(theta.numpy(), threshold)  # theta (T, H, n)

    return SaturationMeasurement(
        model=model, H=H, T=T, searched=searched, bound=theorem1_bound(H, scfg.n, scfg.d_h),
        memorized=attempt.memorized, accuracy=attempt.accuracy, memorized_at=attempt.memorized_at,
        steps=attempt.steps, final_loss=attempt.loss,
        at_memorization=stats({k: v[:1] for k, v in run.params_at_memorization.items()}),
        final=stats({k: v[:1] for k, v in run.params.items()}))
