"""rank-collapse.ablations: the relative residual per layer of pure attention and its repairs.

Dong, Cordonnier, Loukas (ICML 2021), Figs. 2-4 (the reference), rank-collapse notes §2.2.
For every hidden state X_l (l = 0: the embedding output; l >= 1: block l's output) of B
texts cut to n tokens, the relative residual

    r(X_l) = ||res(X_l)||_{1,inf} / ||X_l||_{1,inf}          (||.||_{1,inf} of Definition 2.1)

under the three residuals of :mod:`attnlab.analysis.residuals`: "mean" (X - 1 mean^T, what
Dong et al.'s plotting code measures), "svd" (X minus its best rank-one approximation) and
"composite" (the exact argmin of the composite norm over shifts 1 x^T; a linear program per
matrix, so only on a short sequence and the variants chosen by ``composite_variants``).

Networks and ablations: :mod:`attnlab.papers.rank_collapse.stacks` (pretrained
all-MiniLM-L6-v2, the same architecture with BERT's random initialisation, and a 12-layer
attnlab-initialised stack fed MiniLM's embeddings), each as SAN, SAN+skip, SAN+MLP, SAN+LN and
the full transformer. Text: help topics of pydoc_data.topics (English prose and code).

Reference numbers (Dong et al.'s figures, read off their published PDFs; BERT-base-cased,
ALBERT-base-v2, XLNet-base-cased, 12 layers, 32 wiki_bio sequences of 128 tokens, residual by
the token mean, LayerNorm kept in every variant): :data:`REFERENCE`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnlab.analysis.residuals import KINDS, composite_norm, relative_residual, residual
from attnlab.config import RunConfig, check_int, param
from attnlab.errors import ConfigError
from attnlab.papers.rank_collapse.notes_errors import COLUMNS, NOTES_ERRORS
from attnlab.papers.rank_collapse.stacks import long_texts, MODELS, VARIANTS, build_model, run_model, text_batch
from attnlab.registry import Experiment, register
from attnlab.results import PALETTE, ExperimentResult, Table, check, line_figure, series
from attnlab.runs.rundir import log_metric

EXPERIMENT_ID = "rank-collapse.ablations"
COLLAPSED = 1e-2  # "collapsed": relative residual below this (Dong et al.'s curves reach ~0)
MODEL_TEXT = {"pretrained": "pretrained all-MiniLM-L6-v2 (6 layers)",
              "random": "MiniLM architecture, BERT random init N(0, 0.02^2) (6 layers)",
              "attnlab-12": "attnlab stack, 12 layers, init N(0, 1/fan_in), on MiniLM's embeddings"}

# Dong et al. (2021), read off paper-plotting/figures/residual_*_vert_croped.pdf (12 layers).
REFERENCE = {
    "random_layer0": "BERT 0.60, ALBERT 0.60-0.65, XLNet 1.0",
    "random_san_l1": "BERT 0.02, ALBERT 0, XLNet 0",
    "random_san_l2": "0 from l=2 (all three)",
    "random_skip_full_last": "l=12, SAN+skip / transformer: BERT 0.45 / 0.35, ALBERT 0.26 / 0.26, XLNet 0.93 / 0.73",
    "pretrained_layer0": "BERT 0.69, ALBERT 0.90, XLNet 0.71",
    "pretrained_san_collapse": "~0 by l = 5 (BERT), 6 (ALBERT), 9 (XLNet); BERT 0.04 at l=3",
    "pretrained_mlp_collapse": "~0 by l = 4 (BERT), 5 (ALBERT), 5 (XLNet)",
    "pretrained_skip_full_last": "l=12, SAN+skip / transformer: BERT 0.07 / 0.31, ALBERT 0 / 0.56, XLNet 0.10 / 0.52",
}


@dataclass(frozen=True)
class AblationsConfig(RunConfig):
    """``composite_*`` choose where the exact composite residual (one LP per matrix, ~2 s for an
    8 x 384 matrix, ~17 s at 16 x 384) is computed: the first ``composite_texts`` texts cut to
    ``composite_tokens`` tokens, for ``composite_models`` x ``composite_variants``. Both presets
    keep 8 tokens, so the paper scale's 2 x 5 x 7 layers x 2 texts cost minutes, not an hour."""

    PRESETS = {"quick": {"texts": 4, "tokens": 32, "composite_texts": 1, "composite_tokens": 8,
                         "composite_models": ("pretrained",), "composite_variants": ("SAN", "transformer")},
               "paper": {"texts": 32, "tokens": 128, "composite_texts": 2, "composite_tokens": 8,
                         "composite_models": ("pretrained", "random"),
                         "composite_variants": tuple(VARIANTS)}}

    texts: int | None = param(None, "number of texts B (help topics of pydoc_data.topics)")
    tokens: int | None = param(None, "tokens n per text ([CLS] and [SEP] included)")
    models: tuple[str, ...] = param(MODELS, "networks: pretrained, random, attnlab-12")
    composite_texts: int | None = param(None, "texts for the exact composite residual (0: none)")
    composite_tokens: int | None = param(None, "tokens per text for the exact composite residual")
    composite_models: tuple[str, ...] | None = param(None, "networks for the composite residual")
    composite_variants: tuple[str, ...] | None = param(None, "ablations for the composite residual")

    def validate(self) -> None:
        check_int("texts", self.texts, minimum=1)
        check_int("tokens", self.tokens, minimum=3, maximum=512)
        check_int("composite_texts", self.composite_texts, minimum=0, maximum=self.texts)
        check_int("composite_tokens", self.composite_tokens, minimum=3, maximum=self.tokens)
        for name, values, allowed in (("models", self.models, MODELS),
                                      ("composite_models", self.composite_models, MODELS),
                                      ("composite_variants", self.composite_variants, tuple(VARIANTS))):
            values = tuple(values)
            bad = [v for v in values if v not in allowed]
            if bad or (name == "models" and not values):
                raise ConfigError(f"{name} must list some of {', '.join(allowed)}, got {values!r}")
            object.__setattr__(self, name, values)
        missing = [m for m in self.composite_models if m not in self.models]
        if missing:
            raise ConfigError(f"composite_models {missing} are not in models {list(self.models)}: add them there")


