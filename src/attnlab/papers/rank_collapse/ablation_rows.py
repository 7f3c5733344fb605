"""The summary rows and deviations of rank-collapse.ablations: the notes' collapse of pure attention and Dong
et al.'s statements and numbers beside what was measured
(:class:`~attnlab.papers.rank_collapse.ablation_curves.Measured`).

Whose statements: the notes (§2.2) state that pure attention loses rank (:func:`san_collapse_row`, a row of
the text, decided with its control, the notes' own SAN). Everything else is Dong et al.'s, which the notes do
not state or print: attnlab's own statements (role own), holds / refuted, or inconclusive where MiniLM and
SmolLM2 stand beside BERT (another model). Random-init BERT-base is set beside Dong et al.'s BERT at
initialization layer l against layer l, decided by the majority of draws, with random token ids as the
control of the text (:func:`bert_summary`). Reference numbers: :data:`REFERENCE`.
"""

from __future__ import annotations

import math
from dataclasses import replace

from attnlab.checks import NO_ERROR, Bound, Check, above, across_seeds, below, compare, info
from attnlab.deviations import Deviation
from attnlab.papers.rank_collapse import bert_base, dong_figures
from attnlab.papers.rank_collapse.ablation_curves import SMOLLM2_LAYERS, BertBaseRuns, LayerCurves, Measured
from attnlab.papers.rank_collapse.stacks import DONG_VARIANTS, MINILM_MODELS, VARIANTS

SAN_COLLAPSE = "rank-collapse.san-collapse"  # the notes: ||res(SAN(X))||_{1,inf} -> 0 as L -> infinity
COLLAPSED = 1e-2  # "collapsed": relative residual below this (Dong et al.'s curves reach ~0)
ANOTHER_DECODER = ("another model: SmolLM2-135M-Instruct (causal decoder, pre-RMSNorm, RoPE, 30 layers, 576 wide, "
                   "pydoc text) against Dong et al.'s post-LN encoders (BERT, ALBERT, XLNet-base, 12 layers, "
                   "wiki_bio), "
                   "their LayerNorm-kept surgery translated to a pre-norm block")

FIGURE_TOL = 0.05
"""A value of Dong et al.'s figures, to 0.05 on its 0-1 axis: the precision a reader takes from the figure
(the values themselves are read from their vector file to ~1e-8, :mod:`~attnlab.papers.rank_collapse.dong_figures`),
more than three times the spread of their own four random draws at X_0 (0.597 to 0.612)."""
WHERE = "Dong et al. (2021) Figs. 2-4 (the notes' source, §2.2)"
ANOTHER_MODEL = ("another model: all-MiniLM-L6-v2 (6 layers, 384 wide, pydoc text) at layer {l} of 6 against "
                 "BERT-base-cased (12 layers, 768 wide, wiki_bio) at layer {L} of 12, the same relative depth")

# Dong et al. (2021), paper-plotting/figures/residual_*_vert_croped.pdf (12 layers): BERT's numbers read from the
# vector file (dong_figures), ALBERT's and XLNet's read off the figures by eye.
_INIT, _PRE = dong_figures.BERT_INIT, dong_figures.BERT_PRETRAINED
REFERENCE = {
    "random_layer0": f"BERT {dong_figures.init_layer0():.3f} (their four draws: "
                     + " / ".join(f"{c.mean[0]:.3f}" for c in _INIT.values()) + "), ALBERT 0.60-0.65, XLNet 1.0",
    "random_san_l1": f"BERT {_INIT['SAN'].mean[1]:.4f}, ALBERT 0, XLNet 0",
    "random_san_l2": f"0 from l=2 (all three; BERT {_INIT['SAN'].mean[2]:.1e}, float32 rounding 1.9e-7 from l=3)",
    "random_skip_full_last": f"l=12, SAN+skip / transformer: BERT {_INIT['SAN+skip'].mean[12]:.3f} / "
                             f"{_INIT['transformer'].mean[12]:.3f}, ALBERT 0.26 / 0.26, XLNet 0.93 / 0.73",
    "pretrained_layer0": f"BERT {_PRE['SAN'].mean[0]:.3f}, ALBERT 0.90, XLNet 0.71",
    "pretrained_san_collapse": f"~0 by l = 5 (BERT), 6 (ALBERT), 9 (XLNet); BERT {_PRE['SAN'].mean[3]:.3f} at l=3, "
                               f"{_PRE['SAN'].mean[5]:.4f} at l=5",
    "pretrained_mlp_collapse": "~0 by l = 4 (BERT), 5 (ALBERT), 5 (XLNet)",
    "pretrained_skip_full_last": f"l=12, SAN+skip / transformer: BERT {_PRE['SAN+skip'].mean[12]:.3f} / "
                                 f"{_PRE['transformer'].mean[12]:.3f}, ALBERT 0 / 0.56, XLNet 0.10 / 0.52",
}


