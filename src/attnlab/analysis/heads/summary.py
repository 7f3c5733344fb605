"""Every per-head number of one segment, their average over segments, and the labels decided on it.

Per head, on one segment's maps A (L, H, n, n) (all in float64), the numbers of the modules beside
this one:

    Clark et al. 2019    H (smoothed entropy, nats), mean distance, a_{i,i-1}, a_{i,i+1} and the
                         mass on [CLS], [SEP] and punctuation (". ,"): :mod:`~attnlab.analysis.heads.clark`
    Kovaleva et al. 2019 template fits m_T for vertical ([CLS] and [SEP] columns; the most
                         attended column where the segment has neither), diagonal,
                         vertical+diagonal and block (sentence A / B as segments):
                         :mod:`~attnlab.analysis.heads.kovaleva`
    Voita et al. 2019    the fraction of rows whose maximum is at offset -1 / +1; confidence
                         without [SEP] (their EOS); rare-token mass and argmax fraction, with
                         the token frequencies the caller gives: :mod:`~attnlab.analysis.heads.voita`
    attnlab              previous-token, duplicate-token and induction scores in attnlab's
                         convention ("mul" over the rows that have a target, so a perfect head
                         scores 1): :func:`~attnlab.analysis.heads.patterns.pattern_scores`

each also for uniform attention under the model's mask (its chance level), as one
:class:`~attnlab.analysis.heads.scores.SegmentScores`. :func:`~attnlab.analysis.heads.scores.average`
takes the NaN-aware mean over segments; :func:`decide` labels the means with the modules' own rules and
constants, as Clark et al. do (statistics averaged over documents, then compared with the
thresholds); :func:`thresholds` lists those constants.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Sequence

import torch
from torch import Tensor

from attnlab.analysis.heads.clark import (
    BROAD_ENTROPY_NATS,
    POSITION_THRESHOLD,
    SPECIAL_TOKEN_THRESHOLD,
    ClarkLabels,
    clark_labels,
    clark_labels_from_statistics,
)
from attnlab.analysis.heads.kovaleva import (
    KOVALEVA_PATTERNS,
    MIX_SHARE,
    PATTERN_THRESHOLD,
    kovaleva_decide,
    kovaleva_patterns,
)
from attnlab.analysis.heads.maps import CLARK_PUNCTUATION, token_mask, uniform_attention
from attnlab.analysis.heads.patterns import pattern_scores
from attnlab.analysis.heads.scores import SegmentScores
from attnlab.analysis.heads.statistics import CLARK_SMOOTHING, HeadStatistics
from attnlab.analysis.heads.voita import (
    POSITIONAL_FRACTION,
    RARE_TOKEN_FRACTION,
    VOITA_OFFSETS,
    VoitaLabels,
    voita_labels,
    voita_labels_from_scores,
)

KEY_SETS = ("[CLS]", "[SEP]", "punctuation")
TL_KINDS = ("previous_token", "duplicate_token", "induction")


@dataclass(frozen=True)
class HeadLabels:
    """The labels of every head (L, H) under each criteria: Clark et al.'s, Kovaleva et al.'s pattern index
    into ``KOVALEVA_PATTERNS`` (L, H), and Voita et al.'s roles."""

    clark: ClarkLabels
    kovaleva: Tensor
    voita: VoitaLabels


def analyse_segment(A: torch.Tensor, input_ids: Sequence[int], tokens: Sequence[str], token_types, *,
                    causal: bool, specials: dict, frequencies: dict[int, int]) -> SegmentScores:
    """Every per-head number of one segment (module docstring), each (L, H) (offset fractions (L, H, 2)),
    straight from the classifiers of :mod:`attnlab.analysis.heads`; and as its ``chance`` the same
    numbers for uniform attention under the model's mask (:func:`uniform_attention`), each (1, 1): the
    chance level of every score, argmax scores read with ties split (a random tie-break)."""
    cls_, sep = specials["[CLS]"], specials["[SEP]"]
    keys = {"[CLS]": token_mask(tokens, [cls_] if cls_ else []),
            "[SEP]": token_mask(tokens, [sep] if sep else []),
            "punctuation": token_mask(tokens, CLARK_PUNCTUATION)}
    freq = torch.tensor([float(frequencies[int(t)]) for t in input_ids], dtype=torch.float64)
    segments = torch.tensor(list(token_types)) if token_types is not None and len(set(token_types)) > 1 else None
    ids = torch.tensor(list(input_ids))
    U = uniform_attention(len(input_ids), causal=causal)[None, None]
    chance = _scores(U, ids, keys, segments, freq, causal=causal, ties="split")
    return dataclasses.replace(_scores(A, ids, keys, segments, freq, causal=causal, ties="count"), chance=chance)