def _per_layer(hidden: list[torch.Tensor], kind: str) -> tuple[list[float], list[float]]:
    """Mean and standard deviation over the batch of r(X_l), l = 0..L."""
    r = torch.stack([relative_residual(h, kind) for h in hidden])  # (L+1, B)
    std = r.std(-1) if r.shape[-1] > 1 else torch.zeros_like(r[:, 0])
    return r.mean(-1).tolist(), std.tolist()


def _first_below(ys: list[float], level: float) -> int | None:
    return next((l for l, y in enumerate(ys) if y < level), None)


def measure(cfg: AblationsConfig, run_dir=None) -> dict:
    """The curves: data["curves"][model][variant][kind] = {"mean": [...], "std": [...]} over layers,
    and data["composite"][model][variant][kind] on the short sequences (all three kinds)."""
    texts = long_texts(cfg.texts, cfg.tokens, cfg.seed)
    batch = text_batch(texts, cfg.tokens, cfg.device)
    short = text_batch(texts[:cfg.composite_texts], cfg.composite_tokens, cfg.device) if cfg.composite_texts else None
    curves, composite, worst_gap = {}, {}, 0.0
    for m in cfg.models:
        model = build_model(m, cfg.seed, cfg.device)
        curves[m], composite[m] = {}, {}
        for v, parts in VARIANTS.items():
            out = run_model(m, model, batch, parts)
            curves[m][v] = {}
            for kind in ("mean", "svd"):
                mean, std = _per_layer(out.hidden_states, kind)
                curves[m][v][kind] = {"mean": mean, "std": std}
            log_metric(run_dir, {"experiment": EXPERIMENT_ID, "model": m, "variant": v,
                                 "last_layer_mean_residual": curves[m][v]["mean"]["mean"][-1]})
            if short is not None and m in cfg.composite_models and v in cfg.composite_variants:
                hidden = run_model(m, model, short, parts).hidden_states
                composite[m][v] = {}
                for kind in KINDS:
                    composite[m][v][kind] = _per_layer(hidden, kind)[0]
                for h in hidden:  # the exact argmin can never do worse than the row mean (a feasible shift)
                    c, mn = residual(h, "composite").norm, residual(h, "mean").norm
                    worst_gap = max(worst_gap, float(((c - mn) / composite_norm(h)).max()))
    return {"curves": curves, "composite": composite, "composite_minus_mean": worst_gap,
            "texts": cfg.texts, "tokens": cfg.tokens}


def _fmt(x: float) -> str:
    return f"{x:.2g}" if x < 1e-3 else f"{x:.3f}"


