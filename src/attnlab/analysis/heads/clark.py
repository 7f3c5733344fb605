"""Clark et al. 2019's head labels: broad, previous/next-token and special-token heads.

K. Clark, U. Khandelwal, O. Levy, C. D. Manning, "What Does BERT Look At? An Analysis of
BERT's Attention", BlackboxNLP 2019; code github.com/clarkkev/attention-analysis
(General_Analysis.ipynb). On the averages of :mod:`attnlab.analysis.heads.statistics`:

    broad        mean smoothed entropy    > BROAD_ENTROPY_NATS      = 3.8 nats
    previous     mean a_{i,i-1}           > POSITION_THRESHOLD      = 0.5
    next         mean a_{i,i+1}           > POSITION_THRESHOLD      = 0.5
    special:<S>  mean sum_{j in S} a_ij   > SPECIAL_TOKEN_THRESHOLD = 0.6, one label per key set S
                 (Clark's sets: [CLS], [SEP], and the punctuation ". ," — :func:`clark_key_sets`)

Strict inequalities, as the notebook's ``>`` comparisons. A head can carry several labels
(a head that puts 0.55 on the previous token and 0.65 on [SEP] is both) or none.

Conventions of the original code, kept here: rows are queries ([B, N, F, T] tensors), so
``np.eye(n, k=1)`` (the notebook's "right") is the NEXT token and ``np.eye(n, k=-1)``
("left") the PREVIOUS one, as its clustering code assumes; the plotting cell of Figure 2
prints "left" as "next token" and "right" as "prev token", which is the swap of the two.
Averages run over every query row (the notebook divides by n_tokens), so row 0 counts in
the "previous" average with a_{0,-1} = 0. The 3.8-nat threshold is absolute; the entropy
of uniform attention (ln n, printed beside it) depends on the length, and a causal head's
row i can reach at most ln(i + 1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from torch import Tensor

from attnlab.analysis.heads.maps import BERT_SPECIAL_TOKENS, CLARK_PUNCTUATION, token_mask
from attnlab.analysis.heads.statistics import CLARK_SMOOTHING, HeadStatistics, head_statistics

BROAD_ENTROPY_NATS = 3.8  # ENTROPY_THRESHOLD in Clark et al.'s code
POSITION_THRESHOLD = 0.5  # POSITION_THRESHOLD
SPECIAL_TOKEN_THRESHOLD = 0.6  # SPECIAL_TOKEN_THRESHOLD


@dataclass(frozen=True)
class ClarkLabels:
    """Labels (bool tensors of the maps' leading shape) and the statistics that decided them.

    broad, previous, next: bool (...); special: {key set name: bool (...)};
    stats: the :class:`HeadStatistics` behind every label; thresholds: the three constants.
    """

    broad: Tensor
    previous: Tensor
    next: Tensor
    special: Mapping[str, Tensor]
    stats: HeadStatistics
    thresholds: Mapping[str, float]

    def labels(self, index: Sequence[int] = ()) -> list[str]:
        """The labels of one map, e.g. labels((layer, head)) -> ["previous", "special:[SEP]"]."""
        idx = tuple(index)
        out = [name for name, t in (("broad", self.broad), ("previous", self.previous), ("next", self.next))
               if bool(t[idx])]
        return out + [f"special:{k}" for k, t in self.special.items() if bool(t[idx])]

    def summary(self, index: Sequence[int] = ()) -> str:
        """One line: the labels of one map with the numbers and thresholds behind them."""
        idx, s = tuple(index), self.stats
        parts = [f"entropy {s.entropy[idx].item():.3f} nats (> {self.thresholds['broad_entropy_nats']:g}; "
                 f"uniform {s.uniform_entropy[idx].item():.3f})",
                 f"previous {s.previous[idx].item():.3f}, next {s.next[idx].item():.3f} "
                 f"(> {self.thresholds['position']:g})"]
        if s.to_keys:
            parts.append(", ".join(f"{k} {v[idx].item():.3f}" for k, v in s.to_keys.items())
                         + f" (> {self.thresholds['special_token']:g})")
        return f"{', '.join(self.labels(idx)) or 'no label'}: " + "; ".join(parts)


def clark_key_sets(tokens: Sequence[str] | Sequence[Sequence[str]]) -> dict[str, Tensor]:
    """Clark's three key sets from token strings: {"[CLS]", "[SEP]", "punctuation" (". ,")}, bool (..., n)."""
    return {"[CLS]": token_mask(tokens, BERT_SPECIAL_TOKENS[:1]), "[SEP]": token_mask(tokens, BERT_SPECIAL_TOKENS[1:]),
            "punctuation": token_mask(tokens, CLARK_PUNCTUATION)}


def clark_labels(A, *, key_padding_mask=None, causal: bool = False, keys: Mapping[str, object] | None = None,
                 smoothing: float = CLARK_SMOOTHING) -> ClarkLabels:
    """Clark et al.'s labels (module docstring) for maps A (..., n, n).

    keys: the special key sets, {name: bool mask (..., n) or positions}, e.g. clark_key_sets(tokens)
    or {"[CLS]": [0], "[SEP]": [n - 1]}; without them no head is labelled special.
    """
    stats = head_statistics(A, key_padding_mask=key_padding_mask, causal=causal, keys=keys, smoothing=smoothing)
    return clark_labels_from_statistics(stats)


def clark_labels_from_statistics(stats: HeadStatistics) -> ClarkLabels:
    """The labels of the module docstring applied to given statistics, e.g. averages over
    documents (Clark et al. average each head's statistics over their 1000 segments, then
    compare with the thresholds)."""
    return ClarkLabels(
        broad=stats.entropy > BROAD_ENTROPY_NATS,
        previous=stats.previous > POSITION_THRESHOLD,
        next=stats.next > POSITION_THRESHOLD,
        special={k: v > SPECIAL_TOKEN_THRESHOLD for k, v in stats.to_keys.items()},
        stats=stats,
        thresholds={"broad_entropy_nats": BROAD_ENTROPY_NATS, "position": POSITION_THRESHOLD,
                    "special_token": SPECIAL_TOKEN_THRESHOLD},
    )

