"""``attnlab analyze``: the report of a run: results.json's summary rows, tables and figures, and
segment 0's maps (its first 64 tokens, in thousandths) as an interactive block that report.html
shows in an offline attention viewer (:mod:`attnlab.reports.viewer`), with the picked head's
scores of heads.json (:data:`~attnlab.commands.analyze.viewer_scores.VIEWER_SCORES`, to four significant
digits) and its rank among all heads beside the map.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import torch

from attnlab.analysis.heads.clark import BROAD_ENTROPY_NATS
from attnlab.analysis.heads.kovaleva import KOVALEVA_PATTERNS
from attnlab.analysis.heads.summary import TL_KINDS
from attnlab.checks import info
from attnlab.commands.analyze import evidence as ev
from attnlab.commands.analyze.payload import CLARK_CODE, STRIPE, TEXT_SCORES, TL_REPEATED, VOITA_ROLES, VOITA_TEXT
from attnlab.commands.analyze.records import Criterion, HeadNumbers, HeadRow, HeadScores, HeadsPayload
from attnlab.commands.analyze.text import Segments
from attnlab.commands.analyze.viewer_scores import viewer_block
from attnlab.results import (
    ExperimentResult,
    Table,
    bar_figure,
    heatmap_figure,
    heatmap_panel,
    line_figure,
    series,
)

GRID_TOKENS = 48  # the map grid shows the first 48 queries and keys of segment 0
ZOOM_TOKENS = 28  # the labelled panels, one token label per row and column


# ---- the report ---------------------------------------------------------------------------------
def _labels_text(x: HeadRow) -> tuple[str, str]:
    """A head's Clark et al. and Voita et al. labels as table cells."""
    return ", ".join(x.clark) or "–", ", ".join(x.voita) or "–"


def analysis_result(payload: HeadsPayload, numbers: HeadNumbers, first: torch.Tensor,
                    segs: Segments) -> ExperimentResult:
    """results.json's analysis of heads.json's ``payload`` and the run's ``numbers``: the summary, tables,
    figures and the attention viewer of segment 0's maps ``first`` (L, H, n, n)."""
    L, H, causal = payload.layers, payload.heads_per_layer, payload.causal
    rows = []
    for x in payload.heads:
        s = x.scores
        clark, voita = _labels_text(x)
        rows.append([x.layer, x.head, _round(s.entropy, 2), _round(s.distance, 2),
                     *(_round(v, 3) for v in (s.previous, s.next, s.to_cls, s.to_sep, s.to_punctuation)),
                     clark, x.kovaleva, voita, *(_round(get(s), 3) for get in (*TEXT_SCORE_OF, *TL_SCORES)),
                     _round(s.repeated_induction_stripe, 3)])
    per_head = Table(
        "Per head (means over segments). text: attnlab's previous-token, duplicate-token, induction scores on the "
        "text; TL: TransformerLens' detect_head scores on repeated random tokens (a perfect induction head scores "
        "s/n, about 0.5); stripe ind: the mean attention on i -> i - s + 1 over the second copy (perfect 1)"
        + ("" if causal else " (a bidirectional model: see the notes)"),
        ["layer", "head", "entropy (nats)", "distance", "prev", "next", "[CLS]", "[SEP]", "punct.", "Clark",
         "Kovaleva", "Voita", "text prev", "text dup", "text ind", "TL prev", "TL dup", "TL detect_head ind",
         "stripe ind"],
        rows, ["int", "int", "float", "float", "float", "float", "float", "float", "float", "text", "text", "text",
               "float", "float", "float", "float", "float", "float", "float"])
    counts = payload.counts
    count_rows = ([["Clark", k, v] for k, v in counts.clark.items()]
                  + [["Kovaleva", k, v] for k, v in counts.kovaleva.items()]
                  + [["Voita", k, v] for k, v in counts.voita.items()])
    count_table = Table(f"Heads per label (of {L * H})", ["criteria", "label", "heads"], count_rows,
                        ["text", "text", "int"])
    rule_table = Table(
        "Criteria, thresholds and chance levels (uniform attention under the model's "
        f"{'causal' if causal else 'bidirectional'} mask, on the same inputs)",
        ["criteria", "label", "rule", "threshold from", "chance"],
        [[r.criteria, r.label, r.rule, _source(r) if r.threshold is not None else "–",
          "–" if r.chance is None else _round(r.chance, 3)] for r in payload.criteria],
        ["text", "text", "text", "text", "float"])
    tables = [count_table, rule_table, _top_table(payload), *_evidence_tables(payload), per_head]
    return ExperimentResult(summary=_summary(payload), tables=tables,
                            figures=_figures(payload, numbers, first, segs) + _evidence_figures(payload, numbers),
                            notes=list(payload.notes), interactive=[viewer_block(first, segs, payload)])


