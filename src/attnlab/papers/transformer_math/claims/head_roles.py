"""Sanity checks of attnlab's head-role detectors (:mod:`attnlab.analysis.heads`), which §3.1.1's
positional, syntactic and rare-token heads (after the text's [12], Voita et al. 2019) are compared
with: the rules of Clark et al. (2019), Kovaleva et al. (2019), Voita et al. (2019) and
TransformerLens label hand-built maps of each type as they should. The taxonomies are other papers'
and the maps are built to carry each pattern, so a wrong label is attnlab's bug: each claim tests
attnlab's code, not the text (sanity)."""

from __future__ import annotations

import torch
from torch import Tensor

from attnlab.analysis.heads import (
    KOVALEVA_PATTERNS,
    clark_labels,
    kovaleva_patterns,
    pattern_scores,
    voita_labels,
)
from attnlab.analysis.heads.patterns import PATTERN_KINDS, duplicate_token_pattern, induction_pattern
from attnlab.analysis.heads.projection import random_attention
from attnlab.papers.transformer_math.head_structure import shifted_identity
from attnlab.checks import Check, at_most
from attnlab.registry import claim

NOISE = 0.2  # every built map is 0.8 P + 0.2 R, R random row-stochastic (causal where the map is)


def _noisy(P: Tensor, seed: int, causal: bool = False) -> Tensor:
    R = random_attention(P.shape[-1], seed=seed)
    if causal:
        R = R.tril()
        R = R / R.sum(-1, keepdim=True)
    return (1 - NOISE) * P + NOISE * R


def _rows_to(n: int, targets: Tensor) -> Tensor:
    """(n, n): row i spread uniformly over the True entries of targets[i] (itself where there is none)."""
    T = targets.to(torch.float64).clone()
    empty = T.sum(-1) == 0
    T[empty] = torch.eye(n, dtype=torch.float64)[empty]
    return T / T.sum(-1, keepdim=True)


def _columns(n: int, keys: list[int]) -> Tensor:
    """bool (n, n): every row marks the given key columns."""
    T = torch.zeros(n, n, dtype=torch.bool)
    T[:, keys] = True
    return T