def _scores(A: Tensor, ids: Sequence[int], keys: dict[str, Tensor], segments: Tensor | None, freq: Tensor, *,
            causal: bool, ties: str) -> SegmentScores:
    """The numbers of maps A (L, H, n, n) by the classifiers, ``keys`` the [CLS], [SEP] and punctuation masks."""
    cls_, sep, punctuation = (keys[k] for k in KEY_SETS)
    clark = clark_labels(A, causal=causal, keys=keys)
    vertical = cls_ | sep
    kov = kovaleva_patterns(A, special=vertical if bool(vertical.any()) else None, segments=segments, causal=causal)
    voita = voita_labels(A, causal=causal, frequencies=freq, exclude=sep, ties=ties)
    text = pattern_scores(A, ids, causal=causal)
    s = clark.stats
    to_cls, to_sep, to_punctuation = (s.to_keys[k] for k in KEY_SETS)
    vertical_fit, diagonal, mixed, block = (kov.scores[k] for k in KOVALEVA_PATTERNS[:4])
    return SegmentScores(
        entropy=s.entropy, uniform_entropy=s.uniform_entropy, distance=s.distance, previous=s.previous,
        self_=s.self_, next=s.next, max_weight=s.confidence, to_cls=to_cls, to_sep=to_sep,
        to_punctuation=to_punctuation, kovaleva_vertical=vertical_fit, kovaleva_diagonal=diagonal,
        kovaleva_vertical_diagonal=mixed, kovaleva_block=block, offset_fractions=voita.offset_fractions,
        confidence=voita.confidence, rare_mass=voita.rare_mass, rare_argmax=voita.rare_argmax,
        text_previous_token=text.previous_token, text_duplicate_token=text.duplicate_token,
        text_induction=text.induction)


def decide(avg: SegmentScores) -> HeadLabels:
    """The labels of the averaged numbers, by the analysis modules' own rules and constants."""
    stats = HeadStatistics(entropy=avg.entropy, uniform_entropy=avg.uniform_entropy, distance=avg.distance,
                           previous=avg.previous, self_=avg.self_, next=avg.next, confidence=avg.max_weight,
                           to_keys=dict(zip(KEY_SETS, (avg.to_cls, avg.to_sep, avg.to_punctuation))))
    return HeadLabels(clark=clark_labels_from_statistics(stats),
                      kovaleva=kovaleva_decide(avg.kovaleva_vertical, avg.kovaleva_diagonal, avg.kovaleva_block),
                      voita=voita_labels_from_scores(avg.offset_fractions, VOITA_OFFSETS, avg.confidence,
                                                     rare_mass=avg.rare_mass, rare_argmax=avg.rare_argmax))


def thresholds() -> dict:
    """Every threshold the labels use, read from the analysis modules."""
    return {"clark": {"broad_entropy_nats": BROAD_ENTROPY_NATS, "position": POSITION_THRESHOLD,
                      "special_token": SPECIAL_TOKEN_THRESHOLD, "entropy_smoothing": CLARK_SMOOTHING},
            "kovaleva": {"pattern": PATTERN_THRESHOLD, "mix_share": MIX_SHARE},
            "voita": {"positional_fraction": POSITIONAL_FRACTION, "rare_token_fraction": RARE_TOKEN_FRACTION},
            "transformerlens": {"measure": "mul", "exclude_bos": False, "exclude_current_token": False}}

