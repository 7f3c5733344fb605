"""The per-head numbers of one segment as one typed record, their chance levels beside them, and their
NaN-aware mean over segments, field by field.

:class:`SegmentScores` holds every number :func:`~attnlab.analysis.heads.summary.analyse_segment`
reads off one segment's maps A (L, H, n, n) (all float64, each (L, H); Voita's offset fractions
(L, H, 2), at the offsets ``VOITA_OFFSETS``), the evidence of
:func:`~attnlab.analysis.heads.readout.segment_evidence` once added (:meth:`SegmentScores.with_evidence`),
and, as ``chance``, the same numbers for uniform attention under the model's mask, each (1, 1).
:class:`RepeatedScores` holds TransformerLens' scores on the repeated random tokens and the induction
stripe score, with their chance levels the same way. :func:`average` is the mean over segments.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TypeVar

import torch
from torch import Tensor

T = TypeVar("T", "SegmentScores", "RepeatedScores")


@dataclass(frozen=True)
class SegmentScores:
    """Every per-head number of one segment (or their mean over segments), each (L, H) float64.

    Clark et al. 2019: entropy and uniform_entropy (nats), distance, previous, self_, next (a(i, i-1),
    a(i, i), a(i, i+1)), max_weight (the mean largest weight of a row), to_cls, to_sep, to_punctuation
    (the mass on each key set). Kovaleva et al. 2019: the template fits kovaleva_vertical,
    kovaleva_diagonal, kovaleva_vertical_diagonal, kovaleva_block (NaN without sentence pairs).
    Voita et al. 2019: offset_fractions (L, H, 2) (rows whose maximum is at offset -1, +1), confidence,
    rare_mass, rare_argmax. attnlab's scores on the text: text_previous_token, text_duplicate_token,
    text_induction. The evidence (None until :meth:`with_evidence`): sink, sink_norm and, for a model
    with an output head, dla. ``chance``: the same record for uniform attention, each (1, 1); None on
    the chance record itself.
    """

    entropy: Tensor
    uniform_entropy: Tensor
    distance: Tensor
    previous: Tensor
    self_: Tensor
    next: Tensor
    max_weight: Tensor
    to_cls: Tensor
    to_sep: Tensor
    to_punctuation: Tensor
    kovaleva_vertical: Tensor
    kovaleva_diagonal: Tensor
    kovaleva_vertical_diagonal: Tensor
    kovaleva_block: Tensor
    offset_fractions: Tensor
    confidence: Tensor
    rare_mass: Tensor
    rare_argmax: Tensor
    text_previous_token: Tensor
    text_duplicate_token: Tensor
    text_induction: Tensor
    sink: Tensor | None = None
    sink_norm: Tensor | None = None
    dla: Tensor | None = None
    chance: SegmentScores | None = None

    def with_evidence(self, sink: Tensor, sink_norm: Tensor, dla: Tensor | None,
                      sink_chance: Tensor) -> SegmentScores:
        """This record with the segment's evidence (each (L, H)) and the sink's chance level (1, 1) added."""
        chance = None if self.chance is None else dataclasses.replace(self.chance, sink=sink_chance)
        return dataclasses.replace(self, sink=sink, sink_norm=sink_norm, dla=dla, chance=chance)


@dataclass(frozen=True)
class RepeatedScores:
    """Scores on the repeated-random-token prompts, each (L, H) float64, means over the prompts:
    TransformerLens' previous_token, duplicate_token and induction (``detect_head``) and the
    induction_stripe score; ``chance``: the same for uniform attention, each (1, 1)."""

    previous_token: Tensor
    duplicate_token: Tensor
    induction: Tensor
    induction_stripe: Tensor
    chance: RepeatedScores | None = None

    @classmethod
    def undefined(cls, shape: tuple[int, int]) -> RepeatedScores:
        """NaN everywhere (a model or ``--max-tokens`` that leaves no room for the prompts), (L, H) and
        chance (1, 1)."""
        nan = torch.full(shape, float("nan"), dtype=torch.float64)  # (L, H)
        one = nan[:1, :1]
        return cls(nan, nan, nan, nan, chance=cls(one, one, one, one))


def average(records: list[T]) -> T:
    """The mean over segments of every field, NaN-aware (NaN only where no segment has a number); a field
    None in every record stays None, and ``chance`` is averaged the same way."""
    values = {}
    for f in dataclasses.fields(records[0]):
        xs = [getattr(r, f.name) for r in records]
        if f.name == "chance":
            values[f.name] = None if xs[0] is None else average(xs)
        else:
            values[f.name] = None if xs[0] is None else torch.nanmean(torch.stack(xs), 0)
    return type(records[0])(**values)


def score_fields(record: SegmentScores | RepeatedScores) -> dict[str, Tensor]:
    """Every number of ``record`` by its field name, ``chance`` and the fields it lacks (None) left out."""
    return {f.name: getattr(record, f.name) for f in dataclasses.fields(record)
            if f.name != "chance" and getattr(record, f.name) is not None}