@claim(
    "transformer-math.head-roles-clark-voita",
    where="not in the text: Clark et al. (2019) and Voita et al. (2019), the text's [12] (§3.1.1)",
    statement="attnlab's detectors of Clark et al.'s thresholds (entropy > 3.8 nats, > 0.5 on the previous/next "
              "token, > 0.6 on [CLS]/[SEP]/punctuation) and Voita et al.'s rules (argmax at offset -1/+1 in >= 90% "
              "of rows; argmax on the rarest token) label built previous, next, broad, special-token, self and "
              "rare-token maps, bidirectional and causal, exactly as built",
    paper_value="positional, syntactic and rare-token heads (Figure 12)",
)
def _roles_clark_voita(seed: int) -> Check:
    """n = 53 tokens ([CLS] first, [SEP] last, three punctuation marks, one rarest token, drawn from the
    seed); each map 0.8 P + 0.2 random. Measured: labels differing from the expected ones."""
    g = torch.Generator().manual_seed(seed)
    n = 53
    inner = torch.randperm(n - 2, generator=g)[:4] + 1
    punct, rare = inner[:3], int(inner[3])
    freq = torch.rand(n, generator=g, dtype=torch.float64) + 1.0
    freq[rare] = 0.5
    keys = {"[CLS]": [0], "[SEP]": [n - 1], "punctuation": punct.tolist()}
    to_punct = _columns(n, punct.tolist())
    maps = {  # name: (P, causal, expected Clark labels, expected Voita offset, expected rare)
        "previous": (shifted_identity(n, -1), False, ["previous"], -1, False),
        "next": (shifted_identity(n, 1), False, ["next"], 1, False),
        "broad": (torch.full((n, n), 1.0 / n, dtype=torch.float64), False, ["broad"], 0, False),
        "sep": (_rows_to(n, _columns(n, [n - 1])), False, ["special:[SEP]"], 0, False),
        "cls": (_rows_to(n, _columns(n, [0])), False, ["special:[CLS]"], 0, False),
        "punctuation": (_rows_to(n, to_punct), False, ["special:punctuation"], 0, False),
        "self": (torch.eye(n, dtype=torch.float64), False, [], 0, False),
        "rare": (_rows_to(n, _columns(n, [rare])), False, [], 0, True),
        "previous-causal": (shifted_identity(n, -1), True, ["previous"], -1, False),
        "cls-causal": (_rows_to(n, _columns(n, [0])), True, ["special:[CLS]"], 0, False),
    }
    wrong, values = 0, {}
    for k, (name, (P, causal, clark_expected, offset, rare_expected)) in enumerate(maps.items()):
        A = _noisy(P, seed * 100 + k, causal)
        c = clark_labels(A, causal=causal, keys=keys)
        v = voita_labels(A, causal=causal, frequencies=freq)
        got = (c.labels(), int(v.positional_offset), bool(v.rare))
        wrong += got != (clark_expected, offset, rare_expected)
        values[name] = {"clark": got[0], "voita_offset": got[1], "rare": got[2],
                        "entropy": c.stats.entropy.item(), "previous": c.stats.previous.item(),
                        "next": c.stats.next.item(),
                        "special": {s: t.item() for s, t in c.stats.to_keys.items()},
                        "offset_fractions": torch.nan_to_num(v.offset_fractions, nan=0.0).tolist(),
                        "rare_argmax": v.rare_argmax.item()}
    return at_most(wrong, 0, f"{len(maps) - wrong}/{len(maps)} maps labelled as built (n={n}, noise {NOISE}); broad "
                   f"map entropy {values['broad']['entropy']:.2f} > 3.8 nats",
                   values={"wrong": wrong, "maps": values, "n": n, "noise": NOISE}, role="sanity")


@claim(
    "transformer-math.head-roles-kovaleva",
    where="not in the text: Kovaleva et al. (2019), beside §3.1's \"diagonal structure\" and \"stress on a "
          "specific token\"",
    statement="attnlab's detector of Kovaleva et al.'s five patterns by template fit (mass on [CLS]/[SEP] "
              "columns, on the tridiagonal, on both, within the sentence; 0.6 to decide): built vertical, diagonal, "
              "vertical+diagonal, block and heterogeneous maps of a two-sentence input get their own label",
    paper_value="vertical, diagonal, vertical+diagonal, block, heterogeneous (hand labels + CNN)",
)
def _roles_kovaleva(seed: int) -> Check:
    """[CLS] s1 [SEP] s2 [SEP] with n = 53 ([SEP] at 26 and 52); each map 0.8 P + 0.2 random, the
    heterogeneous one random attention alone. Measured: maps with another label."""
    n, sep = 53, 26
    special = [0, sep, n - 1]
    seg = (torch.arange(n) > sep).long()
    i = torch.arange(n)
    near_sep = torch.where(i <= sep, sep, n - 1)
    maps = {
        "vertical": _rows_to(n, _columns(n, special)),
        "diagonal": 0.5 * shifted_identity(n, -1) + 0.5 * shifted_identity(n, 1),
        "vertical+diagonal": 0.5 * torch.nn.functional.one_hot(near_sep, n).double() + 0.5 * shifted_identity(n, -1),
        "block": _rows_to(n, seg[:, None] == seg[None, :]),
    }
    built = {k: _noisy(P, seed * 100 + j) for j, (k, P) in enumerate(maps.items())}
    built["heterogeneous"] = random_attention(n, seed=seed * 100 + 99)
    names = list(built)
    out = kovaleva_patterns(torch.stack([built[k] for k in names]), special=special, segments=seg)
    got = [KOVALEVA_PATTERNS[int(p)] for p in out.pattern]
    wrong = sum(g != k for g, k in zip(got, names))
    scores = {k: {t: out.scores[t][j].item() for t in out.scores} for j, k in enumerate(names)}
    return at_most(wrong, 0, f"{len(names) - wrong}/5 patterns recovered; heterogeneous scores "
                   + ", ".join(f"{t} {v:.2f}" for t, v in scores["heterogeneous"].items()),
                   values={"wrong": wrong, "labels": dict(zip(names, got)), "scores": scores,
                           "chance": {t: out.chance[t][0].item() for t in out.chance}, "n": n},
                   role="sanity")