TL_SCORES: tuple[Callable[[HeadScores], float], ...] = (
    lambda s: s.tl_repeated_previous_token, lambda s: s.tl_repeated_duplicate_token,
    lambda s: s.tl_repeated_induction)
"""A head's TransformerLens scores on the repeated random tokens, in the order of ``TL_KINDS``."""
TEXT_SCORE_OF: tuple[Callable[[HeadScores], float], ...] = (
    lambda s: s.text_previous_token, lambda s: s.text_duplicate_token, lambda s: s.text_induction)
"""A head's attnlab scores on the text, in the order of ``TL_KINDS``."""


def _perfect_tl(payload: HeadsPayload) -> tuple[float | None, ...]:
    """What a perfect head scores under TransformerLens' three scores (None without prompts)."""
    rep = payload.repeated_random_tokens
    return (rep.perfect_head.previous_token, rep.perfect_head.duplicate_token,
            rep.perfect_head.induction) if rep else (None, None, None)


def _pattern_scores(payload: HeadsPayload) -> list[tuple[str, str, Callable[[HeadScores], float], float | None]]:
    """(scores, pattern, the score of a head, what a perfect head scores or None) of every previous-token,
    duplicate-token and induction score: TransformerLens', the induction stripe, attnlab's on the text."""
    rep = payload.repeated_random_tokens
    return ([(TL_REPEATED, k.replace("_", "-") + (" (detect_head)" if k == "induction" else ""), get, best)
             for k, get, best in zip(TL_KINDS, TL_SCORES, _perfect_tl(payload))]
            + [(STRIPE, "induction stripe", lambda s: s.repeated_induction_stripe,
                rep.perfect_head.induction_stripe if rep else None)]
            + [(TEXT_SCORES, k.replace("_", "-"), get, None) for k, get in zip(TL_KINDS, TEXT_SCORE_OF)])


def _top_table(payload: HeadsPayload) -> Table:
    """The three highest heads of every previous-token, duplicate-token and induction score, beside uniform
    attention's and a perfect head's."""
    heads, chance = payload.heads, payload.chance.scores
    rows = []
    for name, label, get, best in _pattern_scores(payload):
        order = sorted(heads, key=lambda x: -_finite(get(x.scores)))[:3]
        rows.append([name, label, ", ".join(f"L{x.layer} H{x.head} ({get(x.scores):.3f})" for x in order),
                     _round(get(chance), 3), "–" if not best else _round(best, 3)])
    return Table("Previous-token, duplicate-token and induction scores: the three highest heads",
                 ["scores", "pattern", "heads (score)", "chance", "perfect head"], rows,
                 ["text", "text", "text", "float", "float"])


def _ci_text(mean: float, ci: Sequence[float] | None) -> str:
    lo, hi = ci
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return f"{mean:+.3f}"
    return f"{mean:+.3f} [{lo:+.3f}, {hi:+.3f}]"


