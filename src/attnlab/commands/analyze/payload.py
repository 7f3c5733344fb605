"""``attnlab analyze``: heads.json, the per-head payload: every head's averaged numbers, labels,
evidence and 95% intervals, the label counts, every label's rule with its threshold, where the
threshold comes from (the paper, its code, or attnlab's choice) and its chance level, and the
notes that say how to read them.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

from attnlab.analysis.heads.clark import BROAD_ENTROPY_NATS, POSITION_THRESHOLD, SPECIAL_TOKEN_THRESHOLD
from attnlab.analysis.heads.kovaleva import KOVALEVA_PATTERNS, MIX_SHARE, PATTERN_THRESHOLD
from attnlab.analysis.heads.maps import CLARK_PUNCTUATION
from attnlab.analysis.heads.scores import RepeatedScores, SegmentScores
from attnlab.analysis.heads.statistics import CLARK_SMOOTHING
from attnlab.analysis.heads.summary import TL_KINDS, HeadLabels, decide, thresholds
from attnlab.analysis.heads.voita import POSITIONAL_FRACTION, RARE_TOKEN_FRACTION, VOITA_OFFSETS, VoitaLabels
from attnlab.commands.analyze import evidence as ev
from attnlab.commands.analyze.evidence import Ablations
from attnlab.commands.analyze.records import (
    AblationInfo,
    ChanceLevels,
    Criterion,
    HeadNumbers,
    HeadRow,
    HeadScores,
    HeadsPayload,
    InductionInfo,
    KovalevaScores,
    LabelCounts,
    PatternLevels,
    RepeatedInfo,
)
from attnlab.commands.analyze.text import RepeatedPrompts, Segments

if TYPE_CHECKING:
    from attnlab.pretrained import PretrainedModel

TEXT_SCORES = "attnlab scores on the text"
TL_REPEATED = "TransformerLens (repeated random tokens)"
STRIPE = "induction stripe (repeated random tokens)"
CLARK_CODE = "Clark et al.'s code (General_Analysis.ipynb: the head behaviours of their clustering, §6)"
KOVALEVA_CHOICE = ("attnlab's choice: Kovaleva et al. labelled maps by hand and trained a CNN, with no threshold; "
                   "0.6 is Clark et al.'s special-token threshold, the 0.2 share attnlab's")
VOITA_TEXT = "Voita et al. 2019 (\"at least 90% of the time\")"
VOITA_CHOICE = "attnlab's choice: Voita et al. give no number for rare-token heads (the positional 90% carried over)"
NO_THRESHOLD = "no threshold: the highest heads are listed"
ESTIMATE_METHOD = ("first-order (attribution patching: the change of z_h times the gradient of the loss, one "
                   "backward pass); screening only, marked ≈ wherever shown")


def dla_unembedding(config: dict) -> str:
    """Which unembedding the run's direct logit attribution reads: "centred" or "uncentred"."""
    return "centred" if config.get("center_unembed") else "uncentred"


def dla_convention(config: dict) -> str:
    """The run's direct-logit-attribution convention in one sentence (heads.json "dla_convention")."""
    which = ("centred: each row of W_U minus its mean over the vocabulary, TransformerLens' default "
             "center_unembed (--center-unembed), so a head's number is its share of the next token's logit "
             "minus the mean logit" if config.get("center_unembed") else
             "uncentred (W_U as the model holds it; --center-unembed centres it as TransformerLens does by "
             "default, which can reorder the heads)")
    return ("Direct logit attribution: head h's write o_h,i (P_h V_h W_O,h, without b_O) through the final norm "
            "with its per-position scale frozen at the clean run (1/rms of the final residual, or 1/sigma with "
            "centring for LayerNorm) and gamma folded into the unembedding, dotted with W_U[:, next token]; mean "
            f"over the positions (logit units). Unembedding: {which}.")