def first_below(ys: list[float], level: float) -> int | None:
    """The first layer l with ys[l] < level (None: none)."""
    return next((l for l, y in enumerate(ys) if y < level), None)


def fmt(x: float) -> str:
    """A relative residual as the rows print it: two significant digits below 1e-3, else three decimals."""
    return f"{x:.2g}" if x < 1e-3 else f"{x:.3f}"


def layers_text(ys: list[float]) -> str:
    """A curve as the rows print it: its values per layer, :func:`fmt` each, comma-separated."""
    return ", ".join(fmt(y) for y in ys)


def ablation_summary(data: Measured) -> list[Check]:
    """Every summary row of the run: the notes' statement, Dong et al.'s (attnlab's own), their numbers beside
    BERT-base's, MiniLM's and SmolLM2's, attnlab-12 described, and two sanity rows."""
    C, G, Bb = data.curves, data.dong, data.bert
    out: list[Check] = []
    minilm_devs = minilm_deviations(data.texts, data.tokens)

    def last(table, m, v):
        return table[m][v].last

    def bert_last(variant):  # BERT-base's last-layer value on the text, per draw, by name
        return {} if Bb is None else {f"bert-base seed {s}": y for s, y in zip(Bb.seeds, Bb.at("text", variant, -1))}

    def bert_text(variant):
        return "" if Bb is None else f"; BERT-base at random init, per draw: {layers_text(list(bert_last(variant).values()))}"

    # -- the notes' statement (§2.2): pure attention loses rank, a row of the text -----------
    M = [m for m in G if m in MINILM_MODELS]  # MiniLM's architecture and attnlab's stack
    if M or Bb is not None:
        out.append(san_collapse_row(data))
    # -- Dong et al.'s statements that do not depend on the model: attnlab's own --------------
    if M or Bb is not None:
        mlp = {m: last(G, m, "SAN+MLP") for m in M} | bert_last("SAN+MLP")
        out.append(below(max(mlp.values()), COLLAPSED,
                         quantity="an MLP without the attention skip does not stop the collapse: largest SAN+MLP "
                                  "relative residual at the last layer, Dong et al.'s surgery, over networks",
                         paper_value="SAN+MLP ~0 by l = 4 (BERT), 5 (ALBERT, XLNet), pretrained; from l = 2 at "
                                     "random init (BERT 8.8e-7 at l = 2)",
                         where=WHERE, role="own",
                         detail="; ".join(f"{m}: {layers_text(G[m]['SAN+MLP'].by_layer)}" for m in M) + bert_text("SAN+MLP")
                                + "; attnlab's SAN+MLP (no LayerNorm, no FFN skip): "
                                + ", ".join(f"{m} {fmt(last(C, m, 'SAN+MLP'))}" for m in M),
                         values={"dong_mlp_last": mlp, "attnlab_mlp_last": {m: last(C, m, "SAN+MLP") for m in M}}))
    mini = [m for m in ("pretrained", "random") if m in G]
    if mini or Bb is not None:
        skip = {m: last(G, m, "SAN+skip") for m in mini} | bert_last("SAN+skip")
        out.append(above(min(skip.values()), COLLAPSED,
                         quantity="skip connections stop the collapse: smallest SAN+skip relative residual at the last "
                                  "layer, Dong et al.'s surgery, MiniLM's architecture (pretrained, random init) and "
                                  "BERT-base at random init",
                         paper_value=f"l=12 SAN+skip: {_INIT['SAN+skip'].mean[12]:.3f} / 0.26 / 0.93 (random init), "
                                     f"{_PRE['SAN+skip'].mean[12]:.3f} / 0 / 0.10 (pretrained BERT / ALBERT / XLNet)",
                         where=WHERE, role="own",
                         detail="; ".join(f"{m}: {layers_text(G[m]['SAN+skip'].by_layer)}" for m in mini)
                                + bert_text("SAN+skip") + "; LayerNorm off (attnlab's SAN+skip): "
                                + ", ".join(f"{m} {fmt(last(C, m, 'SAN+skip'))}" for m in mini),
                         values={"dong_skip_last": skip}))
    # -- Dong et al.'s numbers at initialisation, like for like: BERT-base, layer l against layer l
    if Bb is not None:
        out.extend(bert_summary(Bb))

    # -- Dong et al.'s numbers beside MiniLM's at the same relative depth: another model -------
    def beside(quantity, model, variant, layer_minilm, layer_bert, ref_value, ref_text):
        ys = G[model][variant].by_layer
        l = min(layer_minilm, len(ys) - 1)
        return compare(quantity, ys[l], "±", ref_value, tolerance=FIGURE_TOL, paper_value=ref_text, where=WHERE,
                       cannot_decide=ANOTHER_MODEL.format(l=l, L=layer_bert), role="own", deviations=minilm_devs,
                       detail=f"MiniLM per layer: {layers_text(ys)}"
                              + ("" if variant == "transformer" else f"; attnlab's {variant} (LayerNorm off): "
                                 f"{layers_text(C[model][variant].by_layer)}"),
                       values={"minilm_by_layer": ys, "minilm_layer": l, "bert_layer": layer_bert})

    for m, ref in (("pretrained", {"l0": (_PRE["SAN"].mean[0], REFERENCE["pretrained_layer0"]),
                                   "skip": (_PRE["SAN+skip"].mean[12], REFERENCE["pretrained_skip_full_last"]),
                                   "full": (_PRE["transformer"].mean[12], REFERENCE["pretrained_skip_full_last"])}),
                   ("random", {"l0": (dong_figures.init_layer0(), REFERENCE["random_layer0"]),
                               "skip": (_INIT["SAN+skip"].mean[12], REFERENCE["random_skip_full_last"]),
                               "full": (_INIT["transformer"].mean[12], REFERENCE["random_skip_full_last"]),
                               "l2": (_INIT["SAN"].mean[2], REFERENCE["random_san_l2"])})):
        if m not in G:
            continue
        what = "pretrained" if m == "pretrained" else "random init"
        out.append(beside(f"{what}: relative residual of X_0 (embedding output), token mean, vs BERT",
                          m, "SAN", 0, 0, *ref["l0"]))
        if "l2" in ref:
            out.append(beside(f"{what}: SAN (LayerNorm kept) relative residual at layer 1 of 6 vs BERT's layer 2 of 12",
                              m, "SAN", 1, 2, *ref["l2"]))
        out.append(beside(f"{what}: SAN+skip (LayerNorm kept) relative residual at layer 6 of 6 vs BERT's 12 of 12",
                          m, "SAN+skip", 6, 12, *ref["skip"]))
        out.append(beside(f"{what}: transformer relative residual at layer 6 of 6 vs BERT's 12 of 12",
                          m, "transformer", 6, 12, *ref["full"]))
    if "pretrained" in G:
        for v, ref, bert_l in (("SAN", "pretrained_san_collapse", 5), ("SAN+MLP", "pretrained_mlp_collapse", 4)):
            ys = G["pretrained"][v].by_layer
            first = first_below(ys, COLLAPSED)
            out.append(compare(f"pretrained: relative depth l/L where the {v} (LayerNorm kept) relative residual first "
                               f"drops below {COLLAPSED:g}, vs BERT's",
                               Bound.at_least(1.0, "not below it within MiniLM's 6 layers") if first is None
                               else first / 6, "±", bert_l / 12, tolerance=1 / 12,
                               paper_value=REFERENCE[ref], where=WHERE, role="own", deviations=minilm_devs,
                               cannot_decide="another model: all-MiniLM-L6-v2 (6 layers, 384 wide, pydoc text) against "
                                             "BERT-base-cased (12 layers, 768 wide, wiki_bio), depth counted as l/L",
                               detail=f"MiniLM: l = {first} of 6; BERT: l ~ {bert_l} of 12; per layer {layers_text(ys)}",
                               values={"minilm_first_layer": first, "bert_first_layer": bert_l}))

    # -- attnlab's own network: described ------------------------------------------------------
    if "attnlab-12" in G:
        out.append(info("attnlab-12 (N(0, 1/fan_in) init, 12 layers): relative residual at l=12, Dong et al.'s "
                        "surgery, " + " / ".join(DONG_VARIANTS),
                        " / ".join(fmt(last(G, "attnlab-12", v)) for v in DONG_VARIANTS),
                        paper_value="random init, l=12: SAN 0, SAN+skip 0.26-0.93, transformer 0.26-0.73",
                        where=WHERE,
                        detail="attnlab's init is much larger than BERT's 0.02: sharper attention, so the skip-only "
                               "and full stacks decay slowly rather than stay flat; LN off: "
                               + " / ".join(f"{v} {fmt(last(C, 'attnlab-12', v))}" for v in VARIANTS)))

    out.extend(smollm2_summary(data))

    # -- internal consistency ------------------------------------------------------------------
    out.append(compare("largest |Dong et al.'s SAN - attnlab's SAN+LN| over every hidden state (the same network "
                       "through two code paths)", data.dong_san_vs_san_ln, "<=", 1e-12, role="sanity",
                       detail="their surgery keeps LayerNorm: their SAN is z = N_1(MHA(x)), attnlab's SAN+LN"))
    if data.composite and any(data.composite.values()):
        gap = data.composite_minus_mean
        out.append(compare("max over states of (composite - mean residual) / ||X_l||_{1,inf}", gap, "<=", 1e-8,
                           role="sanity", detail="the row mean is a feasible shift, so the exact composite argmin is "
                                                 "never worse (LP tolerances ~1e-9)"))
    return out