def _evidence_tables(payload: HeadsPayload) -> list[Table]:
    """The causal evidence (largest ablation effects) and the per-head evidence beside the patterns."""
    heads = payload.heads
    out = []
    if payload.ablation:
        out += _ablation_tables(payload)
    ia = payload.induction_ablation
    if ia:
        rows = [[x.layer, x.head, _round(x.scores.tl_repeated_induction, 3),
                 _round(x.scores.repeated_induction_stripe, 3),
                 *(_ci_text(x.induction_ablation[k].delta_loss, x.induction_ablation[k].ci) for k in ev.KINDS)]
                for x in heads if x.induction_ablation is not None]
        out.append(Table(
            f"Induction, causally: the heads with the highest TransformerLens detect_head induction scores, ablated on the "
            f"{ia.prompts} repeated-random-token prompts; change in the loss on the second copy (nats per "
            f"prediction, mean [95% interval] over prompts; clean loss {ia.base_loss:.3f})",
            ["layer", "head", "TL detect_head ind", "stripe ind", "zero (exact)", "mean (exact)", "resample (exact)"],
            rows, ["int", "int", "float", "float", "text", "text", "text"]))
    has_dla = any(x.dla is not None for x in heads)
    rows = [[x.layer, x.head, x.kv_head, _round(x.sink, 3), _round(x.sink_norm, 3),
             *([_round(x.dla, 3)] if has_dla else []), _round(x.copying, 3), _round(x.qk_norm, 2),
             _round(x.ov_norm, 2)] for x in heads]
    out.append(Table(
        f"Evidence per head: attention on the first token (uniform attention under the model's mask: "
        f"{payload.chance.sink:.3f}) and its value-weighted share; "
        + (f"direct logit attribution to the next token (mean logit units, {payload.dla_unembedding} "
           "unembedding, final norm frozen at the clean run); " if has_dla else "")
        + "the OV circuit's copying score; the Frobenius norms of W_QK and W_OV",
        ["layer", "head", "kv", "sink", "sink (value-weighted)",
         *([f"DLA ({payload.dla_unembedding} W_U)"] if has_dla else []), "copying",
         "|W_QK|", "|W_OV|"], rows,
        ["int", "int", "int", "float", "float", *(["float"] if has_dla else []), "float", "float", "float"]))
    return out


ABLATION_TABLE = 12  # heads in the causal-evidence table
ESTIMATE = "≈"  # the mark of a first-order estimate, in every column header that holds one


def _exact(x: HeadRow, k: str) -> float:
    """The exact ablation change of head ``x`` for kind ``k`` (NaN for a head that was not re-run)."""
    return x.exact_change(k)


def _ablation_tables(payload: HeadsPayload) -> list[Table]:
    """The causal-evidence table (the re-run heads with the largest exact change, the first-order estimate
    beside each value marked ≈) and the estimates' measured error on the re-run heads."""
    ab = payload.ablation
    rerun = [x for x in payload.heads if x.ablation is not None]
    order = sorted(rerun, key=lambda x: -max(abs(_exact(x, k)) for k in ev.KINDS))[:ABLATION_TABLE]
    rows = [[x.layer, x.head, x.kv_head,
             *(_ci_text(x.ablation[k].delta_loss, x.ablation[k].ci) for k in ev.KINDS),
             *(_round(x.ablation_estimate[k].delta_loss_estimate, 3) for k in ev.KINDS),
             _round(math.nan if x.dla is None else x.dla, 3), _round(x.sink, 3), _round(x.copying, 3)]
            for x in order]
    dla = f"DLA ({payload.dla_unembedding} W_U)" if payload.dla_unembedding else "DLA"
    screened = (f"the {len(rerun)} heads with the largest first-order estimate were re-run exactly"
                if ab.mode == "top" else "every head was re-run exactly")
    table = Table(
        f"Causal evidence: the {len(order)} re-run heads whose exact ablation changes the next-token loss most "
        f"({screened}; exact values: a hooked forward with the head's z zeroed, mean-replaced or resampled; "
        f"nats per token, mean [95% interval] over {ab.segments} segments of {ab.tokens} tokens; clean loss "
        f"{ab.base_loss:.3f}). {ESTIMATE} columns: the first-order screening estimate, not a measurement",
        ["layer", "head", "kv", "zero (exact)", "mean (exact)", "resample (exact)",
         *(f"{ESTIMATE} {k} (first-order)" for k in ev.KINDS), dla, "sink", "copying"], rows,
        ["int", "int", "int", "text", "text", "text", "float", "float", "float", "float", "float", "float"])
    err = ab.estimate_error
    error_table = Table(
        f"How far the first-order screening estimates ({ESTIMATE}) are from the exact re-runs, on the "
        f"{len(rerun)} re-run heads (means over segments, nats per token)",
        ["ablation", "heads re-run", f"max |{ESTIMATE} - exact|", f"median |{ESTIMATE} - exact|",
         "other sign"],
        [[k, err[k].heads, _round(err[k].max_abs_error, 4), _round(err[k].median_abs_error, 4),
          err[k].sign_disagreements] for k in ev.KINDS],
        ["text", "int", "float", "float", "int"])
    return [table, error_table]


