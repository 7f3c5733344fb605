"""The literature's head taxonomies beside their chance levels under a model's own mask.

Clark et al. 2019 (broad / previous / next / special-token heads), Kovaleva et al. 2019 (template fits)
and Voita et al. 2019 (argmax roles) read on the heads of one layer (:func:`head_taxonomies`), each
score beside the same score read on uniform attention under the model's mask, and those chance levels
in closed form (:func:`chance_closed_form`). math-behind-transformers §3.1.1 cites Voita et al. ([12]).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from attnlab.analysis.heads.clark import clark_labels_from_statistics
from attnlab.analysis.heads.kovaleva import KOVALEVA_PATTERNS, kovaleva_decide, kovaleva_patterns
from attnlab.analysis.heads.maps import uniform_attention
from attnlab.analysis.heads.statistics import HeadStatistics, head_statistics
from attnlab.analysis.heads.voita import voita_labels
from attnlab.config import check_int


@dataclass(frozen=True)
class HeadTaxonomy:
    """The literature's labels and scores of one head (:func:`head_taxonomies`), statistics averaged
    over the sentences."""

    clark: str  # Clark et al.'s labels joined by ", " ("–": none)
    clark_entropy: float  # mean attention entropy (nats)
    clark_previous: float  # mean weight on the previous token
    clark_next: float  # mean weight on the next token
    clark_to: dict[str, float]  # key set (e.g. "[CLS]", "punctuation") -> mean weight on it
    kovaleva: str  # Kovaleva et al.'s pattern
    kovaleva_vertical: float  # vertical template fit
    kovaleva_diagonal: float  # diagonal template fit

    def to_dict(self) -> dict:
        """The table-row columns: clark, clark_entropy, clark_previous, clark_next, clark_to_<set>...,
        kovaleva, kovaleva_vertical, kovaleva_diagonal."""
        return {"clark": self.clark, "clark_entropy": self.clark_entropy, "clark_previous": self.clark_previous,
                "clark_next": self.clark_next, **{f"clark_to_{k}": v for k, v in self.clark_to.items()},
                "kovaleva": self.kovaleva, "kovaleva_vertical": self.kovaleva_vertical,
                "kovaleva_diagonal": self.kovaleva_diagonal}


@dataclass(frozen=True)
class ChanceLevels:
    """Scores of uniform attention U (n, n) under one mask in closed form (:func:`chance_closed_form`)."""

    previous: float  # Clark's previous-token weight, mean over all n rows of u_{i,i-1}
    next: float  # Clark's next-token weight
    entropy: float  # Clark's entropy, mean over rows (nats)
    voita_previous: float  # Voita's argmax at offset -1, ties split, over the rows with key i-1
    d_sigma1: float  # d_Sigma1 / 2n = |U - I| / 2n


def chance_closed_form(n: int, *, causal: bool) -> ChanceLevels:
    """The chance levels of uniform attention U = uniform_attention(n, causal) in closed form, with
    H_n = 1 + 1/2 + ... + 1/n. Row i of a causal U is 1/(i + 1) on the keys j <= i; a bidirectional
    U is 1/n everywhere.

        score (on U)                          causal                  bidirectional
        Clark's previous weight, mean over    (H_n - 1) / n           (n - 1) / n^2
          all n rows of u_{i,i-1}
        Clark's next weight                   0                       (n - 1) / n^2
        Clark's smoothed entropy, mean over   ln(n!) / n              ln n
          rows (the smoothing leaves U as is)
        Voita's argmax at offset -1, ties     (H_n - 1) / (n - 1)     1 / n
          split, over the rows with key i-1
        d_Sigma1 / 2n = |U - I| / 2n          1 - H_n / n             1 - 1 / n
          (math-behind-transformers §3.1.2, eq. (22) with eps = 0: row i is 2 i / (i + 1) from
          its diagonal causally, 2 (n - 1) / n bidirectionally)

    A causal head's scores are read against the left column: against the right one its mask alone
    would pass for structure (at n = 16 causal uniform attention puts 0.149 on the previous token,
    bidirectional 0.059, and sits at 0.789 from Sigma_1 against 0.938)."""
    n = check_int("n", n, 2)
    H = sum(1.0 / k for k in range(1, n + 1))
    if causal:
        return ChanceLevels(previous=(H - 1) / n, next=0.0, entropy=math.lgamma(n + 1) / n,
                            voita_previous=(H - 1) / (n - 1), d_sigma1=1 - H / n)
    return ChanceLevels(previous=(n - 1) / n**2, next=(n - 1) / n**2, entropy=math.log(n),
                        voita_previous=1.0 / n, d_sigma1=1 - 1.0 / n)


def _average_statistics(stats: HeadStatistics) -> HeadStatistics:
    """Clark's statistics of maps (S, H, n, n) averaged over the S sentences (Clark et al. average each
    head's statistics over their segments, then compare with the thresholds)."""
    mean = lambda t: t.mean(0)  # noqa: E731
    return HeadStatistics(entropy=mean(stats.entropy), uniform_entropy=mean(stats.uniform_entropy),
                          distance=mean(stats.distance), previous=mean(stats.previous), self_=mean(stats.self_),
                          next=mean(stats.next), confidence=mean(stats.confidence),
                          to_keys={k: mean(v) for k, v in stats.to_keys.items()},
                          rows=stats.rows.sum(0) if stats.rows is not None else None, smoothing=stats.smoothing)