def san_collapse_row(data: Measured) -> Check:
    """The notes' ||res SAN(X)||_{1,inf} -> 0 (§2.2) on every network's SAN with LayerNorm kept (Dong et al.'s
    surgery: MiniLM's architecture, attnlab-12, BERT-base's draws on the text), decided with its control: the
    same networks' SAN with every part off (LayerNorm too), the notes' own SAN, giving the same verdict."""
    G, C, Bb = data.dong, data.curves, data.bert
    M = [m for m in G if m in MINILM_MODELS]
    kept = {m: G[m]["SAN"].last for m in M}
    off = {m: C[m]["SAN"].last for m in M}
    if Bb is not None:
        for s, k, o in zip(Bb.seeds, Bb.at("text", "SAN", -1), Bb.at("text", bert_base.NOTES_SAN, -1)):
            kept[f"bert-base seed {s}"], off[f"bert-base seed {s}"] = k, o
    worst, worst_off = max(kept.values()), max(off.values())
    control = (f"the notes' SAN (every part off, LayerNorm too) on the same networks and inputs, this run: largest "
               f"last-layer relative residual {fmt(worst_off)} -> {'reproduced' if worst_off < COLLAPSED else 'differs'}")
    per = [f"{m}: {layers_text(G[m]['SAN'].by_layer)}" for m in M]
    if Bb is not None:
        per.append("BERT-base at random init, l = 12 per draw: " + layers_text(Bb.at("text", "SAN", -1)))
    return below(worst, COLLAPSED,
                 quantity="pure attention loses rank: largest relative residual (token mean) at the last layer of the "
                          "SAN, LayerNorm kept (Dong et al.'s surgery), over networks",
                 paper_value="||res SAN(X)|| -> 0; ~0 from l = 2 (random init), l = 5-9 (pretrained)",
                 where=f"§2.2; {WHERE}", anchor=SAN_COLLAPSE, erratum=NO_ERROR,
                 falsifier="a network whose SAN (LayerNorm kept) ends with relative residual >= 0.01, its control (the "
                           "notes' SAN, LayerNorm off) agreeing",
                 deviations=("layernorm-kept",),
                 detail="; ".join(per) + "; every part off (the notes' SAN), last layer: "
                        + ", ".join(f"{m} {fmt(v)}" for m, v in off.items()),
                 values={"dong_san_last": kept, "attnlab_san_last": off}
                 ).with_control(control, agrees=(worst < COLLAPSED) == (worst_off < COLLAPSED))