def _ablation_figure(payload: HeadsPayload, head_labels: list[str], layer_labels: list[str]) -> Any:
    """ablations.png: the exact change of every re-run head per kind; heads not re-run are blank."""
    heads, L, H = payload.heads, payload.layers, payload.heads_per_layer
    grids = {k: torch.tensor([[_exact(heads[l * H + h], k) for h in range(H)] for l in range(L)],
                             dtype=torch.float64) for k in ev.KINDS}
    m = max(float(g.abs().nan_to_num().max()) for g in grids.values()) or 1.0
    n = len(payload.ablation.exact_heads)
    return heatmap_figure(
        "ablations.png", f"Exact change in next-token loss when a head is ablated: zero (z_h := 0), mean (z_h := "
                         "its mean over segments and positions), resample (z_h := the next segment's), each a hooked "
                         f"forward re-run. Only the {n} re-run heads have a value; blank cells were not re-run (no "
                         "estimate is drawn). One scale.",
        panels=[heatmap_panel(f"{k} ablation (exact)", g, xlabels=head_labels, ylabels=layer_labels)
                for k, g in grids.items()],
        ncols=3, title="Head ablations (exact re-runs)", vmin=-m, vmax=m, colorbar="change in loss (nats/token)",
        cmap="RdBu_r", xlabel="head", ylabel="layer")


def _ablation_summary(payload: HeadsPayload) -> list:
    """Headline rows: per kind the re-run head with the largest exact change, and the estimates' largest error."""
    ab = payload.ablation
    rerun = [x for x in payload.heads if x.ablation is not None]
    rows = []
    for k in ev.KINDS:
        best = max(rerun, key=lambda x: _exact(x, k))
        a = best.ablation[k]
        rows.append(info(f"largest exact {k}-ablation change in next-token loss (nats/token)", a.delta_loss,
                         detail=f"L{best.layer} H{best.head}, exact re-run, 95% interval [{a.ci[0]:+.3f}, "
                                f"{a.ci[1]:+.3f}] over {ab.segments} segments; the largest of the "
                                f"{len(rerun)} heads re-run",
                         values={"layer": best.layer, "head": best.head, "ci": list(a.ci), "measured": a.measured}))
    err = ab.estimate_error
    worst = max(ev.KINDS, key=lambda k: err[k].max_abs_error)
    rows.append(info(f"largest error of the first-order screening estimate ({ESTIMATE}) on the re-run heads "
                     "(nats/token)", err[worst].max_abs_error,
                     detail=f"{worst} ablation; " + ", ".join(
                         f"{k}: max {err[k].max_abs_error:.3f}, median {err[k].median_abs_error:.3f}, "
                         f"{err[k].sign_disagreements} of {err[k].heads} with the other sign"
                         for k in ev.KINDS),
                     values={k: err[k].to_dict() for k in ev.KINDS}))
    return rows


