"""The tables and figures of transformer-math.head-structure: every head's distances and criteria, the
pretrained models beside their baselines and chance levels, the training, the baselines, the thesis's
maps, and the figures like the text's Figs. 11-12 with the distance plots."""

from __future__ import annotations

from typing import Any

import numpy as np

from attnlab.analysis.heads.projection import normalized_distance
from attnlab.papers.transformer_math.head_fits import HeadFit
from attnlab.papers.transformer_math.head_structure_rows import THESIS_L1, ReportSettings, counts_text
from attnlab.papers.transformer_math.head_taxonomy import TaxonomyChance
from attnlab.papers.transformer_math.pretrained_heads import PretrainedHeads, pretrained_summary
from attnlab.papers.transformer_math.sigma_fits import FITS, Baselines
from attnlab.papers.transformer_math.thesis_maps import THESIS_SIGMA
from attnlab.papers.transformer_math.translation_model import ATTENTION_KINDS, TrainedTranslator
from attnlab.results import PALETTE, Figure, Table, bar_figure, heatmap_figure, heatmap_panel, line_figure, series

FIT_NAMES = {"sigma1": "Σ1 (I)", "shift": "best shift", "permutation": "best permutation",
             "sigma2": "Σ2 (w ≤ 3)", "sigma3": "Σ3", "sigma": "Σ (best)"}


def head_tables(rows: list[dict]) -> list[Table]:
    """Every head (its stored row, :meth:`HeadFit.to_dict`) in two tables with the same first columns: its distances to the Sigma families,
    then the other criteria (Voita et al.'s fractions, confidence; Clark and Kovaleva labels of
    pretrained heads)."""
    who = (["model", "attention", "mask", "head"], ["model", "kind", "mask", "head"], ["text", "text", "text", "int"])
    fits = (["d Sigma1", "d shift", "d perm.", "d Sigma2", "d Sigma3", "d Sigma", "per entry", "d / 2n",
             "random search", "label"],
            ["d_sigma1", "d_shift", "d_permutation", "d_sigma2", "d_sigma3", "d_sigma", "per_entry", "normalized",
             "random_search", "label"], ["float"] * 9 + ["text"])
    other = (["Sigma label", "special share", "Voita pos. (frac.)", "Voita rare (frac.)", "confidence", "mass kept",
              "Clark", "Kovaleva"],
             ["label", "special_share", "voita_offset_fraction", "voita_rare_argmax", "confidence", "mass_kept",
              "clark", "kovaleva"], ["text"] + ["float"] * 5 + ["text"] * 2)

    def table(title, part):
        keys = who[1] + part[1]
        return Table(title, who[0] + part[0], [[r.get(k, "") for k in keys] for r in rows], who[2] + part[2])

    return [table("Every head: mean L1 distance to each family over the fitted maps (crop x crop)", fits),
            # Clark and Kovaleva: pretrained models only
            table("Every head: share of attention on special tokens, Voita et al.'s positional and rare-token "
                  "argmax fractions, confidence, mass kept, and Clark et al.'s and Kovaleva et al.'s labels "
                  "(pretrained models)", other)]


def pretrained_tables(pre: list[PretrainedHeads], base: dict[str, Baselines]) -> list[Table]:
    """One row per pretrained model: its Sigma fits beside the baselines of its mask, and its
    taxonomies beside their chance levels under the same mask."""
    sums = [pretrained_summary(p, base) for p in pre]
    keys = list(FITS) + ["sigma"]
    fits = Table(
        "Pretrained models: mean d / 2n over every head for each family, beside uniform and random attention "
        "under the model's own mask (a causal head against causal baselines)",
        ["model", "mask", "layers x heads", "sentences"] + [FIT_NAMES[k] for k in keys]
        + ["uniform (mask)", "random (mask)", "heads below uniform", "heads below random", "Σ labels"],
        [[s.model, s.mask, f"{s.layers} x {s.heads_per_layer}", s.sentences,
          *(s.mean_normalized[k] for k in keys), s.uniform_sigma, s.random_sigma,
          s.closer_than_uniform, s.closer_than_random,
          counts_text({k: v for k, v in s.sigma_labels.items() if v})] for s in sums],
        ["text", "text", "text", "int"] + ["float"] * (len(keys) + 2) + ["int", "int", "text"])

    def chance(c: TaxonomyChance) -> str:
        nxt = "–" if c.voita_next is None else f"{c.voita_next:.3f}"
        return (f"entropy {c.entropy:.2f} nats, previous {c.previous:.3f}, next {c.next:.3f}; "
                f"vertical {c.kovaleva_vertical:.3f}, diagonal {c.kovaleva_diagonal:.3f}; "
                f"argmax at -1 {c.voita_previous:.3f}, at +1 {nxt}, on the rarest token "
                f"{c.voita_rare_argmax:.3f}")

    tax = Table(
        "Pretrained models: heads per label of Clark et al. 2019, Kovaleva et al. 2019 (template fits) and Voita "
        "et al. 2019, beside the chance level of every score (uniform attention under the model's mask, argmax "
        "ties split) and the labels the uniform map itself gets",
        ["model", "mask", "heads", "Clark", "Kovaleva", "Voita", "chance levels (uniform map, same mask)",
         "uniform map labelled"],
        [[s.model, s.mask, s.heads, counts_text(s.clark), counts_text(s.kovaleva),
          counts_text(s.voita), chance(s.chance),
          f"Clark {s.chance.labels['clark']}, Kovaleva {s.chance.labels['kovaleva']}, Σ unstructured"]
         for s in sums],
        ["text", "text", "int", "text", "text", "text", "text", "text"])
    return [fits, tax]