BERT_POINTS = (  # (what, variant, layer l, Dong et al.'s r(X_l), as they show it)
    ("relative residual of X_0 (the embedding output)", "SAN", 0, dong_figures.init_layer0(),
     REFERENCE["random_layer0"]),
    ("SAN (LayerNorm kept) relative residual at layer 1 of 12", "SAN", 1, _INIT["SAN"].mean[1],
     f"{_INIT['SAN'].mean[1]:.4f} (± {_INIT['SAN'].std[1]:.4f} over their 32 sequences)"),
    ("SAN (LayerNorm kept) relative residual at layer 2 of 12", "SAN", 2, _INIT["SAN"].mean[2],
     f"0 on the figure ({_INIT['SAN'].mean[2]:.1e}; float32 rounding, 1.9e-7, from l = 3)"),
    ("SAN+skip (LayerNorm kept) relative residual at layer 12 of 12", "SAN+skip", 12, _INIT["SAN+skip"].mean[12],
     f"{_INIT['SAN+skip'].mean[12]:.4f} (± {_INIT['SAN+skip'].std[12]:.4f} over their 32 sequences)"),
    ("transformer relative residual at layer 12 of 12", "transformer", 12, _INIT["transformer"].mean[12],
     f"{_INIT['transformer'].mean[12]:.4f} (± {_INIT['transformer'].std[12]:.4f} over their 32 sequences)"),
)
"""The rows of Dong et al.'s BERT at initialization set beside BERT-base's draws, layer l against layer l."""
WHERE_INIT = f"{dong_figures.SOURCE}, 'BERT at initialization'"