def criteria(chance: ChanceLevels) -> list[Criterion]:
    """Every label's rule: criteria, label, score (its heads.json name), relation, threshold, where the
    threshold comes from (the paper, its code, or attnlab's choice), the rule in words and the score's
    chance level (``chance``: the run's, heads.json "chance")."""
    c, k, v = chance.scores, chance.kovaleva_scores, chance

    def row(framework: str, label: str, score: str | None, relation: str | None, threshold: float | None,
            source: str, rule: str, level: float | None) -> Criterion:
        return Criterion(framework, label, score, relation, threshold, source, rule, level)

    clark, kov, voita = "Clark et al. 2019", "Kovaleva et al. 2019", "Voita et al. 2019"
    tau, share, frac = PATTERN_THRESHOLD, MIX_SHARE, POSITIONAL_FRACTION
    rows = [
        row(clark, "broad", "entropy", ">", BROAD_ENTROPY_NATS, CLARK_CODE,
            f"mean smoothed entropy > {BROAD_ENTROPY_NATS:g} nats "
            f"(a' = {CLARK_SMOOTHING:g} a + {1 - CLARK_SMOOTHING:.4g}/|K|)", c.entropy),
        row(clark, "previous", "previous", ">", POSITION_THRESHOLD, CLARK_CODE,
            f"mean a(i, i-1) > {POSITION_THRESHOLD:g}", c.previous),
        row(clark, "next", "next", ">", POSITION_THRESHOLD, CLARK_CODE, f"mean a(i, i+1) > {POSITION_THRESHOLD:g}",
            c.next),
        *(row(clark, f"special:{name}", key, ">", SPECIAL_TOKEN_THRESHOLD, CLARK_CODE,
              f"mean attention to {what} > {SPECIAL_TOKEN_THRESHOLD:g}", level)
          for name, key, what, level in (
              ("[CLS]", "to_cls", "[CLS]", c.to_cls), ("[SEP]", "to_sep", "[SEP]", c.to_sep),
              ("punctuation", "to_punctuation", f"punctuation ({' '.join(CLARK_PUNCTUATION)})", c.to_punctuation))),
        row(kov, "vertical", "kovaleva_scores.vertical", ">=", tau, KOVALEVA_CHOICE,
            f"fit on [CLS]/[SEP] columns >= {tau:g}", k.vertical),
        row(kov, "diagonal", "kovaleva_scores.diagonal", ">=", tau, KOVALEVA_CHOICE,
            f"fit on keys i-1, i, i+1 >= {tau:g}", k.diagonal),
        row(kov, "vertical+diagonal", "kovaleva_scores.vertical+diagonal", ">=", tau, KOVALEVA_CHOICE,
            f"vertical + diagonal >= {tau:g}, each >= {share:g}", k.vertical_diagonal),
        row(kov, "block", "kovaleva_scores.block", ">=", tau, KOVALEVA_CHOICE,
            f"fit on the query's own sentence (A or B) >= {tau:g}", k.block),
        row(kov, "heterogeneous", None, None, None, "", "none of the above (first rule that holds wins, in this order)",
            None),
        row(voita, "positional -1", "voita_argmax_previous", ">=", frac, VOITA_TEXT,
            f"row maximum on key i-1 in >= {frac:g} of the rows", v.voita_argmax_previous),
        row(voita, "positional +1", "voita_argmax_next", ">=", frac, VOITA_TEXT,
            f"row maximum on key i+1 in >= {frac:g} of the rows", v.voita_argmax_next),
        row(voita, "rare-token", "rare_argmax", ">=", RARE_TOKEN_FRACTION, VOITA_CHOICE,
            f"row maximum on the segment's rarest token in >= {RARE_TOKEN_FRACTION:g} of the rows", c.rare_argmax),
    ]
    text = (c.text_previous_token, c.text_duplicate_token, c.text_induction)
    for kind, level in zip(TL_KINDS, text):
        rows.append(row(TEXT_SCORES, kind.replace("_", "-"), f"text_{kind}", None, None, NO_THRESHOLD,
                        "attention on the pattern / attention of the rows that have a target, on the text", level))
    tl = (c.tl_repeated_previous_token, c.tl_repeated_duplicate_token, c.tl_repeated_induction)
    for kind, level in zip(TL_KINDS, tl):
        rows.append(row(TL_REPEATED, kind.replace("_", "-"), f"tl_repeated_{kind}", None, None, NO_THRESHOLD,
                        "TransformerLens detect_head (\"mul\", no exclusions): attention on its pattern / all "
                        "attention, on repeated random tokens", level))
    rows.append(row(STRIPE, "induction stripe", "repeated_induction_stripe", None, None, NO_THRESHOLD,
                    "mean attention a(i, i-s+1) over the second copy's rows (a perfect induction head scores 1)",
                    c.repeated_induction_stripe))
    return rows