def _summary(data: dict, cfg: AblationsConfig) -> list:
    C = data["curves"]
    out = []

    def curve(m, v, kind="mean"):
        return C[m][v][kind]["mean"]

    if "random" in C:
        out.append(check("random init: relative residual of X_0 (embedding output), token mean",
                         REFERENCE["random_layer0"], round(curve("random", "SAN")[0], 4), None, None,
                         "MiniLM architecture with BERT's N(0, 0.02^2) init; Dong et al.: BERT/ALBERT/XLNet"))
        s1, s2 = curve("random", "SAN")[1], curve("random", "SAN")[2]
        out.append(check("random init: SAN relative residual at l=1", REFERENCE["random_san_l1"], _fmt(s1),
                         "< 0.1", s1 < 0.1, "one attention layer of near-uniform P already averages the tokens"))
        out.append(check("random init: SAN relative residual at l=2", REFERENCE["random_san_l2"], _fmt(s2),
                         "< 1e-3", s2 < 1e-3))
        sk, fu = curve("random", "SAN+skip")[-1], curve("random", "transformer")[-1]
        out.append(check("random init: SAN+skip / transformer at the last layer (l=6)",
                         REFERENCE["random_skip_full_last"], f"{sk:.3f} / {fu:.3f}", "both > 0.1",
                         sk > 0.1 and fu > 0.1, "MiniLM has 6 layers, the reference models 12"))
    if "pretrained" in C:
        out.append(check("pretrained: relative residual of X_0, token mean", REFERENCE["pretrained_layer0"],
                         round(curve("pretrained", "SAN")[0], 4), None, None,
                         "all-MiniLM-L6-v2 on pydoc help text vs BERT/ALBERT/XLNet on wiki_bio"))
        for v, ref in (("SAN", "pretrained_san_collapse"), ("SAN+MLP", "pretrained_mlp_collapse")):
            ys = curve("pretrained", v)
            first = _first_below(ys, COLLAPSED)
            out.append(check(f"pretrained: first layer where {v} relative residual < {COLLAPSED:g}",
                             REFERENCE[ref], "never" if first is None else first, "<= 6 (within the model)",
                             first is not None, "values per layer: " + ", ".join(_fmt(y) for y in ys)))
        sk, fu = curve("pretrained", "SAN+skip")[-1], curve("pretrained", "transformer")[-1]
        out.append(check("pretrained: SAN+skip / transformer at the last layer (l=6)",
                         REFERENCE["pretrained_skip_full_last"], f"{sk:.3f} / {fu:.3f}", "both > 0.1",
                         sk > 0.1 and fu > 0.1, "MiniLM has 6 layers, the reference models 12"))
    if "attnlab-12" in C:
        ys = {v: curve("attnlab-12", v)[-1] for v in VARIANTS}
        out.append(check("attnlab-12: relative residual at l=12, " + " / ".join(VARIANTS),
                         "random init, l=12: SAN 0, SAN+skip 0.26-0.93, transformer 0.26-0.73",
                         " / ".join(_fmt(y) for y in ys.values()), None, None,
                         "attnlab's N(0, 1/fan_in) init is much larger than BERT's 0.02: "
                         "sharper attention, so skip-only and full stacks decay slowly rather than stay flat"))
    ratio = min(C[m]["SAN+skip"]["mean"]["mean"][-1] / max(C[m]["SAN"]["mean"]["mean"][-1], 1e-300) for m in C)
    out.append(check("min over networks of (SAN+skip) / SAN relative residual at the last layer",
                     "skip connections prevent the collapse", f"{ratio:.3g}", ">= 100", ratio >= 100,
                     "pure attention reaches float64 rounding (~1e-16) within 2-4 layers"))
    mlp = max(C[m]["SAN+MLP"]["mean"]["mean"][-1] for m in C)
    out.append(check("max over networks of the SAN+MLP relative residual at the last layer",
                     "the MLP does not prevent the collapse", _fmt(mlp), f"< {COLLAPSED:g}", mlp < COLLAPSED))
    ln = max(C[m]["SAN+LN"]["mean"]["mean"][-1] for m in C)
    out.append(check("max over networks of the SAN+LN relative residual at the last layer",
                     "Wu et al. 2024: LayerNorm alone stops mu(X) -> 0 at random init", _fmt(ln), None, None,
                     "here LayerNorm alone does not prevent the collapse of the relative residual: LN "
                     "re-scales each token but cannot restore directions that attention has averaged away"))
    if data["composite"] and any(data["composite"].values()):
        gap = data["composite_minus_mean"]
        out.append(check("max over states of (composite - mean residual) / ||X_l||_{1,inf}",
                         "the composite argmin minimises ||.||_{1,inf} over shifts", f"{gap:.2g}", "<= 1e-8",
                         gap <= 1e-8, "the row mean is a feasible shift, so the exact argmin is never worse "
                                      "(LP tolerances ~1e-9)"))
    return out


