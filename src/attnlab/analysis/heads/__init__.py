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
  the best permutation before it (math-behind-transformers §3.1.2, eqs. (21)-(22)), with baselines.
"""

from attnlab.analysis.heads.clark import (
    BROAD_ENTROPY_NATS,
    POSITION_THRESHOLD,
    SPECIAL_TOKEN_THRESHOLD,
    ClarkLabels,
    clark_key_sets,
    clark_labels,
    clark_labels_from_statistics,
)
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
    "SPECIAL_TOKEN_THRESHOLD", "BandSparseProjection", "ClarkLabels", "DependencyAccuracy", "HeadStatistics",
    "KovalevaPatterns", "PatternScores", "RowPermutationFit", "VoitaLabels", "band_mask",
    "band_sparse_distance", "best_row_permutation", "clark_key_sets", "clark_labels",
    "clark_labels_from_statistics", "dependency_accuracy", "duplicate_token_pattern", "head_statistics",
    "in_band_sparse", "induction_pattern", "kovaleva_decide", "kovaleva_patterns", "pattern_score",
    "pattern_scores", "previous_token_pattern", "project_band_sparse", "repeated_random_tokens", "row_entropy",
    "token_mask", "transformerlens_scores", "uniform_attention", "voita_labels", "voita_labels_from_scores",
]
