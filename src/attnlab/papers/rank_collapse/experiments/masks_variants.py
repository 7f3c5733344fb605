"""rank-collapse.masks-variants: the residual per layer under attention masks and efficient attention.

Beyond the reference. Wu, Ajorlou, Wang, Jegelka, Jadbabaie (NeurIPS 2024) prove that pure
attention collapses exponentially under every mask whose graph is connected, and report that
local masks (causal, sliding window) slow the collapse. Here the same networks as
rank-collapse.ablations (pretrained all-MiniLM-L6-v2, and the 12-layer attnlab stack on its
embeddings), as pure attention (SAN) and as the full transformer, run with every layer's
attention replaced by one of:

    softmax            softmax(c Q K^T) V, every pair (the model as trained)
    causal             softmax with j <= i
    window w           softmax with |i - j| <= w // 2 (the mask of the catalogue's window graph)
    causal window w    softmax with 0 <= i - j <= w // 2
    linear elu+1       normalised kernel attention phi(Q) (phi(K)^T V) / phi(Q) phi(K)^T 1
    FAVOR+ m           the same with positive random features, unbiased for exp(c q.k)
    Linformer k'       softmax(c Q (E K)^T) (F V), E, F fixed N(0, 1/k') draws (untrained)

with the block's own weights (attnlab.ops.multihead.multi_head_attention with the variant as
its attention function); each is an entry of attnlab.ops.catalogue (softmax, window, linear,
favor+, linformer), the windows applied as masks of exact softmax. A post-LN block is u = LN_1(x + A(x)), z = LN_2(u + FFN(u)); the
SAN is z = A(x). Measured: the relative residual ||res X_l||_{1,inf} / ||X_l||_{1,inf} with
the token-mean residual (Wu et al. measure mu(X) = ||X - 1 mean^T||_F, the Frobenius norm
of the same residual matrix), mean over texts.

Whose statements: none of these is the notes'. Wu et al.'s results (collapse under every
connected mask, local masks slowing it) and Dong et al.'s (skip connections keep the rank) are
in no text in scope, so every judged row is attnlab's own statement, its reading of those
papers (role own: holds / refuted / inconclusive), never a reproduction.

The attentions and the block replica live in :mod:`~attnlab.papers.rank_collapse.attention_variants`.

Deviation (:data:`DEVIATIONS`): the residual here is the relative one in ||.||_{1,inf}, the notes'
norm, where Wu et al. measure the Frobenius norm of the same residual matrix. Every judged row is
also computed with ||X - 1 mean^T||_F / ||X||_F on the same states (its control): a row whose
verdict differs between the two norms is inconclusive.

Every variant but Linformer keeps P 1 = 1 with P >= 0 (a row-stochastic P: an averaging, which
is what collapses); Linformer's effective matrix P_bar F has rows summing to P_bar (F 1), not 1,
and entries of both signs, so no collapse theorem covers it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from attnlab.analysis.residuals import relative_residual
from attnlab.checks import Check, above, below, info
from attnlab.config import RunConfig, check_int, param
from attnlab.deviations import Deviation
from attnlab.errors import ConfigError
from attnlab.estimates import Estimate, total
from attnlab.papers.rank_collapse.attention_variants import forward, frobenius_residual, variants
from attnlab.papers.rank_collapse.sizes import (ATTNLAB_12, F64, LOADING, MINILM, TORCH_OP, TRAFFIC_MAPS,
                                                TRAFFIC_STATES, add, by_excess, load_bytes, load_work, resident_bytes,
                                                scaled, states_bytes)
from attnlab.papers.rank_collapse.stacks import build_model, long_texts, text_batch
from attnlab.registry import Experiment, register_experiment
from attnlab.results import PALETTE, ExperimentResult, Figure, Table, line_figure, series
from attnlab.runs.rundir import RunDir, log_metric

EXPERIMENT_ID = "rank-collapse.masks-variants"
COLLAPSED = 1e-2  # "collapsed": relative residual below this
WU = "Wu et al. (2024), beyond the notes"
NETWORKS = ("pretrained", "attnlab-12")
CONFIGS = ("SAN", "transformer")
NETWORK_TEXT = {"pretrained": "pretrained all-MiniLM-L6-v2",
                "attnlab-12": "12-layer attnlab stack (MiniLM shape, N(0, 1/fan_in) init, on MiniLM embeddings)"}
Curves = dict[str, dict[str, dict[str, list[float]]]]  # network -> block -> attention -> residual per layer
DEVIATIONS = [Deviation(
    "composite-norm", "statistic",
    "the relative residual in the notes' composite norm, ||X - 1 mean^T||_{1,inf} / ||X||_{1,inf}; Wu et al. measure "
    "the Frobenius norm of the same residual matrix, mu(X) = ||X - 1 mean^T||_F",
    "the notes' norm (§2.2, Definition 2.1), as every rank-collapse experiment measures it",
    control="in the same run: every judged row with ||X - 1 mean^T||_F / ||X||_F on the same states")]
"""Where this experiment's protocol departs from its sources' (:mod:`attnlab.deviations`)."""


@dataclass(frozen=True)
class MasksVariantsConfig(RunConfig):
    PRESETS = {"quick": {"texts": 2, "tokens": 32, "window": 4, "favor_features": 64, "linformer_k": 8},
               "paper": {"texts": 8, "tokens": 128, "window": 8, "favor_features": 256, "linformer_k": 32}}

    texts: int | None = param(None, "texts (pydoc help topics)")
    tokens: int | None = param(None, "tokens n per text")
    window: int | None = param(None, "sliding window w (|i - j| <= w // 2)")
    favor_features: int | None = param(None, "random features m of FAVOR+")
    linformer_k: int | None = param(None, "Linformer's projected length k'")

    def validate(self) -> None:
        check_int("texts", self.texts, minimum=1)
        check_int("tokens", self.tokens, minimum=4, maximum=512)
        check_int("window", self.window, minimum=2, maximum=self.tokens)
        check_int("favor_features", self.favor_features, minimum=1)
        check_int("linformer_k", self.linformer_k, minimum=1)
        if self.linformer_k > self.tokens:
            raise ConfigError(f"linformer_k={self.linformer_k} exceeds tokens={self.tokens}: use linformer_k <= tokens")

    def estimate(self) -> Estimate:
        """Pretrained MiniLM, then the 12-layer attnlab stack, each under 2 blocks (SAN, transformer) x 7
        attentions, float64 (:mod:`~attnlab.papers.rank_collapse.sizes` for the shapes). Memory, the
        largest of:

            loading   W + 12 P_MiniLM
            network   W + 8 B n d + 2 S + 8 B (H n a + n (4 d + 2 d_ff)) + 16 k' n + 2 n^2   (each network)

        W = MiniLM's weights (9 bytes per parameter, P_MiniLM = 22.6M) and the attnlab stack's (8 bytes
        per parameter, 33.2M); B = texts texts of n = tokens tokens, X_0 (8 B n d), width d = 384,
        H = 12 heads of d_head = 32, d_ff = 1536; S = 8 B (L + 1) n d the states of L blocks (the
        previous variant's still held while the next runs: 2 S); the largest attention's temporaries
        per head and token a = max(3 n (softmax, masked: logits, exp, weights), 5 m (FAVOR+, m =
        favor_features: the features of q and k with their exponents), 3 k' (Linformer, k' =
        linformer_k), 3 d_head (elu+1)); q, k, v, the heads' output and the FFN's hidden outputs; E, F
        (k' x n) and the two window masks (n x n, bool).

        Work: loading MiniLM (2 interpreted operations per parameter); per network, block and
        attention, L blocks on B texts: the projections 8 n d^2 and the FFN 4 n d d_ff (transformer
        only); the attention's products, 4 H n^2 d_head (the four softmax
        variants), 4 H n d_head^2 (elu+1), 8 H n m d_head (FAVOR+: the features of q and k, then the
        two products), 8 n k' d (Linformer: E K, F V, the logits and the output);
        element-wise work of a softmax pass on the n^2 maps (100 passes of 8 bytes each) or 40 on the
        features, 40 passes over the states and FFN outputs; 40 torch ops a block.
        """
        B, n, m, kp = self.texts, self.tokens, self.favor_features, self.linformer_k
        N = MINILM
        d, H, dh, f = N.d, N.heads, N.d_head, N.d_ff
        W = resident_bytes([MINILM, ATTNLAB_12])
        steps = [Estimate(W + load_bytes([MINILM]), "MiniLM's weights while it loads", change=LOADING, **load_work([MINILM]))]
        a = max(3 * n, 5 * m, 3 * kp, 3 * dh)
        names = by_excess(self, ("tokens", "texts", "favor_features", "linformer_k"))
        if a > 3 * n:  # a feature count, not n, sets the attention's size
            names = by_excess(self, ("favor_features" if 5 * m >= 3 * kp else "linformer_k", "tokens", "texts"))
        for net in (MINILM, ATTNLAB_12):
            L = net.layers
            S = states_bytes(net, B, n)
            peak = (W + F64 * B * n * d + 2 * S + F64 * B * (H * n * a + n * (4 * d + 2 * f))
                    + F64 * 2 * kp * n + 2 * n * n)
            attention = {"gemm": 4 * (4 * H * n * n * dh) + 4 * H * n * dh * dh + 8 * H * n * m * dh
                         + 8 * n * kp * d + 7 * 8 * n * d * d,
                         "traffic": F64 * (4 * TRAFFIC_MAPS * H * n * n + TRAFFIC_STATES * H * n * (2 * dh + m + kp)
                                           + 7 * TRAFFIC_STATES * n * d)}
            ffn = {"gemm": 7 * 4 * n * d * f, "traffic": F64 * 7 * TRAFFIC_STATES * n * f}
            work = add(scaled(attention, 2 * B * L), scaled(ffn, B * L),
                       {"traffic": 2 * 7 * (L + 1) * 10 * F64 * B * n * d, "calls": 2 * 7 * 40 * L * TORCH_OP})
            steps.append(Estimate(peak, f"{net.name}: {L + 1} states of {B} texts x {n} tokens twice and one "
                                        f"block's attention temporaries ({H} heads x {n} tokens x {a}), float64",
                                  **work, lower=names))
        return total(steps)


def _layers(ys: list[float]) -> str:
    """The residuals of the layers, joined by arrows."""
    return " -> ".join(f"{y:.2g}" for y in ys)


def run(cfg: MasksVariantsConfig, run_dir: RunDir | None = None) -> ExperimentResult:
    curves, frobenius = measure_both(cfg, run_dir)
    return ExperimentResult(summary=_summary(cfg, curves, frobenius), tables=_tables(curves),
                            figures=_figures(cfg, curves), notes=list(NOTES),
                            data={"curves": curves, "frobenius": frobenius}, deviations=list(DEVIATIONS))


def measure(cfg: MasksVariantsConfig, run_dir: RunDir | None = None) -> Curves:
    """The relative residual per layer (token mean, ||.||_{1,inf}, mean over texts) of every network, block and
    attention, in the order of NETWORKS, CONFIGS and
    :meth:`~attnlab.papers.rank_collapse.attention_variants.AttentionVariants.named`."""
    return measure_both(cfg, run_dir)[0]


def measure_both(cfg: MasksVariantsConfig, run_dir: RunDir | None = None) -> tuple[Curves, Curves]:
    """:func:`measure`'s curves, and the same states' Frobenius residual
    (:func:`~attnlab.papers.rank_collapse.attention_variants.frobenius_residual`,
    mean over texts), the control of :data:`DEVIATIONS`."""
    g = torch.Generator(device=cfg.device).manual_seed(cfg.seed)
    batch = text_batch(long_texts(cfg.texts, cfg.tokens, cfg.seed), cfg.tokens, cfg.device)
    curves: Curves = {}
    frobenius: Curves = {}
    for net in NETWORKS:
        model = build_model(net, cfg.seed, cfg.device)
        fns = variants(cfg.window, cfg.favor_features, cfg.linformer_k, cfg.tokens, g, cfg.device).named()
        for conf in CONFIGS:
            for name, fn in fns.items():
                hidden = forward(model, batch.X0, fn, conf == "transformer")
                curves.setdefault(net, {}).setdefault(conf, {})[name] = [
                    float(relative_residual(h, "mean").mean()) for h in hidden]
                frobenius.setdefault(net, {}).setdefault(conf, {})[name] = [
                    float(frobenius_residual(h).mean()) for h in hidden]
            log_metric(run_dir, {"experiment": EXPERIMENT_ID, "network": net, "config": conf,
                                 "softmax_last": curves[net][conf]["softmax"][-1]})
    return curves, frobenius


def _names(curves: Curves) -> list[str]:
    """The attention labels, in the order measured."""
    return list(curves[NETWORKS[-1]][CONFIGS[-1]])


def _at(curves: Curves, net: str, conf: str, name: str, l: int) -> float:
    """The relative residual of ``net`` as ``conf`` with attention ``name`` at layer l."""
    return curves[net][conf][name][l]


def _summary(cfg: MasksVariantsConfig, curves: Curves, frobenius: Curves | None = None) -> list[Check]:
    """Per network: local masks against none, collapse under the dense and local variants, Linformer, the
    transformer; with ``frobenius``, each judged row named by its deviation and decided with its control
    (:func:`_with_control`)."""
    rows = [c for net, l in (("pretrained", 3), ("attnlab-12", 2)) for c in _network_checks(cfg, curves, net, l)]
    if frobenius is None:
        return rows
    controls = [c for net, l in (("pretrained", 3), ("attnlab-12", 2)) for c in _network_checks(cfg, frobenius, net, l)]
    return [_with_control(a, b) for a, b in zip(rows, controls)]


def _with_control(row: Check, ctrl: Check) -> Check:
    """``row`` (in ||.||_{1,inf}) named by the deviation "composite-norm", and kept decided only where ``ctrl``
    (the same row in the Frobenius norm) gives the same verdict; otherwise inconclusive: the norm decides it."""
    if row.role != "own":
        return row
    row = replace(row, deviations=("composite-norm",))
    if row.verdict not in ("holds", "refuted"):
        return row
    if ctrl.verdict == row.verdict:
        return replace(row, control=f"the same row with the Frobenius residual ||X - 1 mean^T||_F / ||X||_F (Wu et al.'s "
                                    f"norm), this run: {ctrl.measured_text} -> {ctrl.verdict}")
    return replace(row, cannot_decide=f"the norm decides it: {row.verdict} in ||.||_{{1,inf}}, {ctrl.verdict} with the "
                                      f"Frobenius residual ({ctrl.measured_text}, Wu et al.'s norm)")


def _network_checks(cfg: MasksVariantsConfig, curves: Curves, net: str, l: int) -> list[Check]:
    """The checks of one network, the local masks compared at layer l."""
    names, w = _names(curves), cfg.window
    full, local = _at(curves, net, "SAN", "softmax", l), min(_at(curves, net, "SAN", v, l) for v in
                                                             ("causal", f"window w={w}", f"causal window w={w}"))
    out = [above(local, full, quantity=f"{net}, SAN at l={l}: least residual under a local mask (causal / "
                 "windows), against no mask", paper_value="local masks slow the collapse", where=WU, role="own",
                 detail=f"{local:.3g} vs {full:.3g} without a mask; token-mean relative residual, "
                        "mean over texts", values={"local": local, "no_mask": full})]
    stoch = [v for v in names if not v.startswith("Linformer")]
    local = [v for v in stoch if "causal" in v or "window" in v]
    dense = [v for v in stoch if v not in local]
    L = len(curves[net]["SAN"]["softmax"]) - 1
    out.append(below(max(_at(curves, net, "SAN", v, -1) for v in dense), COLLAPSED,
                     quantity=f"{net}, SAN: largest last-layer residual over the dense row-stochastic variants",
                     paper_value="every connected mask collapses", where=WU, role="own",
                     detail=", ".join(f"{v}: {_at(curves, net, 'SAN', v, -1):.2g}" for v in dense),
                     values={v: _at(curves, net, "SAN", v, -1) for v in dense}))
    out.append(below(max(_at(curves, net, "SAN", v, -1) for v in local), COLLAPSED,
                     quantity=f"{net}, SAN: largest last-layer residual under the local masks",
                     paper_value="every connected mask collapses (exponentially, as the depth grows)",
                     where=WU, role="own", cannot_decide=f"the collapse under a local mask is a limit in depth: {L} layers "
                     f"cannot decide it (a window of half-width {w // 2} reaches {L * (w // 2)} of "
                     f"{cfg.tokens} tokens in {L} layers)",
                     detail=", ".join(f"{v}: {_layers(curves[net]['SAN'][v])}" for v in local),
                     values={v: curves[net]["SAN"][v] for v in local}))
    lf = names[-1]
    out.append(info(f"{net}, SAN with {lf}: last-layer residual", _at(curves, net, "SAN", lf, -1),
                    paper_value="not covered (P_bar F is not row-stochastic)", where=WU,
                    detail="random E, F; the effective matrix has entries of both signs"))
    low = min(_at(curves, net, "transformer", v, -1) for v in names)
    out.append(above(low, COLLAPSED, quantity=f"{net}, transformer: smallest last-layer residual over all "
                     "variants", paper_value="skip connections keep the rank",
                     where="Dong et al. (2021) §3; " + WU, role="own",
                     detail=", ".join(f"{v}: {_at(curves, net, 'transformer', v, -1):.2g}" for v in names)))
    return out


def _figures(cfg: MasksVariantsConfig, curves: Curves) -> list[Figure]:
    """The relative residual per layer under every attention, one figure per network and block."""
    names = _names(curves)
    figs = []
    for net in NETWORKS:
        for conf in CONFIGS:
            L = len(curves[net][conf]["softmax"])
            figs.append(line_figure(
                f"variants-{net}-{conf.lower()}.png",
                f"{NETWORK_TEXT[net]}, {'pure attention (SAN)' if conf == 'SAN' else 'full post-LN transformer'}: "
                "relative residual per layer "
                "with the token-mean residual (||X - 1 mean^T||_{1,inf} / ||X||_{1,inf}), every layer's attention "
                f"replaced by a mask or an efficient variant; mean over {cfg.texts} texts of {cfg.tokens} tokens. "
                "Values at ~1e-16 are float64 rounding.",
                series=[series(v, list(range(L)), [max(y, 1e-17) for y in curves[net][conf][v]],
                               color=PALETTE[i % len(PALETTE)], style="dashed" if i >= len(PALETTE) else "solid")
                        for i, v in enumerate(names)],
                xlabel="layer l", ylabel="relative residual", yscale="log", title=f"{net}, {conf}"))
    return figs


def _tables(curves: Curves) -> list[Table]:
    """The relative residual at layers 1, 2, 3 and the last, per network, block and attention."""
    return [Table("Relative residual (token mean) at layers 1, 2, 3 and the last, per attention variant",
                  ["network", "block", "attention", "l=1", "l=2", "l=3", "last"],
                  [[net, conf, v, *(c[l] for l in (1, 2, 3)), c[-1]]
                   for net in NETWORKS for conf in CONFIGS for v, c in curves[net][conf].items()],
                  ["text"] * 3 + ["float"] * 4)]


NOTES = (
    "Wu et al. measure mu(X) = ||X - 1 mean^T||_F (unnormalised, Frobenius); here the same residual matrix "
    "in the composite norm relative to ||X||_{1,inf}, as in the other rank-collapse figures.",
    "A window of half-width w/2 links tokens at most L w/2 apart after L layers; with n tokens the "
    "averaging cannot reach every token before L >= 2n/w, so the windowed SANs here (L w/2 < n) cannot "
    "have collapsed yet: the mask slows the collapse by lengthening the graph's diameter.",
    "The efficient variants replace the attention of a model trained with exact softmax, without "
    "retraining: they show how each approximation changes the averaging, not how a model trained with it "
    "would behave.",
)


register_experiment(Experiment(EXPERIMENT_ID,
                    "Beyond the reference: residual per layer under causal and sliding-window masks (Wu et al. 2024) "
                    "and attnlab's efficient attentions (linear, FAVOR+, Linformer)",
                    MasksVariantsConfig, run))