def draw_value(mean: float, std: float, texts: int, ref: float) -> float | Bound:
    """One draw's r(X_l): its mean over the texts, or, with fewer texts than Dong et al.'s 32, a Bound of
    mean ± 2 standard errors (std / sqrt(texts)) where that interval straddles an edge of ref ± FIGURE_TOL:
    more texts could put it on either side, so the text count cannot decide the draw."""
    if texts >= dong_figures.SEQUENCES:
        return mean
    half = 2 * std / math.sqrt(texts)
    if any(mean - half < edge < mean + half for edge in (ref - FIGURE_TOL, ref + FIGURE_TOL)):
        return Bound(mean - half, mean + half, f"the mean over {texts} texts ± 2 standard errors straddles an edge of "
                                               f"{ref:.3g} ± {FIGURE_TOL:g}")
    return mean


def controlled(main: Check, ctrl: Check) -> Check:
    """``main`` (the row on the text) keeps a decided verdict only where ``ctrl`` (the same row on random token
    ids, an input with no text) gives the same one; otherwise it is inconclusive: the input decides it."""
    if main.verdict not in ("holds", "refuted"):
        return main
    if ctrl.verdict == main.verdict:
        return replace(main, control=f"the same row on random token ids (an input with no text), the same draws: "
                                     f"{ctrl.verdict} in {ctrl.support}; wiki_bio itself is not offline")
    other = f"{ctrl.verdict} in {ctrl.support}" if ctrl.support else f"{ctrl.verdict} ({ctrl.reason})"
    return replace(main, cannot_decide=f"the input decides it: {main.verdict} in {main.support} on pydoc text, "
                                       f"{other} on random token ids; Dong et al.'s wiki_bio is not offline")