def _figures(data: dict, cfg: AblationsConfig) -> list:
    figs = []
    colors = {v: c for v, c in zip(VARIANTS, (PALETTE[0], PALETTE[1], PALETTE[2], PALETTE[3], PALETTE[6]))}
    refs = {"pretrained": "Dong et al. (pretrained, l=12, SAN+skip / transformer): BERT 0.07 / 0.31, ALBERT 0 / 0.56, "
                          "XLNet 0.10 / 0.52; SAN ~0 by l=5-9.",
            "random": "Dong et al. (random init): layer 0 0.60-1.0; SAN 0.02 at l=1 (BERT), 0 from l=2; "
                      "l=12 SAN+skip / transformer: BERT 0.45 / 0.35, ALBERT 0.26 / 0.26, XLNet 0.93 / 0.73.",
            "attnlab-12": "Dong et al. (random init, 12 layers): SAN 0 from l=2; SAN+skip 0.26-0.93 and "
                          "transformer 0.26-0.73 at l=12 (BERT init is N(0, 0.02^2), attnlab's N(0, 1/fan_in))."}
    for m, by_variant in data["curves"].items():
        for kind, what in (("mean", "token-mean residual X - 1 mean^T (Dong et al.'s measure)"),
                           ("svd", "rank-one SVD residual X - sigma_1 u_1 v_1^T")):
            lines = []
            for v, c in by_variant.items():
                L = len(c[kind]["mean"])
                lines.append(series(v, list(range(L)), [max(y, 1e-17) for y in c[kind]["mean"]], color=colors[v]))
            figs.append(line_figure(
                f"ablation-{m}-{kind}.png",
                f"{MODEL_TEXT[m]}: relative residual ||res(X_l)||_{{1,inf}} / ||X_l||_{{1,inf}} per layer, "
                f"residual = {what}; mean over {data['texts']} texts of {data['tokens']} tokens "
                f"(pydoc help topics). Layer 0 is the embedding output. Values at ~1e-16 are float64 "
                f"rounding (a collapsed state). {refs[m]}",
                series=lines, xlabel="layer l", ylabel="relative residual", yscale="log",
                title=f"{m}: {kind} residual"))
    dong = [series(f"{m}: {v}", list(range(len(c["mean"]["mean"]))), c["mean"]["mean"], color=colors[v],
                   style=("solid", "dashed", "dotted")[i])
            for i, (m, by_variant) in enumerate(data["curves"].items()) for v, c in by_variant.items()]
    figs.insert(0, line_figure(
        "ablation-linear-scale.png",
        "As Dong et al. draw it (linear axis): relative residual per layer, residual = token-mean residual "
        "X - 1 mean^T, for every network (" + ", ".join(
            f"{m} {st}" for m, st in zip(data["curves"], ("solid", "dashed", "dotted")))
        + ") and ablation. On this axis pure attention, SAN+MLP and SAN+LN are 0 after 2-4 layers, as in "
        "their figures; only the skip connection keeps the residual up. Dong et al. at l=12: "
        "pretrained SAN+skip / transformer 0.07 / 0.31 (BERT), 0 / 0.56 (ALBERT), 0.10 / 0.52 (XLNet); random "
        "init 0.45 / 0.35, 0.26 / 0.26, 0.93 / 0.73.",
        series=dong, xlabel="layer l", ylabel="relative residual", title="All ablations, linear axis"))
    comp = {m: vs for m, vs in data["composite"].items() if vs}
    if comp:
        lines, styles = [], {"mean": "solid", "composite": "dashed", "svd": "dotted"}
        colors = {v: c for v, c in zip(VARIANTS, (PALETTE[0], PALETTE[1], PALETTE[2], PALETTE[3], PALETTE[6]))}
        for m, vs in comp.items():
            for v, kinds in vs.items():
                for kind, ys in kinds.items():
                    lines.append(series(f"{m} {v}: {kind}", list(range(len(ys))), [max(y, 1e-17) for y in ys],
                                        style=styles[kind], color=colors[v]))
        figs.append(line_figure(
            "ablation-three-residuals.png",
            f"All three residuals on the same states ({cfg.composite_texts} text(s) of {cfg.composite_tokens} tokens): "
            "solid = token mean (Dong et al.'s code), dashed = exact composite-norm argmin over shifts 1 x^T "
            "(Dong et al.'s theorem; a linear program per matrix), dotted = rank-one SVD. The composite "
            "residual is never above the mean one; the SVD residual is not of the form X - 1 x^T and can be "
            "smaller than both.",
            series=lines, xlabel="layer l", ylabel="relative residual", yscale="log",
            title="Three residual definitions"))
    return figs


