"""The relative residual per layer of a network's hidden states, as rank-collapse.ablations measures it.

For every hidden state X_l (l = 0: the embedding output; l >= 1: block l's output) of B inputs, the
relative residual r(X_l) = ||res(X_l)||_{1,inf} / ||X_l||_{1,inf} under the residuals of
:mod:`attnlab.analysis.residuals` ("mean", "svd", "composite"; "two" in the notes' 2-norm), its mean and
standard deviation over the inputs (:func:`per_layer`, :class:`Curve`), every kind of one pass
(:func:`layer_curves`, stopping before a state that overflows float64), the three residuals of the short
sequences (:func:`composite_curves`), Dong et al.'s random-init BERT-base per draw
(:func:`measure_bert_base`), and what the experiment stores of all of them (:class:`Measured`).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnlab.analysis.residuals import composite_norm, relative_residual, residual, spectral_norm
from attnlab.papers.rank_collapse import bert_base
from attnlab.runs.rundir import RunDir, log_metric
from attnlab.stored import Stored

SMOLLM2_LAYERS = 30
OVERFLOW = 1e100  # a state with an entry above this is counted as overflowed (its norms would reach inf)
COMPOSITE_KINDS = ("mean", "composite", "svd")  # on the short sequences ("two" = "mean" in ||.||_{1,inf})


def per_layer(hidden: list[torch.Tensor], kind: str) -> tuple[list[float], list[float]]:
    """Mean and standard deviation over the batch of r(X_l), l = 0..L. ``kind`` "two" is the notes'
    residual in the notes' norm, ||X_l - 1 x^T||_2 / ||X_l||_2; the others are in ||.||_{1,inf}."""
    if kind == "two":
        r = torch.stack([spectral_norm(residual(h, "two").matrix) / spectral_norm(h) for h in hidden])
    else:
        r = torch.stack([relative_residual(h, kind) for h in hidden])  # (L+1, B)
    std = r.std(-1) if r.shape[-1] > 1 else torch.zeros_like(r[:, 0])
    return r.mean(-1).tolist(), std.tolist()


KINDS = ("mean", "svd", "two")  # the residuals of every state, in the order they are stored


@dataclass(frozen=True)
class Curve(Stored):
    """One relative residual per layer, over the B inputs (:func:`per_layer`).

    Attributes:
        mean: [mean over the inputs of r(X_l) for l = 0..L]; layer 0 is the embedding output.
        std: [standard deviation over the inputs of r(X_l) for l = 0..L] (with Bessel's correction;
            0 for one input).
    """

    mean: list[float]
    std: list[float]


@dataclass(frozen=True)
class LayerCurves:
    """The relative residual per layer of one network under one ablation (:func:`layer_curves`),
    under each residual of the states X_0..X_L it ran through.

    Attributes:
        token_mean: r(X_l) = ||X_l - 1 mean^T||_{1,inf} / ||X_l||_{1,inf}, mean = the token mean
            X_l^T 1 / n (kind "mean": Dong et al.'s measure; also the notes' 2-norm argmin).
        svd: ||X_l - sigma_1 u_1 v_1^T||_{1,inf} / ||X_l||_{1,inf}, X_l minus its best rank-one
            approximation (kind "svd").
        two: ||X_l - 1 x^T||_2 / ||X_l||_2 with x the notes' 2-norm argmin (the token mean), the
            notes' residual in the notes' norm (kind "two").
        overflow: the first layer l whose state overflows (an entry not finite or above
            :data:`OVERFLOW`), where every curve stops (they hold layers 0..l-1); None when every
            state is finite.
    """

    token_mean: Curve
    svd: Curve
    two: Curve
    overflow: int | None

    def curve(self, kind: str) -> Curve:
        """The curve of residual ``kind``: "mean" (:attr:`token_mean`), "svd" or "two"."""
        return {"mean": self.token_mean, "svd": self.svd, "two": self.two}[kind]

    @property
    def by_layer(self) -> list[float]:
        """The token-mean relative residual per layer, mean over the inputs (:attr:`token_mean`'s mean)."""
        return self.token_mean.mean

    @property
    def last(self) -> float:
        """The token-mean relative residual of the last state measured, mean over the inputs."""
        return self.token_mean.mean[-1]

    def to_dict(self) -> dict:
        """The stored form: {"mean": curve, "svd": curve, "two": curve, "overflow": l or None}."""
        return {**{kind: self.curve(kind).to_dict() for kind in KINDS}, "overflow": self.overflow}