def _evidence_figures(payload: HeadsPayload, numbers: HeadNumbers) -> list:
    """sinks.png, copying.png, direct-logit-attribution.png (with an output head) and ablations.png (where
    the ablations ran)."""
    L, H = payload.layers, payload.heads_per_layer
    s, unembedding = numbers.scores, payload.dla_unembedding
    layer_labels, head_labels = [str(l) for l in range(L)], [str(h) for h in range(H)]
    figs = [heatmap_figure(
        "sinks.png", f"Attention on the first token per head (uniform attention under the model's mask: "
                     f"{payload.chance.sink:.3f}) and the value-weighted share of what the head moves from it "
                     "(Kobayashi et al. 2020); one scale, 0 to 1.",
        panels=[heatmap_panel(t, v, xlabels=head_labels, ylabels=layer_labels)
                for v, t in ((s.sink, "attention on the first token"), (s.sink_norm, "value-weighted share"))],
        ncols=2, title="Attention sinks", vmin=0.0, vmax=1.0, colorbar="share", cmap="Blues",
        xlabel="head", ylabel="layer")]
    figs.append(heatmap_figure(
        "copying.png", "Copying score of every head's OV circuit (Elhage et al. 2021: sum of eigenvalues / sum of "
                       "their moduli of W_E W_OV W_U): +1 copies the attended token, -1 suppresses it.",
        panels=[heatmap_panel("copying score", numbers.weights.copying, xlabels=head_labels, ylabels=layer_labels)],
        ncols=1, title="OV copying scores", vmin=-1.0, vmax=1.0, colorbar="copying score", cmap="RdBu_r",
        xlabel="head", ylabel="layer"))
    if s.dla is not None:
        m = float(s.dla.abs().nan_to_num().max()) or 1.0
        figs.append(heatmap_figure(
            "direct-logit-attribution.png", "Direct logit attribution: each head's mean contribution to the logit "
                                            "of the next token, through the final norm's scale frozen at the clean "
                                            "run (gamma folded into the unembedding), "
                                            f"{unembedding} W_U"
                                            + (" (each row's mean over the vocabulary subtracted, TransformerLens' "
                                               "center_unembed)." if unembedding == "centred" else
                                               " (TransformerLens centres it by default: --center-unembed)."),
            panels=[heatmap_panel(f"direct logit attribution ({unembedding} W_U)", s.dla,
                                  xlabels=head_labels, ylabels=layer_labels)],
            ncols=1, title="Direct logit attribution", vmin=-m, vmax=m, colorbar="logit", cmap="RdBu_r",
            xlabel="head", ylabel="layer"))
    if payload.ablation:
        figs.append(_ablation_figure(payload, head_labels, layer_labels))
    return figs


def _summary(payload: HeadsPayload) -> list:
    """Descriptive rows (info): the strongest head of each TransformerLens score beside uniform attention's
    and a perfect head's, and each labelled count beside its threshold and chance level. The analysed
    model is not a text's model, so nothing here is judged against a paper."""
    heads, chance = payload.heads, payload.chance
    rows = []
    for k, get, perfect in zip(TL_KINDS, TL_SCORES, _perfect_tl(payload)):
        best = max(heads, key=lambda x: _finite(get(x.scores)))
        level, perfect = get(chance.scores), float("nan") if perfect is None else perfect
        rows.append(info(f"{TL_REPEATED}: highest {k.replace('_', '-')} score (detect_head)", get(best.scores),
                         detail=f"L{best.layer} H{best.head}; uniform attention scores {level:.3f}, "
                                f"a perfect head {perfect:.3f}",
                         values={"layer": best.layer, "head": best.head, "chance": level, "perfect_head": perfect}))
    best = max(heads, key=lambda x: _finite(x.scores.repeated_induction_stripe))
    level = chance.scores.repeated_induction_stripe
    rows.append(info(f"{STRIPE}: highest score", best.scores.repeated_induction_stripe,
                     detail=f"L{best.layer} H{best.head}; mean attention on i -> i - s + 1 over the second "
                            f"copy; uniform attention scores {level:.3f}, a perfect head 1",
                     values={"layer": best.layer, "head": best.head, "chance": level, "perfect_head": 1.0}))
    if payload.ablation:
        rows += _ablation_summary(payload)
    above = sum(1 for x in heads if x.ci.get("sink", [math.nan])[0] > chance.sink)
    rows.append(info("heads whose attention on the first token is above uniform attention's (95% interval)",
                     above, detail=f"of {len(heads)}; uniform attention under the model's mask puts "
                                   f"{chance.sink:.3f} there",
                     values={"heads": above, "chance": chance.sink}))
    return rows + _label_summary(payload)


