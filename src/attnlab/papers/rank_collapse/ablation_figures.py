"""The figures and tables of rank-collapse.ablations: the relative residual per layer of every network and
ablation (:class:`~attnlab.papers.rank_collapse.ablation_curves.Measured`) under Dong et al.'s surgery and
attnlab's switches, the three residuals of the short sequences, MiniLM beside SmolLM2 at the same relative
depth, random-init BERT-base beside Dong et al.'s BERT, and Dong et al.'s figures beside MiniLM's numbers.
"""

from __future__ import annotations

from attnlab.papers.rank_collapse import dong_figures
from attnlab.papers.rank_collapse.ablation_curves import KINDS, SMOLLM2_LAYERS, BERT_VARIANTS, BertBaseRuns, Measured
from attnlab.papers.rank_collapse.ablation_rows import COLLAPSED, REFERENCE, at_depth, first_below, fmt
from attnlab.papers.rank_collapse.stacks import DONG_VARIANTS, MINILM_MODELS, VARIANTS
from attnlab.results import PALETTE, Figure, Table, line_figure, series

_INIT = dong_figures.BERT_INIT  # Dong et al.'s BERT at initialization, read from their vector figure

MODEL_TEXT = {"pretrained": "pretrained all-MiniLM-L6-v2 (6 layers)",
              "random": "MiniLM architecture, BERT random init N(0, 0.02^2) (6 layers)",
              "attnlab-12": "attnlab stack, 12 layers, init N(0, 1/fan_in), on MiniLM's embeddings",
              "smollm2": "pretrained SmolLM2-135M-Instruct (causal, pre-RMSNorm, 30 layers)"}

_COLORS = {v: c for v, c in zip(VARIANTS, (PALETTE[0], PALETTE[1], PALETTE[2], PALETTE[3], PALETTE[6]))}
_DONG_COLORS = {"SAN": PALETTE[3], "SAN+skip": PALETTE[1], "SAN+MLP": PALETTE[2], "transformer": PALETTE[6]}