@dataclass(frozen=True)
class CompositeCurves:
    """Three residuals of the same short states X_0..X_L (``composite_texts`` texts of
    ``composite_tokens`` tokens), all in ||.||_{1,inf}, each [mean over the texts of the relative
    residual at layer l for l = 0..L].

    Attributes:
        token_mean: ||X_l - 1 mean^T||_{1,inf} / ||X_l||_{1,inf} (kind "mean").
        composite: min_x ||X_l - 1 x^T||_{1,inf} / ||X_l||_{1,inf}, the exact argmin over shifts
            (a linear program per matrix; kind "composite"), never above :attr:`token_mean`.
        svd: ||X_l - sigma_1 u_1 v_1^T||_{1,inf} / ||X_l||_{1,inf} (kind "svd").
    """

    token_mean: list[float]
    composite: list[float]
    svd: list[float]

    def items(self) -> list[tuple[str, list[float]]]:
        """(kind, per-layer values) in the order of :data:`COMPOSITE_KINDS`."""
        by_kind = {"mean": self.token_mean, "composite": self.composite, "svd": self.svd}
        return [(kind, by_kind[kind]) for kind in COMPOSITE_KINDS]

    def to_dict(self) -> dict[str, list[float]]:
        """The stored form: {"mean": [...], "composite": [...], "svd": [...]}."""
        return dict(self.items())


@dataclass(frozen=True)
class Measured:
    """What :func:`~attnlab.papers.rank_collapse.experiments.ablations.measure` returns: the relative
    residual per layer of every network measured, under every ablation.

    Attributes:
        curves: network -> ablation of :data:`~attnlab.papers.rank_collapse.stacks.VARIANTS` (attnlab's
            switches, each part off unless named) -> its :class:`LayerCurves`; networks in the order of
            ``models``, a skipped one left out.
        dong: network -> ablation of :data:`~attnlab.papers.rank_collapse.stacks.DONG_VARIANTS` (Dong et
            al.'s surgery, LayerNorm kept) -> its :class:`LayerCurves`.
        composite: network -> ablation -> :class:`CompositeCurves` on the short sequences; {} for a
            network measured without them (not in ``composite_models``, or ``composite_texts`` = 0).
        composite_minus_mean: the largest of 0 and, over the short states and texts,
            (||X - 1 x*^T||_{1,inf} - ||X - 1 mean^T||_{1,inf}) / ||X||_{1,inf}, x* the exact
            argmin: 0 up to the linear program's tolerance (0.0 when none was computed).
        dong_san_vs_san_ln: max over every state and entry of |Dong et al.'s SAN - attnlab's
            SAN+LN| (the same network through two code paths).
        texts, tokens: B and n of MiniLM's batch (and of attnlab-12's, which reads MiniLM's embeddings).
        skipped: network -> why it was not measured (SmolLM2 without its wheel).
        smollm2_texts, smollm2_tokens, smollm2_layers: SmolLM2's B, n and number of blocks run, as
            configured (also when it was not measured).
        bert: Dong et al.'s random-init BERT-base per draw (:class:`BertBaseRuns`); None without draws.
    """

    curves: dict[str, dict[str, LayerCurves]]
    dong: dict[str, dict[str, LayerCurves]]
    composite: dict[str, dict[str, CompositeCurves]]
    composite_minus_mean: float
    dong_san_vs_san_ln: float
    texts: int
    tokens: int
    skipped: dict[str, str]
    smollm2_texts: int
    smollm2_tokens: int
    smollm2_layers: int
    bert: BertBaseRuns | None = None

    def sizes(self, model: str) -> tuple[int, int]:
        """(texts, tokens) of the batch ``model`` was measured on."""
        return (self.smollm2_texts, self.smollm2_tokens) if model == "smollm2" else (self.texts, self.tokens)

    def to_dict(self) -> dict:
        """The stored form (results.json "data"): the same keys as the attributes, the curves as
        nested dicts (model -> variant -> :meth:`LayerCurves.to_dict`), SmolLM2's sizes under
        "smollm2" as {"texts", "tokens", "layers"}."""
        def nested(table):
            return {m: {v: c.to_dict() for v, c in by_variant.items()} for m, by_variant in table.items()}

        return {"curves": nested(self.curves), "dong": nested(self.dong), "composite": nested(self.composite),
                "composite_minus_mean": self.composite_minus_mean, "dong_san_vs_san_ln": self.dong_san_vs_san_ln,
                "texts": self.texts, "tokens": self.tokens, "skipped": dict(self.skipped),
                "smollm2": {"texts": self.smollm2_texts, "tokens": self.smollm2_tokens,
                            "layers": self.smollm2_layers},
                "bert": None if self.bert is None else self.bert.to_dict()}


BERT_VARIANTS = {"text": {"SAN": None, "SAN+skip": None, "SAN+MLP": None, "transformer": None,
                          bert_base.NOTES_SAN: None},
                 "random ids": {"SAN": 2, "SAN+skip": None, "transformer": None}}
"""What BERT-base runs on each input (:data:`~attnlab.papers.rank_collapse.bert_base.INPUTS`), variant -> the
blocks it runs through (None: all 12): on the text Dong et al.'s four variants and the notes' SAN (every part
off); on random ids what the rows set beside their numbers read (SAN at l = 1, 2; SAN+skip and transformer
at l = 12)."""


