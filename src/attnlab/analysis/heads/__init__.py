"""Heads: per-head statistics, the head types of the literature, and the exact structure fits.

Every function takes attention maps A (..., n, n) with rows as queries (row-stochastic), any
leading axes (documents, layers, heads), an optional key-padding mask and per-position labels,
works for bidirectional and causal models, and never writes to its inputs
(:mod:`~attnlab.analysis.heads.maps`). Every score read on
:func:`~attnlab.analysis.heads.maps.uniform_attention` (uniform over the keys the mask allows)
is its chance level.

- :mod:`~attnlab.analysis.heads.statistics`: entropy (Clark's smoothing), distance, offsets,
  attention to special tokens, confidence;
- :mod:`~attnlab.analysis.heads.clark`: broad / previous / next / special-token heads (Clark et al. 2019);
- :mod:`~attnlab.analysis.heads.voita`: positional, rare-token and syntactic heads, confidence
  (Voita et al. 2019);
- :mod:`~attnlab.analysis.heads.kovaleva`: vertical, diagonal, vertical+diagonal, block and
  heterogeneous patterns by template fit (Kovaleva et al. 2019);
- :mod:`~attnlab.analysis.heads.patterns`: previous-token, duplicate-token and induction scores,
  "mul" and "abs" (TransformerLens' head detector, its options applied on every path), and
  TransformerLens' own scores on its repeated-random-token prompts;
- :mod:`~attnlab.analysis.heads.projection`: the exact L1 projection onto band + sparse error and
  the best permutation before it (math-behind-transformers §3.1.2, eqs. (21)-(22)), with baselines;
- :mod:`~attnlab.analysis.heads.circuits`: the QK and OV circuits in the residual basis and the OV
  circuit's copying score (Elhage et al. 2021), grouped-query attention included;
- :mod:`~attnlab.analysis.heads.evidence`: value-weighted attention (Kobayashi et al. 2020), direct
  logit attribution, the attention sink and its chance levels;
- :mod:`~attnlab.analysis.heads.intervals`: means over segments with a Student-t interval, NaN-aware;
- :mod:`~attnlab.analysis.heads.scores`: one segment's numbers as a typed record
  (:class:`~attnlab.analysis.heads.scores.SegmentScores`, its chance levels beside it) and their
  NaN-aware mean over segments, field by field;
- :mod:`~attnlab.analysis.heads.summary`: every number above for one segment, with its chance level,
  and the labels decided on their means.
"""

from attnlab.analysis.heads.circuits import CopyingScore, copying_score, kv_head_index, qk_ov_circuits
from attnlab.analysis.heads.clark import (
    BROAD_ENTROPY_NATS,
    POSITION_THRESHOLD,
    SPECIAL_TOKEN_THRESHOLD,
    ClarkLabels,
    clark_key_sets,
    clark_labels,
    clark_labels_from_statistics,
)
from attnlab.analysis.heads.evidence import (
    DirectLogitAttribution,
    KeyShare,
    SinkShare,
    attention_sink_share,
    direct_logit_attribution,
    norm_weighted_share,
    value_weighted_attention,
)
from attnlab.analysis.heads.intervals import MeanInterval, mean_confidence_interval
from attnlab.analysis.heads.kovaleva import (
    KOVALEVA_PATTERNS,
    MIX_SHARE,
    PATTERN_THRESHOLD,
    KovalevaPatterns,
    kovaleva_decide,
    kovaleva_patterns,
)
from attnlab.analysis.heads.maps import token_mask, uniform_attention
from attnlab.analysis.heads.patterns import (
    REPEATED_HALF,
    PatternScores,
    duplicate_token_pattern,
    induction_pattern,
    induction_stripe_score,
    pattern_score,
    pattern_scores,
    previous_token_pattern,
    repeated_random_tokens,
    transformerlens_scores,
)
from attnlab.analysis.heads.projection import (
    BandSparseProjection,
    RowPermutationFit,
    band_mask,
    band_sparse_distance,
    best_row_permutation,
    in_band_sparse,
    project_band_sparse,
)
from attnlab.analysis.heads.statistics import CLARK_SMOOTHING, HeadStatistics, head_statistics, row_entropy
from attnlab.analysis.heads.voita import (
    POSITIONAL_FRACTION,
    RARE_TOKEN_FRACTION,
    DependencyAccuracy,
    VoitaLabels,
    dependency_accuracy,
    voita_labels,
    voita_labels_from_scores,
)

__all__ = [
    "BROAD_ENTROPY_NATS", "CLARK_SMOOTHING", "KOVALEVA_PATTERNS", "MIX_SHARE", "PATTERN_THRESHOLD",
    "POSITIONAL_FRACTION", "POSITION_THRESHOLD", "RARE_TOKEN_FRACTION", "REPEATED_HALF",
    "SPECIAL_TOKEN_THRESHOLD", "BandSparseProjection", "ClarkLabels", "CopyingScore", "DependencyAccuracy",
    "DirectLogitAttribution", "HeadStatistics", "KeyShare", "KovalevaPatterns", "MeanInterval", "PatternScores",
    "RowPermutationFit", "SinkShare", "VoitaLabels", "attention_sink_share", "band_mask", "band_sparse_distance",
    "best_row_permutation", "clark_key_sets", "clark_labels", "clark_labels_from_statistics", "copying_score",
    "dependency_accuracy", "direct_logit_attribution", "duplicate_token_pattern", "head_statistics",
    "in_band_sparse", "induction_pattern", "induction_stripe_score", "kovaleva_decide", "kovaleva_patterns", "kv_head_index",
    "mean_confidence_interval", "norm_weighted_share", "pattern_score", "pattern_scores",
    "previous_token_pattern", "project_band_sparse", "qk_ov_circuits", "repeated_random_tokens", "row_entropy",
    "token_mask", "transformerlens_scores", "uniform_attention", "value_weighted_attention", "voita_labels",
    "voita_labels_from_scores",
]