def train_table(models: list[TrainedTranslator], sizes: tuple[int, ...], cfg: ReportSettings, corpus: Any) -> Table:
    """One row per translation model: its data, losses, accuracy and seconds."""
    cols = ["heads", "epochs", "train pairs", "held-out pairs", "vocab EN / IT", "train loss (last epoch)",
            "held-out loss", "held-out accuracy", "unigram loss", "seconds"]
    body = [[t.n_heads, cfg.epochs, sizes[0], sizes[1], f"{sizes[3]} / {sizes[4]}", t.epoch_losses[-1],
             t.heldout_loss, t.heldout_accuracy, t.unigram_loss, t.seconds] for t in models]
    return Table(f"Training (one layer, d={cfg.d_model}, corpus: {corpus.name})", cols, body,
                 ["int", "int", "int", "int", "text", "float", "float", "float", "float", "float"])


def baseline_table(base: dict[str, Baselines]) -> Table:
    """Uniform and random attention's d / 2n to each family, under each mask."""
    keys = list(FITS) + ["sigma"]
    body = []
    for mask, b in base.items():
        body += [[f"uniform ({mask})", *(b.uniform[k] for k in keys)],
                 [f"random, mean ({mask})", *(b.random[k] for k in keys)]]
    return Table("Baselines: the same fits of uniform attention and of random row-stochastic maps (d / 2n), "
                 "bidirectional and causal (row i over the keys j <= i)", ["map"] + [FIT_NAMES[k] for k in keys], body,
                 ["text"] + ["float"] * len(keys))


def thesis_table(fits: Any) -> Table:
    """The thesis's eight saved maps: distances, label, rank and norm."""
    cols = ["map", "row sums (min-max)", "d Σ1", "d shift", "d Σ2", "d Σ3", "d Σ (thesis families)", "per entry",
            "d Σ / 2n (renormalised)", "label", "rank", "σ_min", "‖A‖_2"]
    body = [[f.index, f"{f.row_sums[0]:.2f}-{f.row_sums[1]:.2f}", f.d["sigma1"], f.d["shift"], f.d["sigma2"],
             f.d["sigma3"], f.d_thesis_sigma, f.per_entry, normalized_distance(f.d_renormalised["sigma"], 16), f.label,
             f.rank, f.sigma_min, f.l2_norm] for f in fits]
    return Table("The thesis's eight saved maps (16 x 16 crops as saved, as the thesis fitted them; label, rank and "
                 f"norm of the renormalised crop); the thesis's random search printed {THESIS_L1[0]}-{THESIS_L1[1]}",
                 cols, body, ["int", "text"] + ["float"] * 7 + ["text", "int", "float", "float"])


def _short(r: HeadFit) -> str:
    """A panel title: the family, d_Sigma / 2n and the label's first letters."""
    return {"shift": "shift", "sigma2": "Σ2", "sigma3": "Σ3"}[r.best_family] + f" {r.normalized:.2f} {r.label[:3]}"