def ablation_figures(data: Measured, composite_texts: int, composite_tokens: int) -> list[Figure]:
    """Per network and residual kind the curves of both surgeries; Dong et al.'s linear axis; MiniLM beside
    SmolLM2; BERT-base's draws; the three residuals of the ``composite_texts`` short texts of
    ``composite_tokens`` tokens."""
    figs = []
    refs = {"pretrained": "Dong et al. (pretrained, l=12, SAN+skip / transformer): BERT 0.07 / 0.31, ALBERT 0 / 0.56, "
                          "XLNet 0.10 / 0.52; SAN ~0 by l=5-9.",
            "random": "Dong et al. (random init): layer 0 0.60-1.0; SAN 0.02 at l=1 (BERT), 0 from l=2; "
                      "l=12 SAN+skip / transformer: BERT 0.45 / 0.35, ALBERT 0.26 / 0.26, XLNet 0.93 / 0.73.",
            "attnlab-12": "Dong et al. (random init, 12 layers): SAN 0 from l=2; SAN+skip 0.26-0.93 and "
                          "transformer 0.26-0.73 at l=12 (BERT init is N(0, 0.02^2), attnlab's N(0, 1/fan_in)).",
            "smollm2": "SmolLM2 is a causal pre-norm decoder: Dong et al.'s surgery translated (SAN z = MHA(N_1(x)), "
                       "SAN+skip z = x + MHA(N_1(x)), SAN+MLP u = MHA(N_1(x)), z = u + FFN(N_2(u))); states before "
                       "the final RMSNorm, residual over the n tokens as they are; a curve stops before a state that "
                       "overflows float64 (attnlab's switches without any norm). Dong et al. (pretrained, 12 layers, "
                       "l=12): SAN+skip / transformer 0.07 / 0.31 (BERT)."}
    whats = {"mean": "token-mean residual X - 1 mean^T (Dong et al.'s measure), in ||.||_{1,inf}",
             "svd": "rank-one SVD residual X - sigma_1 u_1 v_1^T, in ||.||_{1,inf}",
             "two": "the notes' residual (2-norm argmin = token mean) in the notes' 2-norm, ||res X||_2 / ||X||_2"}
    for m, by_variant in data.curves.items():
        texts, tokens = data.sizes(m)
        for kind in KINDS:
            lines = []
            for v, c in data.dong[m].items():
                ys = c.curve(kind).mean
                lines.append(series(f"Dong: {v}", list(range(len(ys))), [max(y, 1e-17) for y in ys],
                                    color=_DONG_COLORS[v], style="dashed", marker=False))
            for v, c in by_variant.items():
                ys = c.curve(kind).mean
                lines.append(series(v, list(range(len(ys))), [max(y, 1e-17) for y in ys], color=_COLORS[v]))
            figs.append(line_figure(
                f"ablation-{m}-{kind}.png",
                f"{MODEL_TEXT[m]}: relative residual per layer, residual = {whats[kind]}; mean over "
                f"{texts} texts of {tokens} tokens (pydoc help topics). Dashed: Dong et al.'s "
                "surgery (LayerNorm kept in every variant; their SAN is attnlab's SAN+LN, so the two coincide), "
                "without markers; solid with markers: attnlab's switches (each part off unless named). Layer 0 "
                "is the embedding output. Values at ~1e-16 are float64 rounding (a collapsed state). "
                f"{refs[m]}",
                series=lines, xlabel="layer l", ylabel="relative residual", yscale="log",
                title=f"{m}: {kind} residual"))
    styles = ("solid", "dashed", "dotted")
    minilm_dong = {m: c for m, c in data.dong.items() if m in MINILM_MODELS}
    dong = [series(f"{m}: {v}", list(range(len(c.by_layer))), c.by_layer, color=_DONG_COLORS[v],
                   style=styles[i % 3])
            for i, (m, by_variant) in enumerate(minilm_dong.items()) for v, c in by_variant.items()]
    figs.insert(0, line_figure(
        "ablation-linear-scale.png",
        "As Dong et al. draw it (linear axis, their surgery: LayerNorm kept in every variant): relative residual "
        "per layer, residual = token-mean residual X - 1 mean^T, for every network ("
        + ", ".join(f"{m} {st}" for m, st in zip(minilm_dong, styles))
        + "). MiniLM has 6 layers, their models 12: compare MiniLM's l with their 2l. Dong et al. at l=12: "
        "pretrained SAN+skip / transformer 0.07 / 0.31 (BERT), 0 / 0.56 (ALBERT), 0.10 / 0.52 (XLNet); random "
        "init 0.45 / 0.35, 0.26 / 0.26, 0.93 / 0.73.",
        series=dong, xlabel="layer l", ylabel="relative residual", title="Dong et al.'s surgery, linear axis"))
    if "smollm2" in data.dong and "pretrained" in data.dong:
        lines = []
        for m, style, L in (("pretrained", "solid", None), ("smollm2", "dashed", SMOLLM2_LAYERS)):
            for v, c in data.dong[m].items():
                ys = c.by_layer
                depth = L if L is not None else len(ys) - 1
                lines.append(series(f"{'MiniLM' if m == 'pretrained' else 'SmolLM2'}: {v}",
                                    [l / depth for l in range(len(ys))], [max(y, 1e-17) for y in ys],
                                    color=_DONG_COLORS[v], style=style, marker=m == "pretrained"))
        figs.append(line_figure(
            "ablation-minilm-vs-smollm2.png",
            "Relative residual (token mean, ||.||_{1,inf}) against relative depth l/L under Dong et al.'s surgery "
            "(norm kept in every variant): pretrained all-MiniLM-L6-v2 (post-LN encoder, L = 6, solid with markers, "
            f"{data.texts} texts of {data.tokens} tokens) and SmolLM2-135M-Instruct (causal pre-RMSNorm decoder, "
            f"L = 30, dashed, {data.smollm2_texts} texts of {data.smollm2_tokens} tokens, its own "
            "tokens of the same help topics), surgery translated to pre-norm (SAN z = MHA(N_1(x)), SAN+skip "
            "z = x + MHA(N_1(x)), SAN+MLP u = MHA(N_1(x)), z = u + FFN(N_2(u))). SmolLM2's states are un-normalised "
            "pre-norm streams, MiniLM's LayerNorm outputs; neither model is Dong et al.'s.",
            series=lines, xlabel="relative depth l/L", ylabel="relative residual", yscale="log",
            title="MiniLM and SmolLM2, Dong et al.'s surgery"))
    if data.bert is not None:
        figs.extend(bert_figures(data.bert))
    comp = {m: vs for m, vs in data.composite.items() if vs}
    if comp:
        lines, kstyle = [], {"mean": "solid", "composite": "dashed", "svd": "dotted"}
        for m, vs in comp.items():
            for v, kinds in vs.items():
                for kind, ys in kinds.items():
                    lines.append(series(f"{m} {v}: {kind}", list(range(len(ys))), [max(y, 1e-17) for y in ys],
                                        style=kstyle[kind], color=_COLORS[v]))
        figs.append(line_figure(
            "ablation-three-residuals.png",
            f"Three residuals on the same states ({composite_texts} text(s) of {composite_tokens} tokens), "
            "all in ||.||_{1,inf}: solid = token mean (Dong et al.'s code, and the notes' 2-norm argmin), dashed = "
            "exact composite-norm argmin over shifts 1 x^T (a linear program per matrix), dotted = rank-one SVD. "
            "The composite residual is never above the mean one; the SVD residual is not of the form X - 1 x^T "
            "and can be smaller than both.",
            series=lines, xlabel="layer l", ylabel="relative residual", yscale="log",
            title="Three residual definitions"))
    return figs