@dataclass(frozen=True)
class BertBaseRuns:
    """Dong et al.'s random-init BERT-base (:mod:`~attnlab.papers.rank_collapse.bert_base`), float32, one
    draw per seed, under :data:`BERT_VARIANTS`.

    Attributes:
        seeds: the draws' seeds.
        curves: input -> variant -> one :class:`Curve` per draw (in the order of ``seeds``): the mean and
            standard deviation over the texts of the token-mean relative residual r(X_l), l = 0..k.
        texts, tokens: B and n of each input.
    """

    seeds: list[int]
    curves: dict[str, dict[str, list[Curve]]]
    texts: int
    tokens: int

    def at(self, kind: str, variant: str, layer: int) -> list[float]:
        """r(X_layer) on input ``kind`` under ``variant``, mean over the texts, one value per draw."""
        return [c.mean[layer] for c in self.curves[kind][variant]]

    def spread(self, kind: str, variant: str, layer: int) -> list[float]:
        """The standard deviation over the texts of r(X_layer), one value per draw."""
        return [c.std[layer] for c in self.curves[kind][variant]]

    def to_dict(self) -> dict:
        """The stored form: seeds, texts, tokens, "dtype": "float32", curves as input -> variant -> [per draw
        {"mean": [...], "std": [...]}]."""
        return {"seeds": list(self.seeds), "texts": self.texts, "tokens": self.tokens, "dtype": "float32",
                "curves": {k: {v: [c.to_dict() for c in cs] for v, cs in by.items()}
                           for k, by in self.curves.items()}}


def measure_bert_base(seed: int, draws: int, texts: int, tokens: int, device: str = "cpu",
                      run_dir: RunDir | None = None, experiment: str = "rank-collapse.ablations") -> BertBaseRuns:
    """``draws`` draws of BERT-base (seeds seed, seed + 1, ...), each run under :data:`BERT_VARIANTS` on
    ``texts`` help topics of ``tokens`` tokens that ``seed`` picks and on random ids drawn from ``seed`` (the
    same inputs for every draw), one draw held at a time; each draw's last transformer value on the text
    logged to ``run_dir`` under ``experiment``."""
    ids = {kind: bert_base.input_ids(kind, texts, tokens, seed).to(device) for kind in BERT_VARIANTS}
    seeds = [seed + i for i in range(draws)]
    curves: dict[str, dict[str, list[Curve]]] = {kind: {v: [] for v in vs} for kind, vs in BERT_VARIANTS.items()}
    for s in seeds:
        model = bert_base.bert_base_random(s, device=device)
        for kind, variants in BERT_VARIANTS.items():
            for v, layers in variants.items():
                curves[kind][v].append(Curve(*per_layer(bert_base.states(model, ids[kind], v, layers), "mean")))
        log_metric(run_dir, {"experiment": experiment, "model": "bert-base", "seed": s,
                             "transformer_last_text": curves["text"]["transformer"][-1].mean[-1]})
        del model
    return BertBaseRuns(seeds, curves, texts, tokens)


def layer_curves(hidden: list[torch.Tensor]) -> LayerCurves:
    """Every kind's mean and std per layer; the curves stop before the first state that overflows
    (an entry that is not finite or above :data:`OVERFLOW`, where its norms would overflow float64:
    an un-normalised pre-norm stack), whose layer is ``overflow``."""
    bad = next((l for l, h in enumerate(hidden)
                if not bool(torch.isfinite(h).all()) or float(h.abs().max()) > OVERFLOW), None)
    hidden = hidden if bad is None else hidden[:bad]
    mean, svd, two = (Curve(*per_layer(hidden, kind)) for kind in KINDS)
    return LayerCurves(token_mean=mean, svd=svd, two=two, overflow=bad)


def composite_curves(hidden: list[torch.Tensor]) -> tuple[CompositeCurves, float]:
    """The three residuals of the short states X_0..X_L (:class:`CompositeCurves`), and the largest of 0 and,
    over the states and texts, (||X - 1 x*^T||_{1,inf} - ||X - 1 mean^T||_{1,inf}) / ||X||_{1,inf} with x* the
    exact argmin: 0 up to the linear program's tolerance, as the row mean is a feasible shift."""
    curves = CompositeCurves(token_mean=per_layer(hidden, "mean")[0], composite=per_layer(hidden, "composite")[0],
                             svd=per_layer(hidden, "svd")[0])
    worst_gap = 0.0
    for h in hidden:  # the exact argmin can never do worse than the row mean (a feasible shift)
        c, mn = residual(h, "composite").norm, residual(h, "mean").norm
        worst_gap = max(worst_gap, float(((c - mn) / composite_norm(h)).max()))
    return curves, worst_gap