def head_structure_figures(cfg: ReportSettings, rows: list[HeadFit], pre: list[PretrainedHeads], figmaps: Any,
                           base: dict[str, Baselines], thesis: Any) -> list[Figure]:
    """Like Figs. 11-12 (the translators' maps beside their best member of Sigma), MiniLM's 72 heads, the
    pretrained models by layer, and every head's distance against the baselines."""
    figs = []
    mini = next((p.rows for p in pre if p.spec.key == "minilm"), [])
    mini_tokens = next((p.tokens for p in pre if p.spec.key == "minilm"), [])
    prerows = [r for p in pre for r in p.rows]
    one = min(cfg.heads)
    panels = []
    for kind in ATTENTION_KINDS:
        r, ylab, xlab = figmaps[(one, kind)]
        for h in r:
            panels.append(heatmap_panel(f"{kind}, head {h.head}", h.example_map, xlabels=xlab, ylabels=ylab))
            panels.append(heatmap_panel(f"best Σ: {FIT_NAMES[h.best_family]}, L1 "
                                        f"{(h.example_map - h.example_fit).abs().sum():.1f}",
                                        h.example_fit, xlabels=xlab, ylabels=ylab))
    figs.append(heatmap_figure(
        "fig11-one-head.png",
        f"Like the text's Fig. 11: the {one}-head one-layer translation model on one held-out pair "
        f"({cfg.crop}x{cfg.crop} crop, rows renormalised), each map beside its best-fitting member of Sigma. "
        "Rows are queries, columns keys.",
        panels=panels, ncols=2 * min(len(r), 4), vmin=0.0, vmax=1.0, colorbar="attention weight",
        title=f"{one} head: attention and best Σ"))
    many = max(cfg.heads)
    if many != one:
        for kind, file in (("encoder self", "fig12-heads-encoder.png"), ("cross", "fig12-heads-cross.png")):
            r, _, _ = figmaps[(many, kind)]
            panels = [heatmap_panel(f"head {h.head}: {_short(h)}", h.example_map) for h in r]
            panels += [heatmap_panel(f"head {h.head}: best Σ", h.example_fit) for h in r]
            figs.append(heatmap_figure(
                file, f"Like the text's Fig. 12: the {many}-head model's {kind} attention on one held-out pair "
                f"(top row) and each head's best member of Sigma (bottom row). Titles: the family (shift, Σ2 or Σ3), d_Sigma / 2n averaged over the fitted pairs, and the head's label.",
                panels=panels, ncols=len(r), vmin=0.0, vmax=1.0, colorbar="attention weight",
                title=f"{many} heads, {kind} attention"))
    if mini:
        figs.append(heatmap_figure(
            "minilm-72-heads.png",
            f"All 72 heads of all-MiniLM-L6-v2 on one pydoc sentence of {cfg.crop} word pieces "
            f"({' '.join(mini_tokens)}); two rows per layer (heads 0-5, 6-11), layers 0-5 from the top. "
            "Titles: layer, head, best family, d_Sigma / 2n averaged over the fitted sentences, label.",
            panels=[heatmap_panel(f"L{r.kind[-1]} H{r.head}: {_short(r)}", r.example_map) for r in mini],
            ncols=6, vmin=0.0, vmax=1.0, colorbar="attention weight", title="MiniLM: every head"))
    if pre:
        figs += _pretrained_figures(cfg, pre, base)
    groups = []
    cats = ["sigma1", "shift", "permutation", "sigma3", "sigma2", "sigma"]  # the low bars last, under the legend
    for name in dict.fromkeys(r.model for r in rows + prerows):
        rs = [r for r in rows + prerows if r.model == name]
        groups.append({"label": f"{name.replace('translation ', '')} ({len(rs)})",
                       "values": [float(np.mean([normalized_distance(r.distance(k), cfg.crop) for r in rs]))
                                  for k in cats]})
    for mask, b in base.items():
        groups.append({"label": f"uniform map ({mask})", "values": [b.uniform[k] for k in cats]})
        groups.append({"label": f"random maps ({mask})", "values": [b.random[k] for k in cats]})
    figs.append(bar_figure(
        "distance-by-family.png",
        f"L1 distance to each family divided by 2n (n = {cfg.crop}; 1 = as far as two row-stochastic maps can be), "
        "mean over heads (in brackets: how many), beside the same fits of uniform and of random attention "
        "(the mean over random maps), bidirectional and causal (a decoder self-attention head is judged against "
        "the causal ones). The thesis's per-head range "
        f"{THESIS_L1[0]}-{THESIS_L1[1]} on 16x16 is {THESIS_L1[0] / 32:.2f}-{THESIS_L1[1] / 32:.2f} on this scale.",
        categories=[FIT_NAMES[k] for k in cats], groups=groups, ylabel="distance / 2n",
        title="Distance to Σ against baselines"))
    lines = []
    for i, name in enumerate(dict.fromkeys(r.model for r in rows + prerows)):
        ys = sorted(r.normalized for r in rows + prerows if r.model == name)
        xs = [(k + 0.5) / len(ys) for k in range(len(ys))]
        lines.append(series(f"{name} ({len(ys)} heads)", xs, ys, color=PALETTE[i]))
    b, c_ = base["bidirectional"], base["causal"]
    for val, label, style, c in ((b.uniform["sigma"], "uniform map", "dashed", PALETTE[6]),
                                 (b.random["sigma"], "random maps", "dotted", PALETTE[6]),
                                 (c_.uniform["sigma"], "causal uniform map", "dashed", PALETTE[5]),
                                 (c_.random["sigma"], "causal random maps", "dotted", PALETTE[5]),
                                 (THESIS_L1[0] / 32, "thesis min (15.7/32)", "dashdot", PALETTE[4]),
                                 (THESIS_L1[1] / 32, "thesis max (21.1/32)", "dashdot", PALETTE[4])):
        lines.append(series(label, [0, 1], [val, val], style=style, marker=False, color=c))
    figs.append(line_figure(
        "distance-per-head.png",
        "Each head's d_Sigma / 2n, sorted, against the fraction of heads (x): below the dashed line a head is "
        "closer to Sigma than uniform attention is (grey: bidirectional; blue: causal, the line a decoder "
        "self-attention head must be below). Dash-dot: the thesis's per-head range (random search, "
        "so an upper bound on the exact minimum).",
        series=lines, xlabel="fraction of heads (sorted)", ylabel="d_Σ / 2n", title="Every head against baselines"))
    fits, _ = thesis
    if fits:
        panels = [heatmap_panel(f"map {f.index}: {f.label}, d {f.d_thesis_sigma:.1f}", f.A) for f in fits]
        panels += [heatmap_panel(f"best Σ: {FIT_NAMES[min(THESIS_SIGMA, key=f.d.get)]}",
                                 f.raw_fits[min(THESIS_SIGMA, key=f.d.get)].P) for f in fits]
        figs.append(heatmap_figure(
            "thesis-maps.png",
            "The thesis's eight saved attention maps (16 x 16 crops, rows renormalised; top row) and, below each, "
            "its nearest member of Sigma_1, Sigma_2 (w <= 3) or Sigma_3 (exact fit of the crop as saved, the "
            f"distance in the title; the thesis's random search printed {THESIS_L1[0]}-{THESIS_L1[1]}).",
            panels=panels, ncols=len(fits), vmin=0.0, vmax=1.0, colorbar="attention weight",
            title="The thesis's maps and their nearest Σ"))
    return figs