@claim(
    "transformer-math.head-roles-patterns",
    where="not in the text: TransformerLens' detect_head, beside §3.1.1's positional heads",
    statement="attnlab's TransformerLens-style previous-token, duplicate-token and induction scores, 'mul' and "
              "'abs', causal and bidirectional, with and without exclude_bos: each built head scores highest on its "
              "own pattern; a perfect causal previous-token head scores 1 here and (n-1)/n, 1-1/n under "
              "TransformerLens' own convention",
    paper_value="TransformerLens' detect_head (causal models only)",
)
def _roles_patterns(seed: int) -> Check:
    """BOS + 11 distinct random tokens repeated twice (n = 23); built previous, duplicate and induction
    heads (rows with no target attend BOS), 0.8 P + 0.2 random. Measured: maps whose best pattern is not
    their own over 2 settings x 2 measures x 2 exclude_bos, plus the two convention checks."""
    g = torch.Generator().manual_seed(seed)
    half = torch.randperm(50, generator=g)[:11] + 1
    tokens = torch.cat([torch.zeros(1, dtype=torch.long), half, half])
    n = tokens.numel()
    wrong, values = 0, {}
    for causal in (True, False):
        bos = torch.zeros(n, n, dtype=torch.bool)
        bos[:, 0] = True
        heads = {"previous_token": shifted_identity(n, -1)}
        for kind, D in (("duplicate_token", duplicate_token_pattern(tokens, causal=causal)),
                        ("induction", induction_pattern(tokens, causal=causal))):
            T = D.bool()
            T[T.sum(-1) == 0] = bos[T.sum(-1) == 0]
            heads[kind] = _rows_to(n, T)
        A = torch.stack([_noisy(P, seed * 100 + j, causal) for j, P in enumerate(heads.values())])
        for measure in ("mul", "abs"):
            for exclude_bos in (False, True):
                s = pattern_scores(A, tokens, causal=causal, measure=measure, exclude_bos=exclude_bos)
                best = [PATTERN_KINDS[int(b)] for b in s.best()]
                wrong += sum(b != k for b, k in zip(best, heads))
                key = f"{'causal' if causal else 'bidirectional'}_{measure}{'_exclude_bos' if exclude_bos else ''}"
                values[key] = {k: [round(getattr(s, p)[j].item(), 4) for p in PATTERN_KINDS]
                               for j, k in enumerate(heads)}
    P = shifted_identity(n, -1)
    ours = [pattern_scores(P, tokens, measure=m).previous_token.item() for m in ("mul", "abs")]
    tl = [pattern_scores(P, tokens, measure=m, convention="transformerlens").previous_token.item()
          for m in ("mul", "abs")]
    conventions_ok = max(abs(ours[0] - 1), abs(ours[1] - 1), abs(tl[0] - (n - 1) / n), abs(tl[1] - (1 - 1 / n)))
    wrong += conventions_ok > 1e-12
    return at_most(wrong, 0, f"{24 - wrong}/24 heads score highest on their own pattern (n={n}); perfect previous-"
                   f"token head: {ours[0]:.3f}/{ours[1]:.3f} here, {tl[0]:.3f}/{tl[1]:.3f} TransformerLens",
                   values={"wrong": wrong, "scores": values, "perfect_previous": {"attnlab": ours,
                                                                                  "transformerlens": tl}, "n": n},
                   role="sanity")