def bert_summary(Bb: BertBaseRuns) -> list[Check]:
    """Dong et al.'s BERT at initialization against BERT-base's draws (:data:`BERT_POINTS`), one value per draw,
    decided by the majority of draws, with random token ids as the control of the text (:func:`controlled`)."""
    out = []
    short = (Bb.texts, Bb.tokens) != (dong_figures.SEQUENCES, dong_figures.TOKENS)
    devs = ("pydoc-text",) + (("bert-texts",) if short else ())
    for what, v, l, ref, shown in BERT_POINTS:
        per = {kind: [draw_value(m, sd, Bb.texts, ref) for m, sd in zip(Bb.at(kind, v, l), Bb.spread(kind, v, l))]
               for kind in bert_base.INPUTS}
        quantity = f"random-init BERT-base (BertConfig(), transformers' draw): {what}, vs Dong et al.'s BERT, same layer"
        main = across_seeds(quantity, per["text"], "±", ref, tolerance=FIGURE_TOL, role="own", paper_value=shown,
                            where=WHERE_INIT, deviations=devs,
                            detail=f"pydoc text; on random token ids: {layers_text(Bb.at('random ids', v, l))}; "
                                   f"{Bb.texts} texts of {Bb.tokens} tokens per draw, float32, draws (seeds) "
                                   f"{', '.join(map(str, Bb.seeds))}",
                            values={"layer": l, "dong": ref, "text": Bb.at("text", v, l),
                                    "random_ids": Bb.at("random ids", v, l), "seeds": list(Bb.seeds)})
        ctrl = across_seeds(quantity, per["random ids"], "±", ref, tolerance=FIGURE_TOL, role="own")
        out.append(controlled(main, ctrl))
    return out


def minilm_deviations(texts: int, tokens: int) -> tuple[str, ...]:
    """The deviations that touch the rows setting MiniLM beside Dong et al.'s BERT (:func:`deviations`), MiniLM
    measured on ``texts`` texts of ``tokens`` tokens."""
    short = (texts, tokens) != (dong_figures.SEQUENCES, dong_figures.TOKENS)
    return ("minilm-for-bert", "pydoc-text", "float64") + (("minilm-sizes",) if short else ())