def _pretrained_figures(cfg: ReportSettings, pre: list[PretrainedHeads], base: dict[str, Baselines]) -> list[Figure]:
    """The pretrained models' fits by layer (relative depth, so 6 and 30 layers share an axis) and every
    head's d_Sigma / 2n as a layer x head grid."""
    lines = []
    for i, p in enumerate(pre):
        x = [layer / max(p.layers - 1, 1) for layer in range(p.layers)]
        for fam, style in (("sigma", "solid"), ("shift", "dashed"), ("sigma3", "dotted")):
            y = [float(np.mean([normalized_distance(r.distance(fam), cfg.crop) for r in p.rows if r.layer == layer]))
                 for layer in range(p.layers)]
            lines.append(series(f"{p.spec.name} ({p.mask}): {FIT_NAMES[fam]}", x, y, style=style,
                                color=PALETTE[i + 2]))
    for mask, c in (("bidirectional", PALETTE[6]), ("causal", PALETTE[5])):
        if any(p.mask == mask for p in pre):
            u = base[mask].uniform["sigma"]
            lines.append(series(f"uniform map ({mask}): Σ (best)", [0, 1], [u, u], style="dashdot", marker=False,
                                color=c))
    names = " and ".join(f"{p.spec.title} ({p.layers} layers x {p.heads} heads, {p.mask})" for p in pre)
    figs = [line_figure(
        "pretrained-fits-by-layer.png",
        f"The fits of {names} by layer, each averaged over the layer's heads and the fitted sentences of "
        f"exactly {cfg.crop} tokens: d_Sigma / 2n (solid), the best shift (dashed) and Sigma_3 (dotted). x is "
        "the relative depth layer / (L - 1), so both stacks span [0, 1]. Dash-dot: uniform attention under each "
        "mask, the level of a head that looks nowhere in particular (a causal head is compared with the causal "
        "one, below which every causal map starts).",
        series=lines, xlabel="relative depth, layer / (L - 1)", ylabel="distance / 2n",
        title="Pretrained models: distance to Σ by layer")]
    panels = [heatmap_panel(f"{p.spec.name}: d_Σ / 2n (rows: layers, columns: heads)",
                            [[next(r.normalized for r in p.rows if r.layer == layer and r.head == h)
                              for h in range(p.heads)] for layer in range(p.layers)],
                            xlabels=[str(h) for h in range(p.heads)], ylabels=[str(layer) for layer in range(p.layers)])
              for p in pre]
    figs.append(heatmap_figure(
        "pretrained-distance-by-head.png",
        "Every head's d_Sigma / 2n (averaged over the fitted sentences): layers from the top, heads from the left. "
        + "; ".join(f"{p.spec.name}: uniform attention under its {p.mask} mask is at "
                    f"{base[p.mask].uniform['sigma']:.3f}" for p in pre) + ".",
        panels=panels, ncols=len(panels), vmin=0.0, vmax=1.0, colorbar="d_Σ / 2n",
        title="Pretrained models: every head's distance to Σ"))
    return figs