def _tables(data: dict) -> list[Table]:
    rows = []
    for m, by_variant in data["curves"].items():
        for v, c in by_variant.items():
            for kind in ("mean", "svd"):
                rows.append([m, v, kind, *(c[kind]["mean"][l] if l < len(c[kind]["mean"]) else None
                                           for l in (0, 1, 2, 3, 6, 12))])
    curves = Table("Relative residual ||res X_l||_{1,inf} / ||X_l||_{1,inf} at layers 0, 1, 2, 3, 6, 12 "
                   "(mean over texts)", ["network", "ablation", "residual", "l=0", "l=1", "l=2", "l=3", "l=6", "l=12"],
                   rows, ["text"] * 3 + ["float"] * 6)
    ref = Table("Dong et al.'s figures (BERT-base / ALBERT-base / XLNet-base, 12 layers, wiki_bio, token-mean "
                "residual, LayerNorm kept in every ablation) beside ours (all-MiniLM-L6-v2, 6 layers, pydoc "
                "text, each part off unless named)", ["quantity", "Dong et al.", "ours"],
                [[k.replace("_", " "), v, ""] for k, v in REFERENCE.items()], ["text"] * 3)
    C = data["curves"]
    ours = {}
    if "random" in C:
        r = lambda v: C["random"][v]["mean"]["mean"]  # noqa: E731
        ours |= {"random_layer0": _fmt(r("SAN")[0]), "random_san_l1": _fmt(r("SAN")[1]),
                 "random_san_l2": _fmt(r("SAN")[2]),
                 "random_skip_full_last": f"l=6: {r('SAN+skip')[-1]:.3f} / {r('transformer')[-1]:.3f}"}
    if "pretrained" in C:
        p = lambda v: C["pretrained"][v]["mean"]["mean"]  # noqa: E731
        ours |= {"pretrained_layer0": _fmt(p("SAN")[0]),
                 "pretrained_san_collapse": f"< {COLLAPSED:g} from l = {_first_below(p('SAN'), COLLAPSED)}; "
                                            f"{_fmt(p('SAN')[3])} at l=3",
                 "pretrained_mlp_collapse": f"< {COLLAPSED:g} from l = {_first_below(p('SAN+MLP'), COLLAPSED)}",
                 "pretrained_skip_full_last": f"l=6: {p('SAN+skip')[-1]:.3f} / {p('transformer')[-1]:.3f}"}
    ref = Table(ref.title, ref.columns, [[k.replace("_", " "), v, ours.get(k, "-")] for k, v in REFERENCE.items()],
                ref.formats)
    errors = Table("Errors and loose statements in the notes, and what attnlab implements instead", list(COLUMNS),
                   [list(e) for e in NOTES_ERRORS], ["text"] * 4)
    return [ref, curves, errors]


NOTES = [
    "Residuals (analysis.residuals): 'mean' = X - 1 mean^T, the Frobenius argmin, what Dong et al.'s plotting "
    "code measures; 'composite' = the exact argmin of ||X - 1 x^T||_{1,inf} (their theorem's residual); 'svd' = "
    "X minus its best rank-one approximation. The notes define x = argmin ||X - 1 x^T||_2, which none of the "
    "three (nor Dong et al.) uses. Every figure caption says which residual it plots.",
    "Dong et al.'s code has a second composite norm (functions.py, used for their toy tasks) that returns "
    "||X||_1 ||X||_inf without the square root; their figures use the square-rooted one, as here.",
    "Differences of model: the reference is BERT/ALBERT/XLNet-base (12 layers, 768 wide, wiki_bio, 128 tokens); "
    "ours is all-MiniLM-L6-v2 (6 layers, 384 wide, a sentence-embedding distillation of MiniLM) on Python's "
    "help text, plus the same architecture at BERT's random init and a 12-layer attnlab stack. Dong et al. keep "
    "LayerNorm in every ablation (and in BERT's SAN+MLP keep the FFN's residual); here each part is off unless "
    "named, and SAN+LN is added (Wu et al. 2024).",
    "Collapse here reaches float64 rounding (relative residual ~1e-16) within 2-4 layers of pure attention; "
    "Dong et al.'s float32 curves show it as 0.",
]


def run(cfg: AblationsConfig, run_dir=None) -> ExperimentResult:
    data = measure(cfg, run_dir)
    return ExperimentResult(summary=_summary(data, cfg), tables=_tables(data), figures=_figures(data, cfg),
                            notes=NOTES, data=data)


register(Experiment(EXPERIMENT_ID,
                    "Dong et al.'s ablations: relative residual per layer of SAN, +skip, +MLP, +LN and the "
                    "transformer, pretrained MiniLM and random init, three residuals",
                    AblationsConfig, run))