def deviations(data: Measured) -> list[Deviation]:
    """How this run's protocol departs from the text's (the notes' SAN) and from Dong et al.'s (the source of the
    numbers its rows set beside), each with why and its control; only those that apply to what was measured."""
    minilm = any(m in data.dong for m in MINILM_MODELS)
    out = [Deviation("layernorm-kept", "architecture",
                     "the text row's SAN is Dong et al.'s, LayerNorm kept (z = LN_1(MHA(x))); the notes' SAN, "
                     "SA_L o ... o SA_1 (§2.1), has no LayerNorm",
                     "the row measures the networks as Dong et al., the notes' source, cut them",
                     control="attnlab's SAN, every part off (the notes' SAN), on the same networks and inputs, in "
                             "the same run"),
           Deviation("pydoc-text", "data",
                     "help topics of Python's pydoc_data.topics tokenized by all-MiniLM-L6-v2's WordPiece tokenizer "
                     "(bert-base-uncased's vocabulary, BertConfig()'s), against Dong et al.'s first 32 wiki_bio test "
                     "biographies tokenized by bert-base-cased's",
                     "wiki_bio and bert-base-cased's tokenizer are not on this machine (nothing is downloaded)",
                     control="BERT-base's rows: the same rows on uniform random token ids (an input with no text), "
                             "the same draws; a verdict that differs between the two inputs is inconclusive")]
    if minilm:
        out.append(Deviation("minilm-for-bert", "model",
                             "all-MiniLM-L6-v2 (6 layers, d = 384, a sentence-embedding distillation), pretrained and "
                             "at BERT's initialisation, and attnlab's 12-layer stack, set beside Dong et al.'s "
                             "BERT-base (12 layers, d = 768): MiniLM's layer l beside BERT's 2l",
                             "no pretrained BERT-base checkpoint is offline; MiniLM is the BERT-family checkpoint "
                             "attnlab ships",
                             control="at random initialisation, BERT-base itself (bert_seeds draws: the rows "
                                     "'random-init BERT-base'); pretrained, none offline: those rows are inconclusive"))
        if (data.texts, data.tokens) != (dong_figures.SEQUENCES, dong_figures.TOKENS):
            out.append(Deviation("minilm-sizes", "size",
                                 f"MiniLM and attnlab-12 on {data.texts} texts of {data.tokens} tokens, against Dong et "
                                 f"al.'s {dong_figures.SEQUENCES} of {dong_figures.TOKENS}",
                                 "a smaller run than the paper scale", control="--scale paper"))
    if minilm or "smollm2" in data.dong:
        out.append(Deviation("float64", "precision",
                             "MiniLM, attnlab-12 and SmolLM2 run in float64, against Dong et al.'s float32 (BERT-base "
                             "runs in float32)",
                             "a collapsed state is then seen down to ~1e-16, not float32's ~1e-7"))
    if "smollm2" in data.dong:
        out.append(Deviation("smollm2-for-bert", "model",
                             "SmolLM2-135M-Instruct (a causal pre-RMSNorm decoder, 30 layers, d = 576), Dong et al.'s "
                             "surgery translated to pre-norm blocks, set beside their BERT-base",
                             "a second pretrained model beside MiniLM, causal; no pretrained BERT-base is offline"))
    if data.bert is not None:
        out.append(Deviation("one-draw-per-variant", "model",
                             "one random draw of BERT-base per seed, cut four ways; Dong et al.'s notebook draws a new "
                             "model for each variant (their four X_0 differ: 0.597 to 0.612)",
                             "the variants of one draw then differ by the surgery alone; each variant's curve is "
                             "distributed as theirs, and every row reads one variant, so it touches no row"))
        if (data.bert.texts, data.bert.tokens) != (dong_figures.SEQUENCES, dong_figures.TOKENS):
            out.append(Deviation("bert-texts", "size",
                                 f"BERT-base on {data.bert.texts} texts of {data.bert.tokens} tokens per draw, against "
                                 f"Dong et al.'s {dong_figures.SEQUENCES} of {dong_figures.TOKENS}",
                                 "a smaller run than the paper scale: a draw's mean over 8 texts has a standard error "
                                 "of about 0.005 (their band: 0.009 to 0.015 per sequence), a tenth of the 0.05 "
                                 "tolerance",
                                 control="--scale paper; meanwhile a draw within two standard errors of the "
                                         "tolerance's edge is a bound, so the text count cannot decide a row"))
    return out


def overflow_text(c: LayerCurves) -> str:
    """Where a curve stops at an overflowing state, as a row's detail says it ("" if it does not)."""
    return "" if c.overflow is None else f" (overflow from layer {c.overflow}: entries above 1e100)"


SMOLLM2_DEVIATIONS = ("smollm2-for-bert", "pydoc-text", "float64")  # what touches SmolLM2's rows beside Dong et al.'s