CI_SCORES = (*(f.name for f in dataclasses.fields(HeadScores)), "sink", "sink_norm", "dla")
"""The scores with a 95% interval over segments in a row's "ci", in this order, where the run has them."""


def chance_levels(s: SegmentScores, r: RepeatedScores) -> ChanceLevels:
    """Uniform attention's value of every per-head score (heads.json "chance"), from the chance levels
    (each (1, 1)) of the averaged scores ``s`` and the repeated-token scores ``r``."""
    c, rc = s.chance, r.chance
    f = c.offset_fractions.reshape(-1, len(VOITA_OFFSETS))[0]
    return ChanceLevels(HeadScores.at(c, rc, (0, 0)), f[VOITA_OFFSETS.index(-1)].item(),
                        f[VOITA_OFFSETS.index(1)].item(), KovalevaScores.at(c, (0, 0)), c.sink.reshape(-1)[0].item())


EVIDENCE = ("sink", "sink_norm", "dla", "copying", "copying_positive_fraction", "qk_norm", "ov_norm")


def heads_payload(config: dict, pm: PretrainedModel, segs: Segments, specials: dict, numbers: HeadNumbers,
                  prompts: RepeatedPrompts | None, ablations: Ablations | None = None,
                  induction: Ablations | None = None) -> HeadsPayload:
    """heads.json: the model, every head's row (:func:`_head_rows`, labelled by
    :func:`~attnlab.analysis.heads.summary.decide` on the means), the label counts, the criteria with their
    chance levels, the repeated-random-token prompts, the ablations and the notes."""
    causal = bool(pm.model.causal)
    L, H = numbers.scores.entropy.shape
    n_heads, n_kv = ev.grouping(pm)
    heads = _head_rows(numbers, decide(numbers.scores), n_heads // n_kv, ablations, induction)
    chance = chance_levels(numbers.scores, numbers.repeated)
    repeated = None if prompts is None else _repeated_info(pm, prompts, chance)
    ablation = None if ablations is None else AblationInfo(
        ablations.tokens, ablations.segments, list(ev.KINDS), [list(t) for t in ablations.heads],
        ablations.base_loss.mean().item(), round(ablations.seconds, 1), config.get("ablate", "top"),
        ESTIMATE_METHOD, ev.estimate_errors(ablations))
    notes = (_reading_notes(config, segs, causal) + _repeated_notes(config, prompts, repeated, causal)
             + _input_notes(segs, specials, chance) + _evidence_notes(pm, chance, causal, n_heads, n_kv)
             + _ablation_notes(pm, ablations, ablation, induction))
    induction_info = None if induction is None else InductionInfo(
        [list(t) for t in induction.heads], induction.segments, induction.tokens,
        induction.base_loss.mean().item(), round(induction.seconds, 1))
    has_dla = numbers.scores.dla is not None
    if has_dla:
        notes.append(dla_convention(config))
    return HeadsPayload(
        config["model"], config["checkpoint"], config["model_type"], causal, L, H, n_kv,
        dla_unembedding(config) if has_dla else None, dla_convention(config) if has_dla else None,
        ablation, induction_info, len(segs.input_ids), config["max_tokens"], config["text"], config["dtype"],
        segs.bos, specials, segs.pairs, thresholds(), criteria(chance), chance, repeated, _counts(heads), notes, heads)


def _repeated_info(pm: PretrainedModel, prompts: RepeatedPrompts, chance: ChanceLevels) -> RepeatedInfo:
    """heads.json "repeated_random_tokens": the prompts, what a perfect head and uniform attention score."""
    c = chance.scores
    return RepeatedInfo(int(prompts.input_ids.shape[0]), prompts.half, prompts.length,
                        pm.tokenizer.convert_ids_to_tokens(prompts.prefix),
                        pm.tokenizer.convert_ids_to_tokens(prompts.suffix), prompts.seed, prompts.perfect(),
                        PatternLevels(c.tl_repeated_previous_token, c.tl_repeated_duplicate_token,
                                      c.tl_repeated_induction, c.repeated_induction_stripe))


def _voita_roles(voita: VoitaLabels, i: tuple[int, int]) -> list[str]:
    """Head ``i``'s roles under Voita et al.: its positional offset, rare-token."""
    return (([f"positional {int(voita.positional_offset[i]):+d}"] if bool(voita.positional[i]) else [])
            + (["rare-token"] if bool(voita.rare[i]) else []))


def _head_rows(numbers: HeadNumbers, labels: HeadLabels, group: int, ablations: Ablations | None,
               induction: Ablations | None) -> list[HeadRow]:
    """One row per head, layer by layer: its averaged numbers, its labels under each criteria, its evidence
    and intervals, and its ablations where they ran (``group``: query heads per key/value head)."""
    s, w, cis = numbers.scores, numbers.weights, numbers.intervals
    L, H = s.entropy.shape
    previous, next_ = VOITA_OFFSETS.index(-1), VOITA_OFFSETS.index(1)
    heads = []
    for l in range(L):
        for h in range(H):
            i = (l, h)
            heads.append(HeadRow(
                l, h, HeadScores.at(s, numbers.repeated, i), labels.clark.labels(i),
                KOVALEVA_PATTERNS[int(labels.kovaleva[i])], KovalevaScores.at(s, i), _voita_roles(labels.voita, i),
                s.offset_fractions[l, h, previous].item(), s.offset_fractions[l, h, next_].item(), h // group,
                s.sink[i].item(), s.sink_norm[i].item(), None if s.dla is None else s.dla[i].item(),
                w.copying[i].item(), w.copying_positive_fraction[i].item(), w.qk_norm[i].item(), w.ov_norm[i].item(),
                {k.rstrip("_"): cis[k][i].tolist() for k in CI_SCORES if k in cis},
                ablation=None if ablations is None else ev.head_exact_rows(ablations, l, h),
                ablation_estimate=None if ablations is None else ev.head_estimate_rows(ablations, l, h),
                induction_ablation=None if induction is None else ev.head_exact_rows(induction, l, h)))
    return heads


def _counts(heads: list[HeadRow]) -> LabelCounts:
    """How many heads each criteria gives each label (heads.json "counts")."""
    clark = {**{name: sum(name in x.clark for x in heads) for name in CLARK_LABELS},
             "special (any)": sum(any(c.startswith("special") for c in x.clark) for x in heads),
             "no label": sum(not x.clark for x in heads)}
    voita = {**{role: sum(role in x.voita for x in heads) for role in VOITA_ROLES},
             "no role": sum(not x.voita for x in heads)}
    return LabelCounts(clark, {p: sum(x.kovaleva == p for x in heads) for p in KOVALEVA_PATTERNS}, voita)


CLARK_LABELS = ("broad", "previous", "next", "special:[CLS]", "special:[SEP]", "special:punctuation")
VOITA_ROLES = ("positional -1", "positional +1", "rare-token")


def _reading_notes(config: dict, segs: Segments, causal: bool) -> list[str]:
    """How to read every number: averaging, chance levels, where the thresholds come from, the text scores."""
    return [
        f"Layers and heads are numbered from 0. Every number is the mean over {len(segs.input_ids)} segments "
        f"of at most {config['max_tokens']} tokens (of {segs.documents} documents the text gave, evenly spaced), "
        "each segment analysed on its own; labels are decided on those means.",
        "Chance levels: every score is also computed for uniform attention under the model's mask "
        f"({'causal: 1/(i+1) on row i' if causal else 'bidirectional: 1/n on every key'}) on the same inputs, "
        "argmax scores with ties split at random; a head is only evidence of a pattern where its score stands "
        "well above that level (the criteria table and heads.json \"chance\" give it beside each threshold).",
        "Which thresholds come from the papers: Clark et al.'s three are the constants of their code and Voita "
        f"et al.'s positional {POSITIONAL_FRACTION:g} is their text; Kovaleva et al.'s {PATTERN_THRESHOLD:g} and "
        f"{MIX_SHARE:g} (they labelled by hand and trained a CNN) and Voita's rare-token {RARE_TOKEN_FRACTION:g} "
        "(the paper gives no number) are attnlab's choices.",
        "Voita's rare-token role uses token frequencies counted in the analysed segments themselves "
        "(the paper used its training corpus), so 'rare' means rarest in this text.",
        f"The {TEXT_SCORES} (text prev, dup, ind) are previous-token, duplicate-token and induction scores in "
        "attnlab's convention (the attention on the pattern over the rows that have a target, so a perfect head "
        "scores 1) on the natural text, where repeated tokens are few: descriptive only, and not TransformerLens' "
        "numbers, which the TL columns give.",
    ]


def _repeated_notes(config: dict, prompts: RepeatedPrompts | None, repeated: RepeatedInfo | None,
                    causal: bool) -> list[str]:
    """What TransformerLens' scores on the repeated random tokens are, or why they are absent."""
    if prompts is None:
        return [f"--max-tokens {config['max_tokens']} leaves no room for a repeated random token, so the "
                f"{TL_REPEATED} scores are not computed (NaN)."]
    n, s_ = prompts.length, prompts.half
    perfect, c = prompts.perfect(), repeated.chance
    notes = [
        f"{TL_REPEATED}: TransformerLens' detect_head definitions (\"mul\", no exclusions, its lower-triangular "
        f"patterns) on {repeated.prompts} prompts {' '.join(repeated.prefix)} r r "
        f"{' '.join(repeated.suffix)}, r = {s_} distinct random tokens (n = {n}), averaged over the prompts "
        f"as detect_head averages a list. Every row counts, so a perfect head scores "
        f"{perfect.previous_token:.3f} = (n-1)/n (previous-token) and {perfect.induction:.3f} = s/n "
        f"(duplicate-token, induction); uniform attention scores "
        + ", ".join(f"{v:.3f}" for v in (c.previous_token, c.duplicate_token, c.induction))
        + ". The TL induction column is this "
        f"detect_head score (a perfect head ~{perfect.induction:.2f}, not 1). Beside it, the {STRIPE} score: the "
        "mean attention on i -> i - s + 1 over the second copy's rows, the token after the earlier copy, where a "
        f"perfect induction head scores 1 and uniform attention {c.induction_stripe:.3f}."]
    if not causal:
        notes.append("This model is bidirectional; TransformerLens' head detector asserts lower-triangular "
                     "patterns (it scores decoder models only), so here each of its scores is the share of all "
                     "attention, later keys included, that lands on the earlier target: attention from the "
                     "first copy forward to the second, the same pairs read the other way, counts against "
                     "the head.")
    return notes


def _input_notes(segs: Segments, specials: dict, chance: ChanceLevels) -> list[str]:
    """What the analysed inputs lack or how they were cut: special tokens, sentence pairs, long sentences."""
    present = {k: any(specials[k] in t for t in segs.tokens) if specials[k] else False for k in ("[CLS]", "[SEP]")}
    notes = []
    if segs.bos is not None:
        notes.append(f"Every segment starts with the model's BOS token {segs.bos} (its tokenizer does not add it; "
                     "prepended as TransformerLens' to_tokens does), so the attention on the first token (the sink) "
                     "is measured as the model sees a text.")
    for k, ok in present.items():
        if not ok:
            notes.append(f"The analysed text holds no {k} token of this tokenizer ({specials[k] or 'it has none'}): "
                         f"attention to {k} is 0 and no head can be special:{k}."
                         + (" Kovaleva's vertical columns fall back to each map's most attended column."
                            if k == "[CLS]" and not present["[SEP]"] else ""))
    if segs.pairs:
        block = chance.kovaleva_scores.block
        if math.isfinite(block):
            notes.append(f"Kovaleva's block fit of uniform attention (its chance level) is {block:.2f} on these "
                         f"segments (sentences A and B are about equal halves), against the threshold "
                         f"{PATTERN_THRESHOLD:g}, so a block label is weak evidence of attention bound to its sentence.")
    if segs.cut_sentences:
        notes.append(f"{segs.cut_sentences} sentence(s) of the text are longer than a segment; a segment "
                     "holding one is cut at --max-tokens.")
    if not segs.pairs:
        notes.append("Inputs are single sequences (no sentence pairs for this model), so Kovaleva's block pattern "
                     "is undefined (NaN) and never assigned.")
    return notes


def _evidence_notes(pm: PretrainedModel, chance: ChanceLevels, causal: bool, n_heads: int, n_kv: int
                    ) -> list[str]:
    """How the evidence beside the patterns is measured: sinks, copying scores, grouped-query heads."""
    notes = [
        f"Attention sinks: the mean weight on the first token is compared with uniform attention under the model's "
        f"mask ({chance.sink:.3f} here: "
        + ("mean_i 1/(i+1), the causal baseline" if causal else "1/n, the bidirectional baseline")
        + "); the value-weighted share (Kobayashi et al. 2020) is the share of the vector norm a query receives "
        "from the first token, ||a_i1 v_1 W_O|| / sum_j ||a_ij v_j W_O||: a head that rests on a first token "
        "with a small value vector moves little from it.",
        "Copying score (Elhage et al. 2021): sum lambda / sum |lambda| over the eigenvalues of the full OV "
        "circuit W_E diag(gamma_1) W_V W_O diag(gamma_f) W_U, computed from its d_v x d_v equivalent; 1 for "
        "a head that copies the attended token to the output, -1 for one that suppresses it."
        + ("" if getattr(pm.model, "lm_head", "none") != "none" else
           " This model has no output head, so W_U is W_E's transpose (a tied readout)."),
    ]
    if n_kv != n_heads:
        group = n_heads // n_kv
        notes.append(f"Grouped-query attention: {n_heads} query heads share {n_kv} key/value heads per layer; "
                     f"heads h of one group (kv_head = h // {group}) read the same keys and values.")
    return notes


def _ablation_notes(pm: PretrainedModel, ablations: Ablations | None, ablation: AblationInfo | None,
                    induction: Ablations | None) -> list[str]:
    """How the head ablations and the induction heads' ablations were measured, or why there are none."""
    notes = []
    if ablations is not None:
        err = ablation.estimate_error
        notes.append(
            f"Ablations: the change in next-token loss (nats per token) when a head's output z_h = P_h V_h (its "
            f"blocks.l.attn.hook_z) is set to zero, to its mean over every segment and position, or to the next "
            f"segment's (resample), on {ablations.segments} segments of their first {ablations.tokens} tokens (clean "
            f"loss {ablation.base_loss:.3f}); 95% Student-t intervals over segments. Every value shown as an "
            "ablation effect (tables, headline, ablations.png, the viewer) is exact: a hooked forward with that "
            "head's z replaced, re-run from its layer; "
            + (f"the {len(ablation.exact_heads)} heads with the largest first-order estimate (attribution "
               "patching, one backward pass) were re-run, so a head the estimate ranks low is not among them"
               if ablation.mode == "top" else "every head was re-run")
            + ". The estimates are a screening number only, in heads.json under \"ablation_estimate\" and in the "
            "report in columns marked ≈; on the re-run heads they were off by at most "
            + ", ".join(f"{e.max_abs_error:.3f} ({k}; median {e.median_abs_error:.3f}, "
                        f"{e.sign_disagreements} of {e.heads} with the other sign)" for k, e in err.items())
            + ". A positive change means the head helps predict the text.")
    if induction is not None:
        notes.append(
            f"Induction, causally: the {len(induction.heads)} heads with the highest TransformerLens induction "
            f"scores are zero-, mean- and resample-ablated on the {induction.segments} repeated-random-token prompts, "
            f"and the change in loss is taken on the second copy only ({induction.tokens} predictions per prompt that "
            f"only copying from the first copy can make; clean loss {induction.base_loss.mean().item():.3f} nats), "
            "with 95% intervals over prompts.")
    if getattr(pm.model, "lm_head", "none") == "none":
        notes.append("No ablations: this model has no output head, so there is no next-token loss to measure.")
    return notes
