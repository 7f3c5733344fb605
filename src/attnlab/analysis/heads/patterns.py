"""Pattern scores in the style of TransformerLens' head detector: previous-token, duplicate-token
and induction heads, with its two measures, for causal and bidirectional models.

TransformerLens (transformer_lens/head_detector.py, ``detect_head``) scores a map A against a
0/1 detection pattern D (rows are queries):

    "mul"   sum(A * D) / sum(A)                       the fraction of attention on the pattern
    "abs"   1 - round(mean|A - D| * T, 3)             = 1 - sum|A - D| / T (T = sequence length)

with ``exclude_bos`` / ``exclude_current_token`` zeroing column 0 / the diagonal first. Its
code asserts a lower-triangular pattern (causal models only), its list-of-prompts path drops
``error_measure``, ``heads`` and both ``exclude_*`` options, and it zeroes the cached maps in
place. Here every option applies on every path, maps are never written, and patterns exist
for bidirectional models too.

Patterns (tokens t_0..t_{n-1}; with ``causal=True`` only keys j <= i, as TransformerLens):

    previous_token   D_ij = [j = i - 1]
    duplicate_token  D_ij = [t_j = t_i, j != i]                  (an earlier or, bidirectional,
                                                                  any other occurrence of t_i)
    induction        D_ij = [j >= 1, t_{j-1} = t_i, j - 1 != i]  (the token after another
                                                                  occurrence: the duplicate
                                                                  pattern moved one key right)

Scores. K_ij = 1 for the kept keys: real tokens, minus column 0 with ``exclude_bos``, minus
j = i with ``exclude_current_token``; D' = D K. The rows scored are R = the real rows where
D' has an entry: a row whose pattern is empty (the first token for previous-token heads, a
token not seen before for induction) makes no prediction and is not held against the head.

    "mul"   sum_{i in R, j} K A D' / sum_{i in R, j} K A                     in [0, 1]
    "abs"   1 - mean_{i in R} sum_j |A^_ij - D^_ij|                           in [-1, 1]
            A^_i = K_i A_i / sum_j K_ij A_ij and D^_i = D'_i / sum_j D'_ij: the head's and the
            pattern's distributions over the kept keys (A^_i = 0 if the head puts nothing
            there), so a perfect head scores 1 and total disagreement -1, the range the
            TransformerLens docstring announces but its raw 0/1 pattern does not give (a
            duplicate row with two earlier copies has sum_j D_ij = 2).

``convention="transformerlens"`` computes TransformerLens' numbers instead (without the
rounding to 3 decimals): R = every row, "mul" = sum K A D / sum K A, "abs" = 1 - sum_ij
K_ij |A_ij - D_ij| / n. A perfect causal previous-token head then scores (n - 1)/n with
"mul" (row 0 has nowhere else to look) and 1 - 1/n with "abs".

TransformerLens on repeated random tokens (:func:`transformerlens_scores`,
:func:`repeated_random_tokens`). TransformerLens' tutorials find induction heads on a prompt
of s random tokens r repeated twice after BOS, [BOS] r r (n = 2s + 1). Its ``detect_head``
with its defaults ("mul", no exclusions, lower-triangular patterns whatever the model) scores

    previous_token   sum_i a_{i,i-1} / n                    perfect head: (n - 1)/n
    duplicate_token  sum_{k<s} a_{s+1+k, 1+k} / n           perfect head: s/n (the second copy
                                                            attends the first)
    induction        sum_{k<s} a_{s+1+k, 2+k} / n           perfect head: s/n (the token after
                                                            the earlier copy)

(with distinct tokens in r, prefix length 1). Uniform attention under the model's mask
(:func:`attnlab.analysis.heads.maps.uniform_attention`) gives each score's chance level:
bidirectional (n - 1)/n^2, s/n^2, s/n^2; causal (H_n - 1)/n and
sum_{k<s} 1/(s + 2 + k) / n for both others (H_n the harmonic number). For a bidirectional
model the patterns stay lower-triangular, as TransformerLens requires: a score is the share of
all attention, later keys included, that lands on the earlier target; attention from the
first copy to the second (the same pairs, looked at forwards) counts against it.

Stripe score (:func:`induction_stripe_score`). The score of the induction tutorials (e.g. ARENA's)
reads the induction stripe alone: on prefix, r, r (prefix length p, s = len(r)), the mean over
the second copy's rows i = p + s .. p + 2s - 1 of a_{i, i-s+1}, the weight on the token after the
earlier copy of t_i. A perfect induction head scores 1 (where TransformerLens' ``detect_head``
gives it s/n, about 0.5: every row of the prompt counts, and only the second copy's can score);
uniform causal attention scores (1/s) sum_{i} 1/(i + 1) over those rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor

from attnlab.analysis.heads.maps import as_maps, real_tokens, token_ids
from attnlab.config import check_bool, check_choice
from attnlab.errors import ConfigError

Measure = Literal["mul", "abs"]
PATTERN_KINDS = ("previous_token", "duplicate_token", "induction")
CONVENTIONS = ("attnlab", "transformerlens")
REPEATED_HALF = 50  # s, the random tokens repeated twice in TransformerLens' induction tutorials


def previous_token_pattern(n: int, *, causal: bool = True) -> Tensor:
    """D (n, n) float64 with D_{i,i-1} = 1 (the same for both settings: key i - 1 is always earlier)."""
    return torch.eye(n, dtype=torch.float64).roll(-1, dims=-1).tril(-1)


def duplicate_token_pattern(tokens, *, causal: bool = True) -> Tensor:
    """D (..., n, n) with D_ij = [t_j = t_i and j != i] (j < i when causal). tokens: int (..., n)."""
    t = torch.as_tensor(tokens)
    n = t.shape[-1]
    D = (t[..., :, None] == t[..., None, :]) & ~torch.eye(n, dtype=torch.bool)
    return (D.tril() if causal else D).to(torch.float64)


def induction_pattern(tokens, *, causal: bool = True) -> Tensor:
    """D (..., n, n) with D_ij = [j >= 1, t_{j-1} = t_i, j - 1 != i] (j <= i when causal)."""
    t = torch.as_tensor(tokens)
    n = t.shape[-1]
    dup = (t[..., :, None] == t[..., None, :]) & ~torch.eye(n, dtype=torch.bool)  # dup[i, j-1]
    D = torch.zeros(dup.shape, dtype=torch.bool)
    D[..., 1:] = dup[..., :-1]
    return (D.tril() if causal else D).to(torch.float64)


def _kept_keys(A: Tensor, real: Tensor, exclude_bos: bool, exclude_current_token: bool) -> Tensor:
    """K (..., n, n): the real keys, without column 0 (exclude_bos) and the diagonal (exclude_current_token)."""
    K = real[..., None, :].expand(A.shape).clone()
    if exclude_bos:
        K[..., 0] = False
    if exclude_current_token:
        K &= ~torch.eye(A.shape[-1], dtype=torch.bool)
    return K


def pattern_score(A, D, *, measure: Measure = "mul", exclude_bos: bool = False, exclude_current_token: bool = False,
                  key_padding_mask=None, convention: str = "attnlab") -> Tensor:
    """The score (...) of maps A (..., n, n) against pattern(s) D (..., n, n) (broadcast), module docstring.
    NaN for a map with no scored row (or no kept attention, "mul")."""
    check_choice("measure", measure, ("mul", "abs"))
    check_choice("convention", convention, CONVENTIONS)
    check_bool("exclude_bos", exclude_bos)
    check_bool("exclude_current_token", exclude_current_token)
    A = as_maps(A)
    D = torch.as_tensor(D).to(torch.float64)
    n = A.shape[-1]
    if D.ndim < 2 or D.shape[-2:] != (n, n):
        raise ConfigError(f"the pattern D must have shape (..., {n}, {n}) like the maps, got {tuple(D.shape)}")
    if bool(((D != 0) & (D != 1)).any()):
        raise ConfigError("the pattern D must hold 0s and 1s (which keys the head should attend)")
    real = real_tokens(A, key_padding_mask)
    if key_padding_mask is None and not exclude_bos and not exclude_current_token:  # K = 1: KA = A, D' = D exactly
        Kf, KA, Dk = None, A, D
    else:
        Kf = _kept_keys(A, real, exclude_bos, exclude_current_token).to(torch.float64)
        KA = Kf * A
        Dk = D * Kf  # D' = D K, broadcast to the maps
    if convention == "transformerlens":
        if measure == "mul":
            den = KA.sum((-2, -1))
            return torch.where(den > 0, (KA * Dk).sum((-2, -1)) / den.clamp_min(1e-300), float("nan"))
        return 1 - ((A - D).abs() if Kf is None else Kf * (A - D).abs()).sum((-2, -1)) / n
    rows = real & (Dk.sum(-1) > 0)  # R, (..., n)
    Rf = rows.to(torch.float64)[..., None]
    if measure == "mul":
        den = (Rf * KA).sum((-2, -1))
        return torch.where(den > 0, (Rf * KA * Dk).sum((-2, -1)) / den.clamp_min(1e-300), float("nan"))
    kept = KA.sum(-1, keepdim=True)
    A_hat = torch.where(kept > 0, KA / kept.clamp_min(1e-300), 0.0)
    D_hat = Dk / Dk.sum(-1, keepdim=True).clamp_min(1)
    dist = (A_hat - D_hat).abs().sum(-1)  # (..., n)
    count = rows.sum(-1)
    return torch.where(count > 0, 1 - (dist * rows).sum(-1) / count.clamp_min(1), float("nan"))


@dataclass(frozen=True)
class PatternScores:
    """previous_token, duplicate_token, induction: scores (...); scored_rows: {kind: rows scored (...)};
    and the options that produced them."""

    previous_token: Tensor
    duplicate_token: Tensor
    induction: Tensor
    scored_rows: dict
    measure: str
    causal: bool
    exclude_bos: bool
    exclude_current_token: bool
    convention: str

    def best(self) -> Tensor:
        """int64 (...): the index in PATTERN_KINDS of each map's highest score (NaN counts as lowest)."""
        s = torch.stack([self.previous_token, self.duplicate_token, self.induction], -1)
        return torch.nan_to_num(s, nan=-torch.inf).argmax(-1)