def smollm2_summary(data: Measured) -> list[Check]:
    """SmolLM2's rows: the notes' collapse of pure attention and Dong et al.'s statements (attnlab's
    own) on a causal pre-norm decoder (another model: inconclusive), and its numbers beside MiniLM's
    at the same relative depth (info)."""
    out: list[Check] = []
    if "smollm2" in data.skipped:
        out.append(info("SmolLM2-135M-Instruct beside MiniLM", "skipped", where=WHERE,
                        detail=f"not measured: {data.skipped['smollm2']}"))
    if "smollm2" not in data.dong:
        return out
    S, A = data.dong["smollm2"], data.curves["smollm2"]
    L = len(S["SAN"].by_layer) - 1
    sizes = f"{data.smollm2_texts} texts of {data.smollm2_tokens} tokens, layers 0..{L} of {SMOLLM2_LAYERS}"

    def judged(variant, relation, quantity, paper_value, *, role="own", anchor="", falsifier="",
               cannot_decide=ANOTHER_DECODER, deviations=SMOLLM2_DEVIATIONS):
        ys = S[variant].by_layer
        return compare(f"SmolLM2: {quantity}", ys[-1], relation, COLLAPSED, paper_value=paper_value, where=WHERE,
                       role=role, anchor=anchor, falsifier=falsifier, cannot_decide=cannot_decide,
                       deviations=deviations,
                       detail=f"pre-norm surgery {variant}, per layer: {layers_text(ys)}{overflow_text(S[variant])}; "
                              f"{sizes}; attnlab's {variant}: {layers_text(A[variant].by_layer)}"
                              f"{overflow_text(A[variant])}",
                       values={"by_layer": ys, "attnlab_by_layer": A[variant].by_layer})

    out.append(judged("SAN", "<", f"pure attention (z = MHA(N_1(x)), norm kept) relative residual at layer {L}",
                      "||res SAN(X)|| -> 0; ~0 from l = 5-9 (pretrained BERT, ALBERT, XLNet)",
                      role="text", anchor=SAN_COLLAPSE, falsifier="SmolLM2's SAN ending with relative residual >= 0.01",
                      cannot_decide=ANOTHER_DECODER + "; the notes' SAN has no causal mask and no norm",
                      deviations=("layernorm-kept",)))
    out.append(judged("SAN+MLP", "<", f"SAN+MLP (u = MHA(N_1(x)), z = u + FFN(N_2(u))) relative residual at layer {L}",
                      REFERENCE["pretrained_mlp_collapse"]))
    out.append(judged("SAN+skip", ">", f"SAN+skip (z = x + MHA(N_1(x))) relative residual at layer {L}",
                      REFERENCE["pretrained_skip_full_last"]))
    full = S["transformer"].by_layer
    out.append(compare(f"SmolLM2: transformer relative residual at layer {L} of {SMOLLM2_LAYERS} vs BERT's 12 of 12",
                       full[-1], "±", _PRE["transformer"].mean[12], tolerance=FIGURE_TOL,
                       paper_value=REFERENCE["pretrained_skip_full_last"], deviations=SMOLLM2_DEVIATIONS,
                       where=WHERE, role="own", cannot_decide=ANOTHER_DECODER + f"; layer {L} of {SMOLLM2_LAYERS}",
                       detail=f"per layer: {layers_text(full)}; {sizes}", values={"by_layer": full}))
    out.append(info("SmolLM2: relative residual at the last layer under attnlab's switches (each part off unless "
                    "named, pre-norm), " + " / ".join(VARIANTS),
                    " / ".join(fmt(A[v].last) + overflow_text(A[v]) for v in VARIANTS),
                    paper_value="(Dong et al. keep LayerNorm in every ablation)", where=WHERE,
                    detail="without any norm the pre-norm stream is never rescaled: SAN+MLP (z = FFN(MHA(x)), SwiGLU "
                           "is quadratic in its input) overflows float64 within a few layers; a curve stops at the "
                           f"last finite state; {sizes}",
                    values={v: A[v].by_layer for v in VARIANTS}))
    if "pretrained" in data.dong:
        P = data.dong["pretrained"]
        Lm = len(P["SAN"].by_layer) - 1
        for v in DONG_VARIANTS:
            mini, smol = P[v].by_layer, S[v].by_layer
            out.append(info(f"relative residual at relative depth l/L = 1/2 and 1, Dong et al.'s surgery {v}: "
                            "MiniLM (post-LN, l = 3, 6) / SmolLM2 (pre-norm, causal, l = 15, 30)",
                            " / ".join(fmt(x) if x is not None else "-" for x in
                                       (at_depth(mini, 0.5, Lm), at_depth(smol, 0.5, SMOLLM2_LAYERS),
                                        at_depth(mini, 1.0, Lm), at_depth(smol, 1.0, SMOLLM2_LAYERS))),
                            paper_value=REFERENCE["pretrained_skip_full_last"] if v in ("SAN+skip", "transformer")
                            else REFERENCE[f"pretrained_{'san' if v == 'SAN' else 'mlp'}_collapse"],
                            where=WHERE, detail="two models, neither the text's: order l/2 MiniLM, l/2 SmolLM2, "
                                                "l MiniLM, l SmolLM2; '-' a layer not run",
                            values={"minilm": mini, "smollm2": smol}))
    return out


def at_depth(ys: list[float], frac: float, L: int) -> float | None:
    """The value at layer round(frac L) of an L-layer model (None: not run, or past an overflow)."""
    l = round(frac * L)
    return ys[l] if l < len(ys) else None
