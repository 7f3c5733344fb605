"""``attnlab analyze``: heads.json as typed records, from the analysis to the report.

:class:`HeadsPayload` is the whole file: the model, the ablation blocks, the criteria with their chance
levels, the label counts, the notes and one :class:`HeadRow` per head. Each record's stored form is its
fields in declaration order (:class:`attnlab.stored.Stored`), except where heads.json's names are not
Python names or a record is stored flat: :class:`HeadScores` stores ``self_`` as "self" and is stored
inside its head's row (and inside "chance") rather than under a key of its own; :class:`KovalevaScores`
stores ``vertical_diagonal`` as "vertical+diagonal"; a :class:`HeadRow` leaves out what its head lacks
(no DLA without an output head, no ablation where none ran). :class:`HeadNumbers` holds the run's
numbers the rows are read from.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from torch import Tensor

from attnlab.analysis.heads.readout import WeightEvidence
from attnlab.analysis.heads.scores import RepeatedScores, SegmentScores
from attnlab.stored import Stored

Index = tuple[int, int]  # (layer, head); (0, 0) reads a chance level, each (1, 1)


def _at(t: Tensor, i: Index) -> float:
    """The number of head ``i`` of an (L, H) tensor."""
    return t[i].item()


@dataclass(frozen=True)
class HeadScores(Stored):
    """The scores of one head (or their chance levels) that heads.json stores flat, means over segments:
    Clark et al.'s statistics, Voita et al.'s confidence and rare-token numbers, attnlab's scores on the
    text, TransformerLens' on the repeated random tokens and the induction stripe score."""

    entropy: float
    uniform_entropy: float
    distance: float
    previous: float
    self_: float
    next: float
    to_cls: float
    to_sep: float
    to_punctuation: float
    max_weight: float
    confidence: float
    rare_mass: float
    rare_argmax: float
    text_previous_token: float
    text_duplicate_token: float
    text_induction: float
    tl_repeated_previous_token: float
    tl_repeated_duplicate_token: float
    tl_repeated_induction: float
    repeated_induction_stripe: float

    @classmethod
    def at(cls, s: SegmentScores, r: RepeatedScores, i: Index) -> HeadScores:
        """Head ``i``'s numbers of the averaged scores ``s`` and the repeated-token scores ``r``."""
        return cls(_at(s.entropy, i), _at(s.uniform_entropy, i), _at(s.distance, i), _at(s.previous, i),
                   _at(s.self_, i), _at(s.next, i), _at(s.to_cls, i), _at(s.to_sep, i), _at(s.to_punctuation, i),
                   _at(s.max_weight, i), _at(s.confidence, i), _at(s.rare_mass, i), _at(s.rare_argmax, i),
                   _at(s.text_previous_token, i), _at(s.text_duplicate_token, i), _at(s.text_induction, i),
                   _at(r.previous_token, i), _at(r.duplicate_token, i), _at(r.induction, i),
                   _at(r.induction_stripe, i))

    def to_dict(self) -> dict[str, Any]:
        """Every field by its heads.json name ("self" for ``self_``)."""
        return {k.rstrip("_"): v for k, v in super().to_dict().items()}


@dataclass(frozen=True)
class KovalevaScores(Stored):
    """Kovaleva et al.'s template fits of one head (heads.json "kovaleva_scores")."""

    vertical: float
    diagonal: float
    vertical_diagonal: float
    block: float

    @classmethod
    def at(cls, s: SegmentScores, i: Index) -> KovalevaScores:
        """Head ``i``'s fits of the averaged scores ``s``."""
        return cls(_at(s.kovaleva_vertical, i), _at(s.kovaleva_diagonal, i), _at(s.kovaleva_vertical_diagonal, i),
                   _at(s.kovaleva_block, i))

    def to_dict(self) -> dict[str, Any]:
        """The fits by their pattern names ("vertical+diagonal")."""
        return {"vertical": self.vertical, "diagonal": self.diagonal, "vertical+diagonal": self.vertical_diagonal,
                "block": self.block}


@dataclass(frozen=True)
class ExactAblation(Stored):
    """One head's exact ablation of one kind: the mean change in loss over segments (or prompts), its 95%
    interval, and "measured": "exact"."""

    delta_loss: float
    ci: tuple[float, float]
    measured: str = "exact"


@dataclass(frozen=True)
class AblationEstimate(Stored):
    """One head's first-order estimate of one ablation kind and its interval: a screening number only."""

    delta_loss_estimate: float
    ci_estimate: tuple[float, float]


@dataclass(frozen=True)
class EstimateError(Stored):
    """How far the first-order estimates of one kind are from the exact re-runs: heads compared, max and
    median |estimate - exact| of their means over segments, and how many have the other sign."""

    heads: int
    max_abs_error: float
    median_abs_error: float
    sign_disagreements: int


OPTIONAL = ("dla", "ablation", "ablation_estimate", "induction_ablation")  # left out of a row where None