def bert_figures(Bb: BertBaseRuns) -> list[Figure]:
    """Per input, BERT-base's curves per draw (solid) beside Dong et al.'s BERT at initialization (dashed), on
    their linear axis."""
    figs = []
    styles = ("solid", "dotted", "dashdot")
    for kind, variants in BERT_VARIANTS.items():
        lines = [series(f"Dong et al.: {v}", list(range(13)), list(_INIT[v].mean), color=_DONG_COLORS[v],
                        style="dashed", marker=False) for v in DONG_VARIANTS if v in variants]
        for v in variants:
            color = _DONG_COLORS.get(v, PALETTE[0])
            for i, (s, c) in enumerate(zip(Bb.seeds, Bb.curves[kind][v])):
                lines.append(series(f"{v}, seed {s}", list(range(len(c.mean))), c.mean, color=color,
                                    style=styles[i % 3], marker=False))
        name = "text" if kind == "text" else "random-ids"
        figs.append(line_figure(
            f"ablation-bert-base-{name}.png",
            f"Random-init BERT-base (transformers.BertConfig(): 12 layers, 12 heads, d = 768; transformers' own "
            f"initialisation, N(0, 0.02^2); float32) on {Bb.texts} "
            + ("help topics" if kind == "text" else "sequences of uniform random token ids (no text)")
            + f" of {Bb.tokens} tokens: relative residual (token mean, ||.||_{{1,inf}}) per layer, mean over the texts, "
            f"one line per draw (seeds {', '.join(map(str, Bb.seeds))}), under Dong et al.'s surgery (LayerNorm kept)"
            + (" and the notes' SAN (every part off)" if kind == "text" else "")
            + ". Dashed: Dong et al.'s BERT at initialization (32 wiki_bio sequences of 128 tokens), read from their "
            "vector figure. Layer l against layer l.",
            series=lines, xlabel="layer l", ylabel="relative residual",
            title=f"BERT-base at random init, {kind}"))
    return figs


