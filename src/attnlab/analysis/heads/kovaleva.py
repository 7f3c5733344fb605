"""Kovaleva et al. 2019's five attention patterns, by template fit instead of a trained CNN.

O. Kovaleva, A. Romanov, A. Rogers, A. Rumshisky, "Revealing the Dark Secrets of BERT",
EMNLP 2019: about 400 maps were labelled by hand as vertical ([CLS]/[SEP] columns),
diagonal (previous/next token), vertical+diagonal, block (intra-sentence, for two-sentence
inputs) or heterogeneous, and a CNN trained on them. Here each pattern is a template, a
support T_i (the keys row i would attend), and the fit of a map to a template is the mass
it puts there,

    m_T = mean over real rows i of sum_{j in T_i} a_ij.

That is a distance in disguise: the nearest row-stochastic matrix supported on T is at
L1 distance exactly 2 (1 - m_T) per row averaged (move the mass outside T onto T: what
leaves costs its weight, what arrives the same), so m_T = 1 - d/2.

Templates (V = the vertical key columns: the given special positions, e.g. [CLS] and
[SEP]; without them the single key column with the most mean attention in that map):

    vertical           T_i = V
    diagonal           T_i = {i - 1, i, i + 1} minus V
    vertical+diagonal  T_i = V union {i - 1, i, i + 1}        (m = m_vertical + m_diagonal)
    block              T_i = {j : segment(j) = segment(i)}    (needs >= 2 segments in the map)

Decision rule, first match wins (tau = PATTERN_THRESHOLD = 0.6, Clark et al.'s special-token
threshold; mu = MIX_SHARE = 0.2). Both numbers are attnlab's choice: Kovaleva et al. decide
with their CNN and print no threshold. Read a fit beside its chance level (below):

    1. vertical            m_vertical >= tau
    2. diagonal            m_diagonal >= tau
    3. vertical+diagonal   m_vertical + m_diagonal >= tau, and both >= mu
    4. block               m_block >= tau
    5. heterogeneous       otherwise

The order goes from the smallest support to the largest, so a map is never called block
because a diagonal also lies inside its sentence. ``chance`` gives what uniform attention
over the visible keys would score on each template: a block fit near its chance level
says little (two sentences of very different lengths make the chance of the longer one
high).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import torch
from torch import Tensor

from attnlab.analysis.heads.maps import as_maps, key_set, per_position, real_tokens, row_mean, visible_keys

PATTERN_THRESHOLD = 0.6
MIX_SHARE = 0.2
KOVALEVA_PATTERNS = ("vertical", "diagonal", "vertical+diagonal", "block", "heterogeneous")


@dataclass(frozen=True)
class KovalevaPatterns:
    """pattern: int64 (...) indexing KOVALEVA_PATTERNS; scores: {template: m_T (...)} (block is NaN
    where a map has fewer than two segments); chance: {template: uniform attention's m_T (...)};
    vertical_columns: bool (..., n), the columns V used; thresholds: tau and mu."""

    pattern: Tensor
    scores: Mapping[str, Tensor]
    chance: Mapping[str, Tensor]
    vertical_columns: Tensor
    thresholds: Mapping[str, float]

    def names(self) -> list:
        """The pattern names, nested like the maps' leading axes (a str for a single map)."""
        return _nested_names(self.pattern.tolist())

    def summary(self, index: Sequence[int] = ()) -> str:
        """One line for one map: its pattern, every template's score beside its chance level, the thresholds."""
        idx = tuple(index)
        s = ", ".join(f"{k} {v[idx].item():.3f} (chance {self.chance[k][idx].item():.3f})"
                      for k, v in self.scores.items())
        return (f"{KOVALEVA_PATTERNS[int(self.pattern[idx])]}: {s}; threshold {self.thresholds['pattern']:g}, "
                f"mix share {self.thresholds['mix_share']:g}")


def _nested_names(x: int | Sequence[Any]) -> str | list[Any]:
    return KOVALEVA_PATTERNS[x] if isinstance(x, int) else [_nested_names(v) for v in x]


def kovaleva_patterns(A, *, special=None, segments=None, key_padding_mask=None, causal: bool = False
                      ) -> KovalevaPatterns:
    """The pattern of each map A (..., n, n) by the module docstring's templates and rule.

    special: the vertical key columns (positions, or a bool mask (..., n)); segments: int (..., n)
    sentence ids (BERT's token_type_ids); both aligned as :func:`per_position`.
    """
    A = as_maps(A)
    n = A.shape[-1]
    real = real_tokens(A, key_padding_mask)
    vis = visible_keys(A, real, causal)  # (..., n, n)
    if special is None:
        col = torch.where(real[..., None, :].expand(A.shape) & real[..., :, None], A, 0.0).sum(-2)  # (..., n)
        V = torch.nn.functional.one_hot(col.argmax(-1), n).to(torch.bool)
    else:
        V = key_set(A, special, name="special") & real
    i = torch.arange(n)
    near = ((i[:, None] - i[None, :]).abs() <= 1)  # (n, n)
    supports = {"vertical": V[..., None, :].expand(A.shape), "diagonal": near & ~V[..., None, :]}
    supports["vertical+diagonal"] = supports["vertical"] | supports["diagonal"]
    if segments is not None:
        seg = per_position(torch.as_tensor(segments).to(torch.int64), A, name="segments")
        same = seg[..., :, None] == seg[..., None, :]  # (..., n, n)
        big = torch.iinfo(torch.int64).max
        two = torch.where(real, seg, big).amin(-1) != torch.where(real, seg, -big).amax(-1)  # >= 2 segments
        supports["block"] = same
    scores, chance = {}, {}
    count = vis.sum(-1).clamp_min(1).to(torch.float64)
    for name, T in supports.items():
        scores[name] = row_mean((A * T).sum(-1), real)
        chance[name] = row_mean((T & vis).sum(-1) / count, real)
    if segments is None:
        scores["block"] = chance["block"] = torch.full(A.shape[:-2], float("nan"), dtype=torch.float64)
    else:
        scores["block"] = torch.where(two, scores["block"], float("nan"))
    return KovalevaPatterns(pattern=kovaleva_decide(scores["vertical"], scores["diagonal"], scores["block"]),
                            scores=scores, chance=chance, vertical_columns=V,
                            thresholds={"pattern": PATTERN_THRESHOLD, "mix_share": MIX_SHARE})


def kovaleva_decide(vertical: Tensor, diagonal: Tensor, block: Tensor | None = None) -> Tensor:
    """The module docstring's decision rule on template fits m_T (...), e.g. averages over
    documents: int64 (...) indexing KOVALEVA_PATTERNS, the first rule that holds. A NaN (or
    absent) block fit never decides block."""
    mv, md = torch.as_tensor(vertical, dtype=torch.float64), torch.as_tensor(diagonal, dtype=torch.float64)
    mb = torch.full_like(mv, -1.0) if block is None else torch.nan_to_num(
        torch.as_tensor(block, dtype=torch.float64), nan=-1.0)
    tau, mu = PATTERN_THRESHOLD, MIX_SHARE
    pattern = torch.full(mv.shape, 4, dtype=torch.int64)
    for k, ok in reversed(list(enumerate([mv >= tau, md >= tau, (mv + md >= tau) & (mv >= mu) & (md >= mu),
                                          mb >= tau]))):
        pattern = torch.where(ok, k, pattern)  # written last-to-first, so the first rule that holds wins
    return pattern