def _label_summary(payload: HeadsPayload) -> list:
    """One descriptive row per criteria: how many heads carry each label, beside each rule's threshold, where
    it comes from and its chance level."""
    by_score: dict[str, list[Criterion]] = {}
    for r in payload.criteria:
        if r.threshold is not None:
            by_score.setdefault(r.criteria, []).append(r)
    counts = payload.counts
    flat = {**{("Clark et al. 2019", k): v for k, v in counts.clark.items()},
            **{("Kovaleva et al. 2019", k): v for k, v in counts.kovaleva.items()},
            **{("Voita et al. 2019", k): v for k, v in counts.voita.items()}}
    rows = []
    for framework, rs in by_score.items():
        parts = [f"{r.label} {flat.get((framework, r.label), 0)}" for r in rs]
        sources = sorted({_source(r) for r in rs})
        detail = ("uniform attention scores " + ", ".join(
            f"{r.label} {_chance_text(r.chance)} ({r.relation} {r.threshold:g}"
            + (f", {_source(r)}" if len(sources) > 1 else "") + ")" for r in rs)
            + (f"; thresholds: {sources[0]}" if len(sources) == 1 else ""))
        rows.append(info(f"{framework}: heads per label (of {len(payload.heads)})", ", ".join(parts), detail=detail,
                         values={r.label: flat.get((framework, r.label), 0) for r in rs}))
    return rows


def _source(r: Criterion) -> str:
    """Where a rule's threshold comes from, in a table cell."""
    return {CLARK_CODE: "Clark et al.'s code", VOITA_TEXT: "Voita et al.'s text"}.get(r.threshold_from,
                                                                                    "attnlab's choice")


def _chance_text(v: float | None) -> str:
    return f"{v:.3f}" if v is not None and math.isfinite(v) else "undefined"


def _round(v: float, digits: int) -> float:
    """A table cell: ``v`` to ``digits`` decimals (heads.json keeps every digit)."""
    return round(v, digits) if math.isfinite(v) else v


def _finite(v: float) -> float:
    return v if math.isfinite(v) else -math.inf