@dataclass(frozen=True)
class TaxonomyChance:
    """The taxonomies' scores read on uniform attention U = uniform_attention(n, causal) under a model's
    mask, with its keys and frequencies (:func:`head_taxonomies`), and the labels U itself gets."""

    entropy: float  # Clark's smoothed entropy (nats)
    previous: float  # Clark's previous-token weight
    next: float  # Clark's next-token weight
    to_keys: dict[str, float]  # Clark's weight on each key set (name -> weight), e.g. "[CLS]", "first token"
    kovaleva_vertical: float  # Kovaleva's vertical template fit
    kovaleva_diagonal: float  # Kovaleva's diagonal template fit
    voita_previous: float  # Voita's argmax at offset -1, ties split
    voita_next: float | None  # at offset +1; None when no row sees key i + 1 (causal)
    voita_rare_argmax: float  # Voita's argmax on the rarest token, ties split
    labels: dict[str, str]  # {"clark", "kovaleva"}: the labels of U itself

    def to_dict(self) -> dict:
        """The flat form results.json stores: Clark's key-set weights as "to_<set>" between next and
        kovaleva_vertical."""
        return {"entropy": self.entropy, "previous": self.previous, "next": self.next,
                **{f"to_{k}": v for k, v in self.to_keys.items()},
                "kovaleva_vertical": self.kovaleva_vertical, "kovaleva_diagonal": self.kovaleva_diagonal,
                "voita_previous": self.voita_previous, "voita_next": self.voita_next,
                "voita_rare_argmax": self.voita_rare_argmax, "labels": dict(self.labels)}


def head_taxonomies(A: torch.Tensor, *, causal: bool, keys: dict, vertical: torch.Tensor,
                    frequencies: torch.Tensor) -> tuple[list[HeadTaxonomy], TaxonomyChance]:
    """The literature's labels of the heads of one layer, A (S, H, n, n) over S sentences, beside
    their chance levels under the model's own mask.

    Clark et al. 2019 (:mod:`attnlab.analysis.heads.clark`): statistics averaged over the sentences,
    then broad (entropy > 3.8 nats), previous / next (> 0.5), special:<set> (> 0.6 on ``keys``: bool
    (S, n) masks). Kovaleva et al. 2019 (:mod:`attnlab.analysis.heads.kovaleva`): template fits
    m_T averaged over the sentences, then their decision rule; ``vertical`` (S, n): the vertical
    columns ([CLS]/[SEP], or a decoder's first token). Voita et al.'s roles are in
    :func:`~attnlab.papers.transformer_math.head_fits.fit_heads`.

    Chance: every score read on U = uniform_attention(n, causal) with the same keys, frequencies
    and sentences (Voita's argmax scores with ties split, since U ties on every row), and the
    labels U itself gets. Returns (one :class:`HeadTaxonomy` per head, the :class:`TaxonomyChance`)."""
    S, n_heads, n = A.shape[0], A.shape[1], A.shape[-1]
    out = []

    def read(M):
        stats = _average_statistics(head_statistics(M, causal=causal, keys=keys))
        clark = clark_labels_from_statistics(stats)
        kov = kovaleva_patterns(M, special=vertical, causal=causal)
        vert, diag = kov.scores["vertical"].mean(0), kov.scores["diagonal"].mean(0)
        return stats, clark, vert, diag, kovaleva_decide(vert, diag)

    stats, clark, vert, diag, pattern = read(A)
    for h in range(n_heads):
        out.append(HeadTaxonomy(clark=", ".join(clark.labels((h,))) or "–", clark_entropy=float(stats.entropy[h]),
                                clark_previous=float(stats.previous[h]), clark_next=float(stats.next[h]),
                                clark_to={k: float(v[h]) for k, v in stats.to_keys.items()},
                                kovaleva=KOVALEVA_PATTERNS[int(pattern[h])], kovaleva_vertical=float(vert[h]),
                                kovaleva_diagonal=float(diag[h])))
    U = uniform_attention(n, causal=causal).expand(S, 1, n, n)
    ustats, uclark, uvert, udiag, upattern = read(U)
    uvoita = voita_labels(U, causal=causal, frequencies=frequencies, ties="split")
    offs = uvoita.offset_fractions.mean(0)[0]  # (2,): offsets -1, +1 (NaN: no row has that key)
    chance = TaxonomyChance(entropy=float(ustats.entropy[0]), previous=float(ustats.previous[0]),
                            next=float(ustats.next[0]), to_keys={k: float(v[0]) for k, v in ustats.to_keys.items()},
                            kovaleva_vertical=float(uvert[0]), kovaleva_diagonal=float(udiag[0]),
                            voita_previous=float(offs[0]),
                            voita_next=None if bool(torch.isnan(offs[1])) else float(offs[1]),  # causal: no i + 1
                            voita_rare_argmax=float(uvoita.rare_argmax.mean()),
                            labels={"clark": ", ".join(uclark.labels((0,))) or "–",
                                    "kovaleva": KOVALEVA_PATTERNS[int(upattern[0])]})
    return out, chance
