"""rank-collapse.path-lengths: how the output of a network with skips splits over path lengths.

Notes §2.1, remark after Theorem 2.1: with skip connections a SAN is a sum over (H+1)^L
paths. Of those, C(L, k) H^k take a real head in exactly k layers (length k), and
Dong et al. (2021, §3 and their path-length figure) plot this count distribution: for
BERT-base (L = H = 12) it peaks at k = 11 and 12 (0.38 each). The count says nothing about
which paths carry the output; this experiment measures it.

1. **Exact, small random stacks** (:func:`attnlab.analysis.path_decomposition.random_san`
   with skips, float64): the length-k terms S_k = sum of the length-k path terms, by the
   recursion :func:`~attnlab.analysis.path_decomposition.path_length_terms`, checked against
   the enumeration of all (H+1)^L paths; SAN_skip(X) = sum_k S_k + 1 b^T exactly.
2. **MiniLM, linearised** (estimated): all-MiniLM-L6-v2's attention matrices P_{l,h} recorded
   in one pass of the full model, then held fixed, and the network reduced to its attention
   with skips, X_l = X_{l-1} + sum_h P_{l,h} X_{l-1} W_{l,h} + 1 b_l^T (LayerNorm and MLP
   dropped) from the model's own X_0. The S_k of this linear network are exact; as a
   statement about MiniLM they are an estimate, since LayerNorm rescales every token and the
   MLP adds terms no path of heads describes.
3. **Path products** (Dong et al.'s sampled experiment): random paths of depth k through
   (layer, head) pairs of MiniLM, l_1 < ... < l_k, and the relative residual of the product
   P_{l_k,h_k} ... P_{l_1,h_1} (rank-one SVD residual, as their code's rank-1 variant).

Two shares per length: the norm share ||S_k||_F / sum_j ||S_j||_F, and the signed share
<S_k, Y - 1 b^T>_F / ||Y - 1 b^T||_F^2, which sums to 1 exactly when the decomposition is
exact (a share can be negative: terms of different lengths can cancel).
The measurements live in :mod:`~attnlab.papers.rank_collapse.path_shares`.

Deviations (:func:`deviations`): the path products are MiniLM's (pretrained, 6 layers) on pydoc text,
where Dong et al.'s are BERT-base's (12 layers, pretrained and at initialisation) on wiki_bio. Their
control, in the same run: the same statement on BERT-base at random initialisation (transformers'
BertConfig() and its own draw, :mod:`~attnlab.papers.rank_collapse.bert_base`; their "init" boxes)
on the same text and on random token ids, depths 1..12; their pretrained BERT is not offline. And
MiniLM's path shares are those of its linearised network (an estimate, described, never judged).

Whose statements: the exactness of the (H+1)^L-path sum with skips is the notes' (ledger entry
rank-collapse.skip-paths, a row of the text). The path-length shares of BERT-base (0.38) and the
path products' residual falling with depth are Dong et al.'s figures, which the notes do not
print: those rows are attnlab's own statements (role own, attnlab's reading of Dong et al.).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import torch

from attnlab.checks import Check, at_most, below, info, near
from attnlab.config import RunConfig, check_int, param
from attnlab.deviations import Deviation
from attnlab.errors import ConfigError
from attnlab.estimates import Estimate, svd_flops, total
from attnlab.papers.rank_collapse.path_shares import (ExactStack, LinearisedMiniLM, ProductResiduals,
                                                      architecture_counts, bert_base_products, exact_stack,
                                                      mean_length, minilm_linearised, stack_estimate)
from attnlab.papers.rank_collapse.sizes import (BERT_BASE, F32, F64, LOAD_OPS, LOADING, MINILM, TORCH_OP, add,
                                                bert_draw_bytes, by_excess, layer_bytes, load_bytes, load_work,
                                                maps_bytes, pass_work, paths_count, resident_bytes, scaled,
                                                states_bytes)
from attnlab.registry import Experiment, register_experiment
from attnlab.results import PALETTE, ExperimentResult, Figure, Table, bar_figure, line_figure, series
from attnlab.runs.rundir import RunDir, log_metric

EXPERIMENT_ID = "rank-collapse.path-lengths"
SKIP_PATHS = "rank-collapse.skip-paths"  # the notes: with skip layers the cardinality is (H+1)^L
EXACT_TOL = 1e-12
MAX_PATHS = 20000  # the most paths a small stack may have: each is enumerated, one at a time


@dataclass(frozen=True)
class PathLengthsConfig(RunConfig):
    """``stacks`` lists (L, H) pairs written "L:H"; each is enumerated path by path ((H+1)^L terms)."""

    PRESETS = {"quick": {"stacks": ("3:2", "4:3"), "texts": 2, "tokens": 32, "path_samples": 48},
               "paper": {"stacks": ("3:2", "4:3", "6:3", "5:4"), "texts": 8, "tokens": 128, "path_samples": 256}}

    stacks: tuple[str, ...] | None = param(None, "small random stacks 'L:H' for the exact decomposition")
    d_model: int = param(8, "width of the small random stacks")
    stack_tokens: int = param(8, "tokens n of the small stacks' random input")
    texts: int | None = param(None, "texts for MiniLM (pydoc help topics)")
    tokens: int | None = param(None, "tokens per text for MiniLM")
    path_samples: int | None = param(None, "sampled paths per depth for the path-product residual")

    @classmethod
    def normal_form(cls, values: dict[str, Any]) -> dict[str, Any]:
        """stacks written "L:H" (checked: each is parsed here)."""
        v, parsed = super().normal_form(values), []
        for s in tuple(v["stacks"]):
            try:
                L, H = (int(x) for x in str(s).split(":"))
            except ValueError:
                raise ConfigError(f"stacks entries must be 'L:H' with integers, got {s!r}") from None
            if not (1 <= L and 1 <= H and paths_count(L, H) <= MAX_PATHS + 0.5 and (H + 1) ** L <= MAX_PATHS):
                raise ConfigError(f"stack {s!r}: need L, H >= 1 and (H+1)^L <= {MAX_PATHS} paths to enumerate")
            parsed.append(f"{L}:{H}")
        if not parsed:
            raise ConfigError("stacks must list at least one 'L:H'")
        return {**v, "stacks": tuple(parsed)}

    def validate(self) -> None:
        check_int("d_model", self.d_model, minimum=2)
        check_int("stack_tokens", self.stack_tokens, minimum=2)
        check_int("texts", self.texts, minimum=1)
        check_int("tokens", self.tokens, minimum=3, maximum=512)
        check_int("path_samples", self.path_samples, minimum=1)

    def estimate(self) -> Estimate:
        """The small stacks one after another, then MiniLM, float64. Memory, the largest of:

            stack     8 (4 L H d d_h + 2 L H d^2 + L H n^2 + H n (n + d) + 4 (L + 1) n d)   (each "L:H")
            loading   W + 12 P
            MiniLM    W + S + M + max(T, 8 (L' H' d'^2 + 2 B H' n' d' + 4 (L' + 1) B n' d'))

        A stack of L layers of H heads, width d = d_model, d_h = max(1, d // H), on n = stack_tokens
        tokens: its weights (W_Q, W_K, W_V, W_O: 4 L H d d_h), the path weights W_{l,h} = W_V W_O
        (L H d^2, held for the recursion and formed again for every enumerated path: 2 L H d^2), the
        maps (L H n^2) with one layer's logits and values (H n (n + d)), and the terms S_0..S_L of
        the recursion, of the enumeration, the recursion's step and the stacked copy (4 (L + 1) n d).
        The (H + 1)^L paths are enumerated one at a time (never all held; counted in floats, so a
        stack too large to enumerate is refused by its count, never computed as an integer). MiniLM
        (W = 9 bytes per parameter P, L' = 6 blocks, H' = 12 heads, d' = 384) on B = texts texts of
        n' = tokens tokens: S = 8 B (L' + 1) n' d' its states, M = 8 B L' H' n'^2 its maps, T its
        block's temporaries (:mod:`~attnlab.papers.rank_collapse.sizes`), then the path weights,
        an einsum's per-head products (2 B H' n' d') and the terms S_k with their copies. BERT-base at
        random init (the control of the path products, float32): W + the larger of its draw (DRAW_PEAK
        P_b) and its 4 P_b weights with its 12 x 12 maps of B texts of n' tokens (4 B 144 n'^2).

        Work: per stack (H + 1)^L paths, each forming the L path weights (2 L H d^2 d_h) and applying
        at most L maps and L path weights (2 L (n^2 d + n d^2)), 3 L + 3 torch ops, and the recursion
        (L^2 H (2 n^2 d + 2 n d^2)); for MiniLM its loading (2 interpreted operations per parameter),
        one pass, the linearised network and its recursion ((L' + L'^2) B H' (2 n'^2 d' + 2 n' d'^2))
        and path_samples products of depth 1..L' (2 n'^3 a factor) each with an SVD with vectors of
        its n' x n' result; for BERT-base, its draw (2 interpreted operations per parameter), two
        passes (text, random ids) and twice path_samples products of depth 1..12.
        """
        steps = [stack_estimate(*(int(x) for x in s.split(":")), self.d_model, self.stack_tokens,
                                lower=(*by_excess(self, ("d_model", "stack_tokens")), "stacks"))
                 for s in self.stacks]
        N, B, nn = MINILM, self.texts, self.tokens
        L, H, dm = N.layers, N.heads, N.d
        W = resident_bytes([N])
        steps.append(Estimate(W + load_bytes([N]), "MiniLM's weights while it loads", change=LOADING, **load_work([N])))
        rest = F64 * (L * H * dm * dm + 2 * B * H * nn * dm + 4 * (L + 1) * B * nn * dm)
        per_path = {"gemm": sum(2 * k * nn ** 3 for k in range(1, L + 1)),
                    "lapack": L * svd_flops(nn, nn, vectors=True),
                    "calls": TORCH_OP * sum(k + 10 for k in range(1, L + 1))}
        work = add(pass_work(N, B, nn),
                   {"gemm": (L + L * L) * B * H * (2 * nn * nn * dm + 2 * nn * dm * dm),
                    "traffic": 20 * F64 * (L + 1) * B * nn * dm},
                   {k: v * self.path_samples for k, v in per_path.items()})
        steps.append(Estimate(W + states_bytes(N, B, nn) + maps_bytes(N, B, nn) + max(layer_bytes(N, B, nn), rest),
                              f"MiniLM linearised: {B} texts x {nn} tokens, {L + 1} states, {L} x {H} maps and "
                              f"the path terms, float64", **work, lower=by_excess(self, ("tokens", "texts"))))
        Nb = BERT_BASE
        bert_path = {"gemm": sum(2 * k * nn ** 3 for k in range(1, Nb.layers + 1)),
                     "lapack": Nb.layers * svd_flops(nn, nn, vectors=True),
                     "calls": TORCH_OP * sum(k + 10 for k in range(1, Nb.layers + 1))}
        held = F32 * (Nb.params + B * Nb.layers * Nb.heads * nn * nn) + layer_bytes(Nb, B, nn) / 2
        steps.append(Estimate(W + max(bert_draw_bytes(), held),
                              f"BERT-base at random init: a draw ({Nb.params:,} parameters) and its maps on {B} texts "
                              f"x {nn} tokens, float32",
                              **add(scaled(pass_work(Nb, B, nn), 2), scaled(bert_path, 2 * self.path_samples),
                                    {"python": LOAD_OPS * Nb.params}),
                              lower=by_excess(self, ("tokens", "texts"))))
        return total(steps)


def run(cfg: PathLengthsConfig, run_dir: RunDir | None = None) -> ExperimentResult:
    stacks = measure_stacks(cfg, run_dir)
    mini = minilm_linearised(cfg.texts, cfg.tokens, cfg.seed, cfg.path_samples, cfg.device)
    bert = bert_base_products(cfg.texts, cfg.tokens, cfg.seed, cfg.path_samples, cfg.device)
    counts = architecture_counts()
    return ExperimentResult(summary=_summary(cfg, stacks, mini, counts, bert), tables=_tables(stacks, mini),
                            figures=_figures(cfg, stacks, mini, counts), notes=list(NOTES),
                            data={"stacks": [s.to_dict() for s in stacks], "minilm": mini.to_dict(),
                                  "counts": counts,
                                  "bert_base_products": {k: {d: r.to_dict() for d, r in v.items()}
                                                         for k, v in bert.items()}},
                            deviations=deviations())


def deviations() -> list[Deviation]:
    """How this experiment's protocol departs from the notes' and from Dong et al.'s, each with why."""
    return [
        Deviation("minilm-for-bert", "model",
                  "path products of pretrained all-MiniLM-L6-v2's maps (6 layers, depths 1..6), against Dong et al.'s "
                  "BERT-base (12 layers, pretrained and at initialisation)",
                  "no pretrained BERT-base checkpoint is offline; MiniLM is the BERT-family checkpoint attnlab ships",
                  control="in the same run: the same statement on BERT-base at random initialisation (their 'init' "
                          "boxes), depths 1..12"),
        Deviation("pydoc-text", "data",
                  "help topics of Python's pydoc_data.topics, against Dong et al.'s wiki_bio biographies",
                  "wiki_bio is not on this machine (nothing is downloaded)",
                  control="in the same run: BERT-base's path products on random token ids (an input with no text)"),
        Deviation("linearised", "architecture",
                  "MiniLM's path shares are those of its linearised network: attention held at the full model's "
                  "values, LayerNorm and MLP dropped",
                  "the path decomposition (Theorem 2.1 and the remark after it) holds for attention with skips "
                  "alone; the shares are described (info), never judged"),
    ]


def measure_stacks(cfg: PathLengthsConfig, run_dir: RunDir | None = None) -> list[ExactStack]:
    """Every small stack of cfg.stacks decomposed exactly (:func:`~attnlab.papers.rank_collapse.path_shares.exact_stack`),
    one generator for all."""
    g = torch.Generator().manual_seed(cfg.seed)
    stacks = []
    for s in cfg.stacks:
        L, H = (int(x) for x in s.split(":"))
        stacks.append(exact_stack(L, H, cfg.d_model, cfg.stack_tokens, g, cfg.device))
        log_metric(run_dir, {"experiment": EXPERIMENT_ID, "stack": s, "sum_vs_output": stacks[-1].sum_vs_output})
    return stacks


def _summary(cfg: PathLengthsConfig, stacks: list[ExactStack], mini: LinearisedMiniLM,
             counts: dict[str, list[float]], bert: dict[str, dict[int, ProductResiduals]] | None = None) -> list[Check]:
    """The path counts against Dong et al.'s figure, the exactness of the decomposition, and the path products."""
    return [*_count_checks(counts), *_decomposition_checks(cfg, stacks, mini), _product_check(cfg, mini, bert)]


def _count_checks(counts: dict[str, list[float]]) -> list[Check]:
    """BERT-base's shares of paths of length 11 and 12, and MiniLM's number of paths."""
    bert = counts["BERT-base (L=12, H=12)"]
    most = max(range(7), key=lambda k: counts["all-MiniLM-L6-v2 (L=6, H=12)"][k])
    return [
        near(bert[11], 0.38, 0.01, quantity="BERT-base (L=H=12): share of paths of length 11 (C(L,k) H^k / (H+1)^L, "
             "exact)", paper_value="0.38 (Dong et al.'s path-length figure)", where="Dong et al. (2021) §3, "
             "path-length figure", role="own", detail=f"length 12: {bert[12]:.4f}", values={"share_11": bert[11],
                                                                                 "share_12": bert[12]}),
        near(bert[12], 0.38, 0.01, quantity="BERT-base (L=H=12): share of paths of length 12",
             paper_value="0.38 (Dong et al.'s path-length figure)", where="Dong et al. (2021) §3, path-length figure",
             role="own"),
        info("all-MiniLM-L6-v2: number of skip paths (H+1)^L", 13**6, paper_value="(H+1)^L",
             where="§2.1, remark after Theorem 2.1", detail=f"most common length: {most}"),
    ]


def _decomposition_checks(cfg: PathLengthsConfig, stacks: list[ExactStack], mini: LinearisedMiniLM) -> list[Check]:
    """The small stacks' and linearised MiniLM's path sums against their outputs, and MiniLM's mean path length."""
    worst_rec = max(s.recursion_vs_enumeration for s in stacks)
    worst_sum = max(s.sum_vs_output for s in stacks)
    worst_signed = max(abs(sum(s.signed_share) - 1) for s in stacks)
    return [
        at_most(worst_rec, EXACT_TOL, quantity="max |S_k by recursion - S_k by enumerating paths| / max|Y|, small "
                "stacks", role="sanity", detail="stacks " + ", ".join(cfg.stacks) + " (L:H): two computations of "
                "the same sums"),
        at_most(worst_sum, EXACT_TOL, quantity="max |sum_k S_k + 1 b^T - SAN_skip(X)| / max|Y|, small stacks",
                paper_value="exact identity, (H+1)^L paths", where="§2.1, Theorem 2.1 and the remark after it",
                anchor=SKIP_PATHS, falsifier="a small stack with skips whose sum over its (H+1)^L paths misses "
                "SAN_skip(X) by more than 1e-12 of max|Y|",
                detail="stacks " + ", ".join(cfg.stacks) + " (L:H), float64"),
        at_most(worst_signed, EXACT_TOL, quantity="max |sum of signed shares - 1|, small stacks", role="sanity",
                detail="shares of an exact decomposition sum to 1 by construction"),
        at_most(mini.linear_vs_paths, 1e-10, quantity="MiniLM linearised: |sum_k S_k - (Y - 1 b^T)| / max|Y|",
                role="sanity", detail="the linear network's own path sum, P held at the full model's values"),
        info("MiniLM linearised: mean path length by norm share", round(mean_length(mini.norm_share), 4),
             paper_value=f"by count: L H / (H+1) = {6 * 12 / 13:.2f}", where="§2.1, remark after Theorem 2.1",
             detail="an estimate: LayerNorm and MLP dropped, attention fixed (module docstring)"),
    ]


def _product_check(cfg: PathLengthsConfig, mini: LinearisedMiniLM,
                   bert: dict[str, dict[int, ProductResiduals]] | None = None) -> Check:
    """The median residual of MiniLM's path products at depth L against depth 1, named by the deviations that
    touch it and decided only where its control (BERT-base at random init, on the text and on random ids)
    gives the same verdict; without ``bert``, inconclusive."""
    med = [mini.products[k].median for k in sorted(mini.products)]
    row = below(med[-1], med[0], quantity="MiniLM path products: median relative residual (SVD) at depth L, "
                "against depth 1", paper_value="decreases with depth (Dong et al.'s path-product box plot, "
                "BERT pretrained and at init)", where="Dong et al. (2021), path-product figure", role="own",
                deviations=("minilm-for-bert", "pydoc-text"),
                detail=f"{med[0]:.3g} at depth 1 -> {med[-1]:.3g} at depth {len(med)}; "
                       f"{cfg.path_samples} sampled paths per depth",
                values={"median_by_depth": med} | ({} if bert is None else {
                    f"bert_base_{k.replace(' ', '_')}_median_by_depth": [v[d].median for d in sorted(v)]
                    for k, v in bert.items()}))
    if row.verdict not in ("holds", "refuted"):
        return row
    if bert is None:
        return replace(row, cannot_decide="no control run: BERT-base's path products were not measured")
    ctrl = {k: below(v[max(v)].median, v[1].median, role="own") for k, v in bert.items()}
    said = "; ".join(f"{k}: {v[1].median:.3g} at depth 1 -> {v[max(v)].median:.3g} at depth {max(v)}, {ctrl[k].verdict}"
                     for k, v in bert.items())
    if all(c.verdict == row.verdict for c in ctrl.values()):
        return replace(row, control=f"BERT-base at random init (BertConfig(), Dong et al.'s 'init' boxes), this run: "
                                    f"{said}; their pretrained BERT is not offline")
    return replace(row, cannot_decide=f"the model or the input decides it: BERT-base at random init gives {said}")


def _figures(cfg: PathLengthsConfig, stacks: list[ExactStack], mini: LinearisedMiniLM,
             counts: dict[str, list[float]]) -> list[Figure]:
    """Paths by length, the output by length (MiniLM, the largest stack), the residual by length, the products."""
    return [_count_figure(counts), _minilm_shares_figure(cfg, mini), _exact_shares_figure(cfg, stacks),
            _residual_figure(stacks, mini), _products_figure(cfg, mini)]


def _count_figure(counts: dict[str, list[float]]) -> Figure:
    """The share of paths of each length, one curve per architecture."""
    return line_figure(
        "path-count-distribution.png",
        "Share of the (H+1)^L skip paths that have length k (a real head in k layers): "
        "C(L,k) H^k / (H+1)^L, exact. Dong et al.'s figure reads 0.38 at k = 11 and 12 for BERT-base.",
        series=[series(name, list(range(len(c))), c, color=PALETTE[i])
                for i, (name, c) in enumerate(counts.items())],
        xlabel="path length k", ylabel="share of paths", title="How many paths have each length")


def _minilm_shares_figure(cfg: PathLengthsConfig, mini: LinearisedMiniLM) -> Figure:
    """Linearised MiniLM's shares of paths and of the output by path length."""
    return bar_figure(
        "path-shares-minilm.png",
        f"all-MiniLM-L6-v2, linearised (attention fixed at its values in the full model, LayerNorm "
        f"and MLP dropped; an estimate of the real model): share of the output carried by paths of "
        f"length k. Norm share ||S_k||_F / sum_j ||S_j||_F and signed share "
        f"<S_k, Y - 1b^T> / ||Y - 1b^T||^2, mean over {cfg.texts} texts of {cfg.tokens} tokens, "
        "beside the share of paths (count).",
        categories=[str(k) for k in range(mini.L + 1)],
        groups=[{"label": "share of paths (count)", "values": mini.count_share},
                {"label": "norm share", "values": mini.norm_share},
                {"label": "signed share", "values": mini.signed_share}],
        ylabel="share", title="MiniLM: output by path length")


def _exact_shares_figure(cfg: PathLengthsConfig, stacks: list[ExactStack]) -> Figure:
    """The deepest small stack's shares of paths and of the output by path length (exact)."""
    big = max(stacks, key=lambda s: s.L)
    return bar_figure(
        "path-shares-exact.png",
        f"Exact decomposition of a random skip SAN (L={big.L}, H={big.H}, d={cfg.d_model}, "
        f"n={cfg.stack_tokens}, weights N(0, 1/fan_in)): share of the output by path length, every "
        f"one of the (H+1)^L = {(big.H + 1) ** big.L} paths enumerated.",
        categories=[str(k) for k in range(big.L + 1)],
        groups=[{"label": "share of paths (count)", "values": big.count_share},
                {"label": "norm share", "values": big.norm_share},
                {"label": "signed share", "values": big.signed_share}],
        ylabel="share", title="Small stack: exact shares")


def _residual_figure(stacks: list[ExactStack], mini: LinearisedMiniLM) -> Figure:
    """The relative residual of each length's term S_k: linearised MiniLM and the small stacks."""
    return line_figure(
        "path-residual-by-length.png",
        "Relative residual (token mean) of the length-k term S_k: longer paths are closer to rank one. "
        "MiniLM linearised (mean over texts) and the small random stacks (exact).",
        series=[series("MiniLM (linearised)", list(range(mini.L + 1)),
                       [max(y, 1e-17) for y in mini.residual_by_length], color=PALETTE[0])]
        + [series(f"random stack L={s.L}, H={s.H}", list(range(s.L + 1)),
                  [max(y, 1e-17) for y in s.residual_by_length], color=PALETTE[i + 1])
           for i, s in enumerate(stacks)],
        xlabel="path length k", ylabel="relative residual of S_k", yscale="log",
        title="Long paths collapse")


def _products_figure(cfg: PathLengthsConfig, mini: LinearisedMiniLM) -> Figure:
    """The residual of MiniLM's sampled path products against depth: median and quartiles."""
    depths = sorted(mini.products)
    return line_figure(
        "path-product-residual.png",
        f"Dong et al.'s path-product experiment on all-MiniLM-L6-v2: {cfg.path_samples} random paths per "
        "depth k (layers l_1 < ... < l_k, one head each), relative residual ||P - rank1(P)||_{1,inf} / "
        "||P||_{1,inf} of the product of their attention matrices (rank-one SVD residual). Median with "
        "the quartiles dashed.",
        series=[series("median", depths, [mini.products[k].median for k in depths], color=PALETTE[0]),
                series("25th percentile", depths, [mini.products[k].q25 for k in depths], style="dashed",
                       marker=False, color=PALETTE[0]),
                series("75th percentile", depths, [mini.products[k].q75 for k in depths], style="dashed",
                       marker=False, color=PALETTE[0])],
        xlabel="path depth k", ylabel="relative residual of the product", yscale="log",
        title="Products of attention matrices")


def _tables(stacks: list[ExactStack], mini: LinearisedMiniLM) -> list[Table]:
    """Per network and path length: the shares of paths and of the output, and the residual of S_k."""
    return [Table("Share of the output by path length", ["network", "k", "share of paths", "norm share",
                                                         "signed share", "relative residual of S_k"],
                  [[name, k, s.count_share[k], s.norm_share[k], s.signed_share[k], s.residual_by_length[k]]
                   for name, s in [("MiniLM (linearised)", mini)]
                   + [(f"random L={s.L} H={s.H}", s) for s in stacks] for k in range(s.L + 1)],
                  ["text", "int", "float", "float", "float", "float"])]


NOTES = (
    "Exact vs estimated: the small stacks' shares are exact (every path enumerated, checked against the "
    "recursion). MiniLM's are exact for the linearised network (attention matrices fixed at the full "
    "model's values, LayerNorm and MLP removed) and only an estimate for MiniLM itself.",
    "The notes count (H+1)^L paths; the count by length, C(L,k) H^k, is Dong et al.'s figure. The share "
    "of paths and the share of the output differ: the output is carried by paths much shorter than the "
    "typical path.",
)


register_experiment(Experiment(EXPERIMENT_ID,
                    "Theorem 2.1's (H+1)^L skip paths: share of paths and of the output by path length (exact "
                    "for small stacks, linearised MiniLM) and Dong et al.'s path products",
                    PathLengthsConfig, run, anchors=(SKIP_PATHS,)))