def _figures(payload: HeadsPayload, numbers: HeadNumbers, A: torch.Tensor, segs: Segments) -> list:
    """attention-maps.png, zoom.png (the heads that score highest on a few patterns), head-statistics.png,
    entropy.png and the label counts."""
    heads, L, H = payload.heads, payload.layers, payload.heads_per_layer
    avg = numbers.scores
    tokens = segs.tokens[0]
    g = min(GRID_TOKENS, len(tokens))
    grid = heatmap_figure(
        "attention-maps.png",
        f"Every head on the first {g} tokens of segment 0 (rows: queries, columns: keys; the rows of this "
        f"corner need not sum to 1). One colour scale, 0 to 1.",
        panels=[heatmap_panel(f"L{l} H{h}", A[l, h, :g, :g].double()) for l in range(L) for h in range(H)],
        ncols=H, title=f"Attention maps, {L} layers x {H} heads", vmin=0.0, vmax=1.0, colorbar="attention weight",
        cmap="Blues")
    picks: dict[tuple[int, int], str] = {}
    for score, what in ((lambda s: s.previous, "most previous-token"), (lambda s: s.next, "most next-token"),
                        (lambda s: s.to_cls + s.to_sep, "most [CLS]/[SEP]"), (lambda s: s.entropy, "broadest")):
        best = max(heads, key=lambda x: _finite(score(x.scores)))
        picks.setdefault((best.layer, best.head), what)
    z = min(ZOOM_TOKENS, len(tokens))
    labels = [t if len(t) <= 12 else t[:11] + "…" for t in segs.labels[0][:z]]
    zoom = heatmap_figure(
        "zoom.png", f"Selected heads on the first {z} tokens of segment 0, tokens labelled (rows: queries, "
                    "columns: keys).",
        panels=[heatmap_panel(f"L{l} H{h}: {what}", A[l, h, :z, :z].double(), xlabels=labels, ylabels=labels)
                for (l, h), what in picks.items()],
        ncols=2, title="Zoomed heads", vmin=0.0, vmax=1.0, colorbar="attention weight", cmap="Blues")
    layer_labels, head_labels = [str(l) for l in range(L)], [str(h) for h in range(H)]
    stats = heatmap_figure(
        "head-statistics.png", "Mean attention per head (rows: layers, columns: heads) to the previous and next "
                               "token, [CLS], [SEP] and punctuation; one scale, 0 to 1.",
        panels=[heatmap_panel(title, v, xlabels=head_labels, ylabels=layer_labels) for v, title in
                ((avg.previous, "previous token"), (avg.next, "next token"), (avg.to_cls, "[CLS]"),
                 (avg.to_sep, "[SEP]"), (avg.to_punctuation, "punctuation ( . , )"))],
        ncols=3, title="Where the heads look", vmin=0.0, vmax=1.0, colorbar="mean attention", cmap="Blues",
        xlabel="head", ylabel="layer")
    ent = avg.entropy
    layers = list(range(L))
    entropy = line_figure(
        "entropy.png", f"Mean smoothed attention entropy per layer (mean, min and max over heads); Clark's broad "
                       f"threshold {BROAD_ENTROPY_NATS:g} nats and the entropy of uniform attention.",
        series=[series("mean over heads", layers, ent.mean(-1).tolist()),
                series("min over heads", layers, ent.amin(-1).tolist(), style="dotted"),
                series("max over heads", layers, ent.amax(-1).tolist(), style="dotted"),
                series("uniform attention", layers, avg.uniform_entropy.mean(-1).tolist(), style="dashdot",
                       marker=False),
                series(f"broad threshold ({BROAD_ENTROPY_NATS:g})", layers, [BROAD_ENTROPY_NATS] * L, style="dashed",
                       marker=False)],
        xlabel="layer", ylabel="entropy (nats)", title="Attention entropy")
    return [grid, zoom, stats, entropy, *_label_bars(payload)]


def _label_bars(payload: HeadsPayload) -> list:
    """How many heads carry each label of Clark et al., Kovaleva et al. and Voita et al., as bar figures."""
    L, H = payload.layers, payload.heads_per_layer
    counts = payload.counts
    clark_keys = ("broad", "previous", "next", "special (any)", "no label")
    roles = [*VOITA_ROLES, "no role"]
    bars = [
        bar_figure("labels-clark.png", f"Clark et al.'s labels: how many of the {L * H} heads carry each "
                                       "(a head may carry several).", categories=list(clark_keys),
                   groups=[{"label": "heads", "values": [counts.clark[k] for k in clark_keys]}], ylabel="heads",
                   title="Clark et al. labels"),
        bar_figure("labels-kovaleva.png", f"Kovaleva et al.'s patterns: one per head, {L * H} heads.",
                   categories=list(KOVALEVA_PATTERNS),
                   groups=[{"label": "heads", "values": [counts.kovaleva[k] for k in KOVALEVA_PATTERNS]}],
                   ylabel="heads", title="Kovaleva et al. patterns"),
        bar_figure("labels-voita.png", f"Voita et al.'s roles among the {L * H} heads.", categories=roles,
                   groups=[{"label": "heads", "values": [counts.voita[k] for k in roles]}],
                   ylabel="heads", title="Voita et al. roles"),
    ]
    return bars