def pattern_scores(A, tokens, *, causal: bool = True, measure: Measure = "mul", exclude_bos: bool = False,
                   exclude_current_token: bool = False, key_padding_mask=None,
                   convention: str = "attnlab") -> PatternScores:
    """The three named patterns' scores for maps A (..., n, n) of the token ids ``tokens`` (..., n)
    (aligned from the left: tokens (B, n) for maps (B, L, H, n, n)). Average prompts yourself:
    every option applies to each of them."""
    check_bool("causal", causal)
    A = as_maps(A)
    t = token_ids(tokens, A)  # (..., n)
    n = A.shape[-1]
    patterns = {"previous_token": previous_token_pattern(n, causal=causal),
                "duplicate_token": duplicate_token_pattern(t, causal=causal),
                "induction": induction_pattern(t, causal=causal)}
    opts = dict(measure=measure, exclude_bos=exclude_bos, exclude_current_token=exclude_current_token,
                key_padding_mask=key_padding_mask, convention=convention)
    scores = {k: pattern_score(A, D, **opts) for k, D in patterns.items()}
    real = real_tokens(A, key_padding_mask)
    keep = _kept_keys(A, real, exclude_bos, exclude_current_token)
    scored = {k: (real & ((D * keep).sum(-1) > 0)).sum(-1) for k, D in patterns.items()}
    return PatternScores(**scores, scored_rows=scored, measure=measure, causal=causal, exclude_bos=exclude_bos,
                         exclude_current_token=exclude_current_token, convention=convention)


