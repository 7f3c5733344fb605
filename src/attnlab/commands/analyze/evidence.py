"""``attnlab analyze``: the evidence beside the patterns, for every head.

Per segment (:func:`attnlab.analysis.heads.readout.segment_evidence`, :func:`with_evidence`): the attention on the first
token (the sink) and its chance level under the model's own mask (causal uniform attention for a
causal model: mean_i 1/(i+1)), the value-weighted share of the first token (Kobayashi et al.
2020: a head that rests on a first token whose value vector is small moves little), and, for a
model with an output head, the direct logit attribution to the next token.

From the weights (:func:`attnlab.analysis.heads.readout.weight_evidence`): each head's copying score
(Elhage et al. 2021, sum lambda / sum |lambda| of W_E W_OV W_U) and the norms of its QK and OV
circuits; heads that share a key/value head (grouped-query attention) are grouped.

Ablations (models with an output head; :mod:`attnlab.analysis.heads.ablation`): the change in
next-token loss when a head's output z_h (its ``blocks.{l}.attn.hook_z``) is set to zero, to its
mean, or to another segment's, on the analysed segments cut to one length (``ABLATION_TOKENS``).
Every head gets a first-order estimate (attribution patching: one forward and one backward pass),
used only to screen: the ``EXACT_TOP`` heads with the largest estimated effect (all heads with
``ablate="all"``) are re-run exactly, a hooked forward per head and kind, and only those exact
values are shown as ablation effects. The estimates stay in heads.json under their own name
("ablation_estimate", "delta_loss_estimate") and in the report only in columns marked "≈", beside
their measured error on the re-run heads (:func:`estimate_errors`). Every per-head number has a
95% Student-t interval over segments.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnlab.analysis.heads.ablation import KINDS, ablation_estimates, baseline, exact_ablations
from attnlab.analysis.heads.intervals import mean_confidence_interval
from attnlab.analysis.heads.readout import WeightEvidence, segment_evidence, weight_evidence
from attnlab.analysis.heads.scores import SegmentScores, score_fields
from attnlab.commands.analyze.records import AblationEstimate, EstimateError, ExactAblation
from attnlab.errors import ConfigError

ABLATE = ("top", "all", "none")
ABLATION_TOKENS = 64  # tokens per segment in the ablation batch (the segments cut to one length)
EXACT_TOP = 12  # heads re-run exactly under ablate="top": every head the report's ablation table shows
INDUCTION_TOP = 6  # induction heads ablated on the repeated random tokens
LEVEL = 0.95


def with_evidence(pm, scores: SegmentScores, A: torch.Tensor, hidden: list[torch.Tensor], input_ids, *,
                  center_unembed: bool = False) -> SegmentScores:
    """One segment's ``scores`` with its evidence added: A (L, H, n, n), hidden [X_0..X_L] each (n, d); the
    sink's chance level under the model's mask; DLA through W_U centred over the vocabulary with
    ``center_unembed``."""
    ids = torch.as_tensor(list(input_ids))[None]
    ev = segment_evidence(pm.model, [h[None] for h in hidden], [P[None] for P in A], ids,
                          center_unembed=center_unembed)
    chance = ev.sink_chance_causal if bool(pm.model.causal) else ev.sink_chance_bidirectional
    return scores.with_evidence(ev.sink, ev.sink_norm, ev.dla, chance)


@dataclass(frozen=True)
class Ablations:
    """Ablation results: tokens m per segment and segments S used; per kind (L, H, S) first-order estimates
    (screening only; empty where none were made); exact[kind][(l, h)] (S,) for the heads re-run exactly;
    base_loss (S,)."""

    tokens: int
    segments: int
    estimates: dict[str, torch.Tensor]
    exact: dict[str, dict[tuple[int, int], torch.Tensor]]
    base_loss: torch.Tensor
    seconds: float

    @property
    def heads(self) -> list[tuple[int, int]]:
        """The heads re-run exactly, (layer, head) in order."""
        return sorted(self.exact[KINDS[0]])


def run_ablations(pm, input_ids: list[list[int]], ablate: str, progress=None) -> Ablations | None:
    """Ablations on the segments cut to min(ABLATION_TOKENS, shortest segment) tokens; None for a model
    without an output head, ``ablate="none"`` or fewer than 2 segments."""
    import time

    check_ablate(ablate)
    if ablate == "none" or getattr(pm.model, "lm_head", "none") == "none" or len(input_ids) < 2:
        return None
    start = time.perf_counter()
    m = min(ABLATION_TOKENS, min(map(len, input_ids)))
    if m < 2:
        return None
    x = torch.tensor([list(r[:m]) for r in input_ids], dtype=torch.int64, device=pm.device)
    base = baseline(pm.model, x)
    est = ablation_estimates(pm.model, base)
    L, H = est[KINDS[0]].shape[:2]
    if ablate == "all":
        heads = [(l, h) for l in range(L) for h in range(H)]
    else:
        effect = torch.stack([est[k].mean(-1).abs() for k in KINDS]).amax(0)  # (L, H)
        top = effect.flatten().topk(min(EXACT_TOP, L * H)).indices.tolist()
        heads = sorted((i // H, i % H) for i in top)
    exact: dict[str, dict] = {k: {} for k in KINDS}
    for i, head in enumerate(heads):
        if progress:
            progress(f"ablating L{head[0]} H{head[1]} ({i + 1}/{len(heads)})")
        for k, v in exact_ablations(pm.model, base, [head]).items():
            exact[k].update(v)
    return Ablations(m, int(x.shape[0]), est, exact, base.loss, time.perf_counter() - start)


def induction_ablations(pm, prompts, induction: torch.Tensor, ablate: str) -> Ablations | None:
    """Exact zero, mean and resample ablations of the ``INDUCTION_TOP`` heads with the highest TransformerLens
    induction scores (``induction`` (L, H)) on the repeated-random-token prompts [BOS] r r, the loss taken
    on the second copy only (the predictions of r_2..r_s from r_1..r_{s-1}, which an induction head can
    make and nothing else can): a prompt-defined measure of what the head does. None without an output
    head, prompts or ``ablate="none"``."""
    import time

    if (ablate == "none" or prompts is None or getattr(pm.model, "lm_head", "none") == "none"
            or prompts.input_ids.shape[0] < 2):
        return None
    start = time.perf_counter()
    x = prompts.input_ids.to(torch.int64).to(pm.device)
    n, p, s_ = x.shape[1], len(prompts.prefix), prompts.half
    scored = torch.zeros(n - 1, dtype=torch.bool)
    scored[p + s_: p + 2 * s_ - 1] = True  # position i predicts token i + 1 = r_{i - p - s + 1} of the second copy
    base = baseline(pm.model, x, scored.to(pm.device))
    L, H = induction.shape
    order = torch.nan_to_num(induction, nan=-1.0).flatten().topk(min(INDUCTION_TOP, L * H)).indices.tolist()
    heads = sorted((i // H, i % H) for i in order)
    exact = exact_ablations(pm.model, base, heads)
    return Ablations(int(scored.sum()), int(x.shape[0]), {}, exact, base.loss, time.perf_counter() - start)


def interval(values: torch.Tensor) -> tuple[float, float, float]:
    """(mean, low, high) of per-segment values (S,), the 95% Student-t interval; NaN bounds under 2 values."""
    ci = mean_confidence_interval(values.to(torch.float64), dim=0, level=LEVEL)
    return float(ci.mean), float(ci.low), float(ci.high)


def intervals(per_seg: list[SegmentScores]) -> dict[str, torch.Tensor]:
    """Field name -> (L, H, 2) low and high of the 95% interval over segments of each (L, H) number."""
    out = {}
    fields = [score_fields(s) for s in per_seg]
    for k in fields[0]:
        stack = torch.stack([d[k] for d in fields]).to(torch.float64)  # (S, L, H) or (S, L, H, 2)
        if stack.ndim != 3:
            continue
        ci = mean_confidence_interval(stack, dim=0, level=LEVEL)
        out[k] = torch.stack([ci.low, ci.high], -1)
    return out


def head_exact_rows(ab: Ablations, l: int, h: int) -> dict[str, ExactAblation] | None:
    """heads.json "ablation" of one head: per kind the mean change in loss over segments of the exact re-run,
    its interval, and "measured": "exact"; None for a head that was not re-run."""
    if (l, h) not in ab.exact[KINDS[0]]:
        return None
    out = {}
    for k in KINDS:
        mean, lo, hi = interval(ab.exact[k][(l, h)])
        out[k] = ExactAblation(mean, (lo, hi))
    return out


def head_estimate_rows(ab: Ablations, l: int, h: int) -> dict[str, AblationEstimate]:
    """heads.json "ablation_estimate" of one head: per kind the first-order estimate of the mean change in loss
    ("delta_loss_estimate") and its interval over segments ("ci_estimate"); a screening number, never shown
    unmarked."""
    out = {}
    for k in KINDS:
        mean, lo, hi = interval(ab.estimates[k][l, h])
        out[k] = AblationEstimate(mean, (lo, hi))
    return out


def estimate_errors(ab: Ablations) -> dict[str, EstimateError]:
    """kind -> how far the first-order estimates are from the exact re-runs, on the re-run heads' means over
    segments: heads compared, max and median |estimate - exact|, and how many have the other sign."""
    out = {}
    for k in KINDS:
        heads = sorted(ab.exact[k])
        exact = torch.stack([ab.exact[k][x].mean() for x in heads]).to(torch.float64)  # (n,)
        est = torch.stack([ab.estimates[k][l, h].mean() for l, h in heads]).to(torch.float64)
        err = (est - exact).abs()
        out[k] = EstimateError(len(heads), float(err.max()), float(err.quantile(0.5)),
                               int(((est > 0) != (exact > 0)).sum()))
    return out


def grouping(pm) -> tuple[int, int]:
    """(H, H_kv) of the model's attention."""
    a = pm.model.blocks[0].attn
    return a.n_heads, getattr(a, "n_kv_heads", a.n_heads)


def weights(pm) -> WeightEvidence:
    """The weight evidence (L, H) of the model (copying score, circuit norms)."""
    with torch.no_grad():
        return weight_evidence(pm.model)


def check_ablate(ablate: str) -> str:
    if ablate not in ABLATE:
        raise ConfigError(f"--ablate {ablate!r} is not one of {', '.join(ABLATE)}: top (exact re-runs of the "
                          f"{EXACT_TOP} heads with the largest first-order estimate), all (exact for every head; "
                          "slow), none")
    return ablate