@dataclass(frozen=True)
class HeadRow(Stored):
    """One head of heads.json: its scores (stored flat), labels under each criteria, Kovaleva's fits,
    Voita's argmax fractions, key/value head, evidence, 95% intervals over segments (``ci``, by the
    heads.json name of the score), and its ablations by kind: exact where it was re-run, the first-order
    estimates apart, the exact induction ablations where it was among the induction heads."""

    layer: int
    head: int
    scores: HeadScores
    clark: list[str]
    kovaleva: str
    kovaleva_scores: KovalevaScores
    voita: list[str]
    voita_argmax_previous: float
    voita_argmax_next: float
    kv_head: int
    sink: float
    sink_norm: float
    dla: float | None
    copying: float
    copying_positive_fraction: float
    qk_norm: float
    ov_norm: float
    ci: dict[str, list[float]]
    ablation: dict[str, ExactAblation] | None = None
    ablation_estimate: dict[str, AblationEstimate] | None = None
    induction_ablation: dict[str, ExactAblation] | None = None

    def exact_change(self, kind: str) -> float:
        """The exact ``kind`` ablation's mean change in loss; NaN for a head that was not re-run."""
        return self.ablation[kind].delta_loss if self.ablation is not None else math.nan

    def to_dict(self) -> dict[str, Any]:
        """The row as heads.json holds it: the scores flat after layer and head, None fields of
        :data:`OPTIONAL` left out."""
        out: dict[str, Any] = {}
        for k, v in super().to_dict().items():
            if k == "scores":
                out.update(v)
            elif v is not None or k not in OPTIONAL:
                out[k] = v
        return out


@dataclass(frozen=True)
class ChanceLevels(Stored):
    """Uniform attention's value of every per-head score (heads.json "chance", named as the heads' numbers)."""

    scores: HeadScores
    voita_argmax_previous: float
    voita_argmax_next: float
    kovaleva_scores: KovalevaScores
    sink: float

    def to_dict(self) -> dict[str, Any]:
        """The levels as heads.json holds them: the scores flat."""
        d = super().to_dict()
        return {**d.pop("scores"), **d}


@dataclass(frozen=True)
class Criterion(Stored):
    """One label's rule: criteria, label, score (its heads.json name), relation, threshold, where the
    threshold comes from, the rule in words, and the score's chance level (None without a score)."""

    criteria: str
    label: str
    score: str | None
    relation: str | None
    threshold: float | None
    threshold_from: str
    rule: str
    chance: float | None


@dataclass(frozen=True)
class LabelCounts(Stored):
    """How many heads each criteria gives each label (heads.json "counts")."""

    clark: dict[str, int]
    kovaleva: dict[str, int]
    voita: dict[str, int]


@dataclass(frozen=True)
class PatternLevels(Stored):
    """One number per repeated-random-token score: TransformerLens' three and the induction stripe score."""

    previous_token: float
    duplicate_token: float
    induction: float
    induction_stripe: float


@dataclass(frozen=True)
class RepeatedInfo(Stored):
    """The repeated-random-token prompts (heads.json "repeated_random_tokens"): how many, half length s,
    length n, the framing tokens, the seed, what a perfect head and uniform attention score."""

    prompts: int
    half: int
    length: int
    prefix: list[str]
    suffix: list[str]
    seed: int
    perfect_head: PatternLevels
    chance: PatternLevels


@dataclass(frozen=True)
class AblationInfo(Stored):
    """The head ablations (heads.json "ablation"): tokens per segment, segments, kinds, the re-run heads,
    the clean loss, seconds, the mode, how the estimates were made and their error per kind."""

    tokens: int
    segments: int
    kinds: list[str]
    exact_heads: list[list[int]]
    base_loss: float
    seconds: float
    mode: str
    estimate_method: str
    estimate_error: dict[str, EstimateError]


@dataclass(frozen=True)
class InductionInfo(Stored):
    """The induction heads' ablations on the prompts (heads.json "induction_ablation")."""

    heads: list[list[int]]
    prompts: int
    scored_predictions: int
    base_loss: float
    seconds: float


@dataclass(frozen=True)
class HeadsPayload(Stored):
    """heads.json: the model and the run, the DLA convention, the ablation blocks, the criteria with their
    chance levels, the prompts, the label counts, the notes and every head's row, layer by layer."""

    model: str
    checkpoint: str
    model_type: str
    causal: bool
    layers: int
    heads_per_layer: int
    kv_heads_per_layer: int
    dla_unembedding: str | None
    dla_convention: str | None
    ablation: AblationInfo | None
    induction_ablation: InductionInfo | None
    segments: int
    max_tokens: int
    text: str
    dtype: str
    bos: Any
    special_tokens: dict
    sentence_pairs: bool
    thresholds: dict
    criteria: list[Criterion]
    chance: ChanceLevels
    repeated_random_tokens: RepeatedInfo | None
    counts: LabelCounts
    notes: list[str]
    heads: list[HeadRow]


@dataclass(frozen=True)
class HeadNumbers:
    """Every per-head number of a run, from which the rows are read: the means over segments with their
    chance levels (``scores``), the 95% intervals over segments by :class:`SegmentScores` field name
    (each (L, H, 2)), the scores on the repeated random tokens and the evidence of the weights."""

    scores: SegmentScores
    intervals: dict[str, Tensor]
    repeated: RepeatedScores
    weights: WeightEvidence
