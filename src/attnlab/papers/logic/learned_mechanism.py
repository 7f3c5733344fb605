"""What the trained models of §4 learned: system 2's k^t q against q_true (Fig. 1) and the free flavour's
mechanism, measured on fresh sequences.

Fig. 1 compares the CC block of A = k^t q with q_true modulo the gauge (row and column offsets the output
cannot see), by double centring (:func:`~attnlab.papers.logic.mechanism.centred_fit`). For every free model
(§4.2: "the unconstrained flavor performs the best by leveraging the combination of the third and the
second solutions"): the structure fractions of A, v, B modulo the gauge
(:func:`~attnlab.papers.logic.mechanism.structure_fractions`), v's CC block against solution 3's value map
A_2^t and solution 1's I_N, each component and path ablation as MSE / Var(Y) on the task's fresh sequences
(:func:`~attnlab.papers.logic.mechanism.ablated_predict`, :func:`~attnlab.papers.logic.mechanism.path_predict`),
and the feed-forward's units (:func:`~attnlab.papers.logic.units.units_needed`) beside those of the hand-built
solutions for the same q_true. A free model has learned the task when its own MSE on fresh sequences is
<= LEARNED Var(Y).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch

from attnlab.papers.logic import mechanism as mech
from attnlab.papers.logic.lbfgs_training import Trained
from attnlab.papers.logic.model import hand_built_params
from attnlab.papers.logic.solutions import build
from attnlab.papers.logic.units import Units, units_needed

LEARNED = 0.1  # a free model has learned the task if its MSE on fresh sequences is <= LEARNED Var(Y)


@dataclass(frozen=True)
class CentredFit:
    """The learned CC block of k^t q of one model against its q_true (:func:`attnlab.papers.logic.mechanism.centred_fit`).

    Attributes:
        name: the system or flavour; seed_index: its seed index.
        corr: the centred correlation; scale: the least-squares scale of A_CC ~ scale q_true.
    """

    name: str
    seed_index: int
    corr: float
    scale: float


def fit_cc_blocks(tr: Trained, N: int, M: int) -> list[CentredFit]:
    """The CC block (N x N) of k^t q against q_true for the main system-2, lean-2 and free models (Fig. 1), in
    that order and by seed within each."""
    fits = []
    for j in tr.main["system 2"] + tr.main["lean-2"] + tr.main["free"]:
        e = tr.effective(j, N, M)
        A = (e["k"].T @ e["q"]).numpy()
        m = tr.members[j]
        corr, scale = mech.centred_fit(A[:N, :N], tr.tasks[m.seed_index].q_true)
        fits.append(CentredFit(m.name, m.seed_index, corr, scale))
    return fits


@dataclass(frozen=True)
class FreeMechanism:
    """Which mechanism the free flavour uses, per main free model (:func:`free_mechanism`).

    Attributes:
        seeds: the seed index of each free model, in order; the lists below follow it.
        fractions: structure name -> its fraction modulo the gauge per model
            (:func:`attnlab.papers.logic.mechanism.structure_fractions`).
        ablations: "<ablation>: <what it changes>" or a path's label -> MSE / Var(Y) on fresh sequences
            per model (the first is "full: ...", the model as trained).
        corr_A2t, corr_identity: centred correlation of v's CC block with A_2^t and with I_N per model.
        learned: positions (into ``seeds``) of the models whose trained MSE is <= LEARNED Var(Y).
        hand_fractions: solution "1", "2", "3" -> its hand-built structure fractions for seed index 0's q_true.
        units: each model's feed-forward units (:func:`attnlab.papers.logic.units.units_needed`) on fresh sequences.
        hand_units: per model, solution "1", "2", "3" -> the same for the hand-built solution of that seed's
            q_true (without the LayerNorm, their own architecture) on the same sequences.
    """

    seeds: list[int]
    fractions: dict[str, list[float]]
    ablations: dict[str, list[float]]
    corr_A2t: list[float]
    corr_identity: list[float]
    learned: list[int]
    hand_fractions: dict[str, dict[str, float]]
    units: list[Units]
    hand_units: list[dict[str, Units]]

    def ablation(self, key_start: str) -> list[float]:
        """The per-model errors of the one ablation whose name starts with ``key_start``."""
        return self.ablations[next(k for k in self.ablations if k.startswith(key_start))]

    @property
    def full(self) -> list[float]:
        """The trained models' MSE / Var(Y) on fresh sequences."""
        return self.ablation("full:")

    def over_learned(self, xs: Sequence[float]) -> list[float]:
        """The entries of a per-model list that belong to learned models."""
        return [xs[a] for a in self.learned]


def free_mechanism(tr: Trained, N: int, M: int, norm: str) -> FreeMechanism:
    """For each main free model: structure fractions, v's value map, and the ablations and paths on fresh
    sequences (under the normalisation ``norm``, "layernorm" or "none"); and the hand-built solutions'
    fractions beside them."""
    layernorm = norm == "layernorm"
    fractions: dict[str, list[float]] = {}
    ablations: dict[str, list[float]] = {}  # variant -> MSE / Var(Y) per seed, fresh sequences
    corr_A2t, corr_identity, seeds, units, hand_units = [], [], [], [], []
    for j in tr.main["free"]:
        i = tr.members[j].seed_index
        seeds.append(i)
        e = tr.effective(j, N, M)
        A, v, B = (e["k"].T @ e["q"]).numpy(), e["v"].numpy(), e["B"].numpy()
        for k, x in mech.structure_fractions(A, v, B, N, M, layernorm=layernorm).to_dict().items():
            fractions.setdefault(k, []).append(x)
        fit = mech.value_map_fit(v, tr.tasks[i].q_true, N)
        corr_A2t.append(fit.corr_A2t)
        corr_identity.append(fit.corr_identity)
        test = torch.as_tensor(tr.tasks[i].test, device="cpu")
        Yt = torch.as_tensor(tr.tasks[i].Y_test)
        with torch.no_grad():
            variants = {f"{k}: {what}": mech.ablated_predict(e, test, N, k, norm=norm)
                        for k, what in mech.ABLATIONS.items()}
            for path, label in mech.PATHS.items():
                variants[label] = mech.path_predict(e, test, N, M, path, norm=norm)
        for k, pred in variants.items():
            ablations.setdefault(k, []).append(mech.relative_mse(pred, Yt))
        units.append(units_needed(e, test, Yt, N, norm=norm))
        hand_units.append({s: units_needed(hand_built_params(build(s, tr.tasks[i].q_true, M)), test, Yt, N,
                                           norm="none") for s in ("1", "2", "3")})
    full = ablations[next(k for k in ablations if k.startswith("full:"))]
    learned = [a for a, x in enumerate(full) if x <= LEARNED]
    hand = {s: mech.solution_fractions(s, tr.tasks[0].q_true, M, layernorm=layernorm).to_dict()
            for s in ("1", "2", "3")}
    return FreeMechanism(seeds, fractions, ablations, corr_A2t, corr_identity, learned, hand, units, hand_units)