def ablation_tables(data: Measured) -> list[Table]:
    """Dong et al.'s figures beside MiniLM, every curve at layers 0, 1, 2, 3, 6, 12, MiniLM beside SmolLM2 at
    matched relative depth, and BERT-base's draws."""
    rows = []
    for surgery, table in (("Dong et al. (LN kept)", data.dong), ("attnlab (each part off unless named)",
                                                                  data.curves)):
        for m, by_variant in table.items():
            for v, c in by_variant.items():
                for kind in KINDS:
                    ys = c.curve(kind).mean
                    rows.append([surgery, m, v, kind, *(ys[l] if l < len(ys) else None for l in (0, 1, 2, 3, 6, 12))])
    curves = Table("Relative residual at layers 0, 1, 2, 3, 6, 12 (mean over texts); residual 'two' is the notes' "
                   "2-norm ratio ||res X||_2 / ||X||_2, the others ||res X||_{1,inf} / ||X||_{1,inf}",
                   ["surgery", "network", "ablation", "residual", "l=0", "l=1", "l=2", "l=3", "l=6", "l=12"],
                   rows, ["text"] * 4 + ["float"] * 6)
    G = data.dong
    ours = {}
    if "random" in G:
        r = lambda v: G["random"][v].by_layer  # noqa: E731
        ours |= {"random_layer0": fmt(r("SAN")[0]), "random_san_l1": fmt(r("SAN")[1]),
                 "random_san_l2": fmt(r("SAN")[2]),
                 "random_skip_full_last": f"l=6: {r('SAN+skip')[-1]:.3f} / {r('transformer')[-1]:.3f}"}
    if "pretrained" in G:
        p = lambda v: G["pretrained"][v].by_layer  # noqa: E731
        ours |= {"pretrained_layer0": fmt(p("SAN")[0]),
                 "pretrained_san_collapse": f"< {COLLAPSED:g} from l = {first_below(p('SAN'), COLLAPSED)}; "
                                            f"{fmt(p('SAN')[3])} at l=3",
                 "pretrained_mlp_collapse": f"< {COLLAPSED:g} from l = {first_below(p('SAN+MLP'), COLLAPSED)}",
                 "pretrained_skip_full_last": f"l=6: {p('SAN+skip')[-1]:.3f} / {p('transformer')[-1]:.3f}"}
    ref = Table("Dong et al.'s figures (BERT-base / ALBERT-base / XLNet-base, 12 layers, wiki_bio, token-mean "
                "residual, LayerNorm kept in every ablation) beside all-MiniLM-L6-v2 under the same surgery (6 "
                "layers, pydoc text: its l = 6 is their l = 12)", ["quantity", "Dong et al.", "MiniLM, same surgery"],
                [[k.replace("_", " "), v, ours.get(k, "-")] for k, v in REFERENCE.items()], ["text"] * 3)
    tables = [ref, curves]
    if "smollm2" in G:
        fracs = [k / 6 for k in range(7)]
        depth_rows = []
        for surgery, table in (("Dong et al. (norm kept)", G), ("attnlab (each part off unless named)",
                                                                data.curves)):
            for m, L in (("pretrained", 6), ("smollm2", SMOLLM2_LAYERS)):
                for v, c in table.get(m, {}).items():
                    ys = c.by_layer
                    depth_rows.append([surgery, "MiniLM" if m == "pretrained" else "SmolLM2", v,
                                       *(at_depth(ys, f, L) for f in fracs)])
        tables.append(Table("Relative residual (token mean, ||.||_{1,inf}) at matched relative depth l/L: MiniLM's "
                            "layer k beside SmolLM2's layer 5k (empty: a layer not run, or past a float64 overflow)",
                            ["surgery", "model", "ablation", *(f"l/L={k}/6" for k in range(7))],
                            depth_rows, ["text"] * 3 + ["float"] * 7))
    if data.bert is not None:
        tables.append(bert_table(data.bert))
    return tables  # the errata table is the report's own (results.json "errata")


BERT_TABLE_LAYERS = (0, 1, 2, 3, 6, 9, 12)


def bert_table(Bb: BertBaseRuns) -> Table:
    """BERT-base's r(X_l) per input, variant and draw beside Dong et al.'s curve (one row each)."""
    rows = [["Dong et al. (wiki_bio, 32 x 128)", v, "their draw", *(_INIT[v].mean[l] for l in BERT_TABLE_LAYERS)]
            for v in DONG_VARIANTS]
    for kind, variants in BERT_VARIANTS.items():
        for v in variants:
            for s, c in zip(Bb.seeds, Bb.curves[kind][v]):
                rows.append([kind, v, str(s), *(c.mean[l] if l < len(c.mean) else None for l in BERT_TABLE_LAYERS)])
    return Table(f"Random-init BERT-base (transformers.BertConfig(), transformers' initialisation, float32) under Dong et "
                 f"al.'s surgery (LayerNorm kept) and the notes' SAN (every part off), one row per draw (seed), on "
                 f"{Bb.texts} texts of {Bb.tokens} tokens: relative residual (token mean, ||.||_{{1,inf}}), mean over "
                 "the texts, beside Dong et al.'s BERT at initialization (read from their vector figure); empty: a "
                 "layer not run", ["input", "variant", "draw", *(f"l={l}" for l in BERT_TABLE_LAYERS)], rows,
                 ["text"] * 3 + ["float"] * len(BERT_TABLE_LAYERS))
