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

each also for uniform attention under the model's mask (its chance level). :func:`average` takes
the NaN-aware mean over segments; :func:`decide` labels the means with the modules' own rules and
constants, as Clark et al. do (statistics averaged over documents, then compared with the
thresholds); :func:`thresholds` lists those constants.
"""

from __future__ import annotations

from torch import Tensor

from typing import Any, Sequence

import torch

from attnlab.analysis.heads.clark import (
    BROAD_ENTROPY_NATS,
    POSITION_THRESHOLD,
    SPECIAL_TOKEN_THRESHOLD,
    clark_labels,
    clark_labels_from_statistics,
)
from attnlab.analysis.heads.kovaleva import MIX_SHARE, PATTERN_THRESHOLD, kovaleva_decide, kovaleva_patterns
from attnlab.analysis.heads.maps import CLARK_PUNCTUATION, token_mask, uniform_attention
from attnlab.analysis.heads.patterns import pattern_scores
from attnlab.analysis.heads.statistics import CLARK_SMOOTHING, HeadStatistics
from attnlab.analysis.heads.voita import (
    POSITIONAL_FRACTION,
    RARE_TOKEN_FRACTION,
    VOITA_OFFSETS,
    voita_labels,
    voita_labels_from_scores,
)

KEY_SETS = ("[CLS]", "[SEP]", "punctuation")
TL_KINDS = ("previous_token", "duplicate_token", "induction")


def analyse_segment(A: torch.Tensor, input_ids: Sequence[int], tokens: Sequence[str], token_types, *,
                    causal: bool, specials: dict, frequencies: dict[int, int]) -> dict[str, torch.Tensor]:
    """Every per-head number of one segment (module docstring), each (L, H) (offset fractions (L, H, 2)),
    straight from the classifiers of :mod:`attnlab.analysis.heads`; and under "chance:<name>" the same
    number for uniform attention under the model's mask (:func:`uniform_attention`), each (1, 1): the
    chance level of every score, argmax scores read with ties split (a random tie-break)."""
    keys = {"[CLS]": token_mask(tokens, [specials["[CLS]"]] if specials["[CLS]"] else []),
            "[SEP]": token_mask(tokens, [specials["[SEP]"]] if specials["[SEP]"] else []),
            "punctuation": token_mask(tokens, CLARK_PUNCTUATION)}
    freq = torch.tensor([float(frequencies[int(t)]) for t in input_ids], dtype=torch.float64)
    segments = torch.tensor(list(token_types)) if token_types is not None and len(set(token_types)) > 1 else None
    ids = torch.tensor(list(input_ids))
    out = _scores(A, ids, keys, segments, freq, causal=causal, ties="count")
    U = uniform_attention(len(input_ids), causal=causal)[None, None]
    out.update({f"chance:{k}": v for k, v in _scores(U, ids, keys, segments, freq, causal=causal,
                                                     ties="split").items()})
    return out


def _scores(A: Tensor, ids: Sequence[int], keys: Any, segments: Any, freq: Any, *, causal: bool, ties: str) -> dict[str, torch.Tensor]:
    clark = clark_labels(A, causal=causal, keys=keys)
    vertical = keys["[CLS]"] | keys["[SEP]"]
    kov = kovaleva_patterns(A, special=vertical if bool(vertical.any()) else None, segments=segments, causal=causal)
    voita = voita_labels(A, causal=causal, frequencies=freq, exclude=keys["[SEP]"], ties=ties)
    text = pattern_scores(A, ids, causal=causal)
    s = clark.stats
    return {"entropy": s.entropy, "uniform_entropy": s.uniform_entropy, "distance": s.distance,
            "previous": s.previous, "self": s.self_, "next": s.next, "max_weight": s.confidence,
            **{f"to_{k}": v for k, v in s.to_keys.items()},
            **{f"kovaleva_{k}": v for k, v in kov.scores.items()},
            "offset_fractions": voita.offset_fractions, "confidence": voita.confidence,
            "rare_mass": voita.rare_mass, "rare_argmax": voita.rare_argmax,
            **{f"text_{k}": getattr(text, k) for k in TL_KINDS}}



def average(per_segment: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """The mean over segments of every number, NaN-aware (NaN only where no segment has one)."""
    return {k: torch.nanmean(torch.stack([d[k] for d in per_segment]), 0) for k in per_segment[0]}


def decide(avg: dict[str, torch.Tensor]) -> dict:
    """The labels of the averaged numbers, by the analysis modules' own rules and constants."""
    stats = HeadStatistics(entropy=avg["entropy"], uniform_entropy=avg["uniform_entropy"],
                           distance=avg["distance"], previous=avg["previous"], self_=avg["self"],
                           next=avg["next"], confidence=avg["max_weight"],
                           to_keys={k: avg[f"to_{k}"] for k in KEY_SETS})
    return {"clark": clark_labels_from_statistics(stats),
            "kovaleva": kovaleva_decide(avg["kovaleva_vertical"], avg["kovaleva_diagonal"], avg["kovaleva_block"]),
            "voita": voita_labels_from_scores(avg["offset_fractions"], VOITA_OFFSETS, avg["confidence"],
                                              rare_mass=avg["rare_mass"], rare_argmax=avg["rare_argmax"])}


def thresholds() -> dict:
    """Every threshold the labels use, read from the analysis modules."""
    return {"clark": {"broad_entropy_nats": BROAD_ENTROPY_NATS, "position": POSITION_THRESHOLD,
                      "special_token": SPECIAL_TOKEN_THRESHOLD, "entropy_smoothing": CLARK_SMOOTHING},
            "kovaleva": {"pattern": PATTERN_THRESHOLD, "mix_share": MIX_SHARE},
            "voita": {"positional_fraction": POSITIONAL_FRACTION, "rare_token_fraction": RARE_TOKEN_FRACTION},
            "transformerlens": {"measure": "mul", "exclude_bos": False, "exclude_current_token": False}}