def repeated_random_tokens(vocabulary, half: int, prompts: int, *, prefix=(), suffix=(), seed: int = 0) -> Tensor:
    """int64 (prompts, len(prefix) + 2 half + len(suffix)): each row prefix, r, r, suffix, with r
    ``half`` distinct token ids drawn uniformly from ``vocabulary`` (a sequence of ids; the tutorials
    draw with replacement, distinct tokens give every row of the second copy exactly one earlier
    copy). ``prefix`` is [BOS] for a model that has one ([CLS] and ``suffix`` [SEP] for the BERT
    family: the framing the model was trained on). Deterministic in ``seed``."""
    vocab = torch.as_tensor(list(vocabulary), dtype=torch.int64)
    if vocab.ndim != 1 or len(vocab) < half or half < 1 or prompts < 1:
        raise ConfigError(f"repeated random tokens need 1 <= half <= {len(vocab)} distinct ids and prompts >= 1, "
                          f"got half={half}, prompts={prompts}")
    g = torch.Generator().manual_seed(seed)
    pre = torch.as_tensor(list(prefix), dtype=torch.int64)
    post = torch.as_tensor(list(suffix), dtype=torch.int64)
    rows = []
    for _ in range(prompts):
        r = vocab[torch.randperm(len(vocab), generator=g)[:half]]
        rows.append(torch.cat([pre, r, r, post]))
    return torch.stack(rows)


def transformerlens_scores(A, tokens, *, key_padding_mask=None) -> PatternScores:
    """TransformerLens' ``detect_head`` with its defaults on maps A (..., n, n) of ``tokens`` (..., n):
    "mul", no exclusions, its lower-triangular patterns for causal and bidirectional models alike,
    every row counted (module docstring). Average prompts yourself, as it does."""
    return pattern_scores(A, tokens, causal=True, measure="mul", key_padding_mask=key_padding_mask,
                          convention="transformerlens")


def induction_stripe_score(A, half: int, prefix: int = 1) -> Tensor:
    """The stripe score (...) of maps A (..., n, n) of a repeated sequence prefix, r, r(, suffix), r ``half``
    = s tokens after ``prefix`` = p tokens: mean_{i = p+s}^{p+2s-1} a_{i, i-s+1} (module docstring), the mean
    attention on the token after the earlier copy over the second copy; a perfect induction head scores 1."""
    A = as_maps(A)
    n = A.shape[-1]
    if isinstance(half, bool) or not isinstance(half, int) or isinstance(prefix, bool) or not isinstance(prefix, int) \
            or half < 1 or prefix < 0 or prefix + 2 * half > n:
        raise ConfigError(f"the stripe needs integers half >= 1 and prefix >= 0 with prefix + 2 half <= n = {n} (the "
                          f"maps' size), got half={half!r}, prefix={prefix!r}")
    rows = torch.arange(prefix + half, prefix + 2 * half)  # the second copy, (s,)
    return A[..., rows, rows - half + 1].mean(-1)
