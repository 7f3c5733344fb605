"""Dong et al.'s (2021) residual curves of BERT, read from their vector figure.

Dong, Cordonnier, Loukas, "Attention is not all you need: pure attention loses rank doubly
exponentially with depth" (ICML 2021), the BERT panels of their residual figure ("BERT at
initialization", "pretrained BERT"): for each of their four variants (SAN, SAN + MLP, SAN + skip,
transformer, LayerNorm kept in every one) the mean over 32 wiki_bio sequences of 128 tokens of

    r(X_l) = ||X_l - 1 mean^T||_{1,inf} / ||X_l||_{1,inf},   l = 0 (the embedding output) .. 12,

and a band of one standard deviation over the sequences, in float32 (their notebook
``paper-plotting/walking_casual_transformers.ipynb``: ``AutoModel.from_config`` of bert-base-cased's
config for a new random draw per variant, ``from_pretrained`` otherwise; the band is ``ratios.std``).

Where the numbers come from. The notes (§2.2) cite the paper and print none of these numbers,
so every row that compares with them is attnlab's own statement (role own). The numbers are read
from the paper's own vector file, ``paper-plotting/figures/residual_BERT_vert.pdf`` of
github.com/twistedcubic/attention-rank-collapse (commit 5ad11065cab2918de6b4316260a1697f80ced425):
its page stream draws each curve as 13 points x = layer 0..12 and each band as a polygon of the
13 lower and 13 upper ends, in points printed to 1e-6 pt; the grid lines at 0 and 1 of each panel
(y = 252.36847 and 405.154159 pt for the top panel, at initialization; 41.76847 and 194.554159 pt
for the bottom one, pretrained) map a point's y to r = (y - y_0) / (y_1 - y_0), so the values hold
to about 1e-8. Two checks of the reading: each band's centre is its curve to every digit printed,
and the four pretrained curves, which share X_0 (one checkpoint, the same sequences), all read
0.6872 at l = 0. At initialization each variant is its own random draw, so the four X_0 differ
(0.6118, 0.5974, 0.6072, 0.5971). The collapsed values (SAN from l = 3 at initialization, 1.9e-7)
are float32 rounding.
"""

from __future__ import annotations

from dataclasses import dataclass

SOURCE = ("Dong et al. (2021), residual figure, BERT panels, read from paper-plotting/figures/residual_BERT_vert.pdf "
          "(twistedcubic/attention-rank-collapse @ 5ad1106)")
VARIANTS = ("SAN", "SAN+MLP", "SAN+skip", "transformer")
SEQUENCES, TOKENS, LAYERS = 32, 128, 12  # their batch: the first 32 wiki_bio test sequences of 128 tokens


@dataclass(frozen=True)
class DongCurve:
    """One variant's curve: ``mean[l]`` the mean over their 32 sequences of r(X_l), ``std[l]`` the
    standard deviation over the sequences (their band), l = 0..12."""

    mean: tuple[float, ...]
    std: tuple[float, ...]

    def __post_init__(self) -> None:
        assert len(self.mean) == len(self.std) == LAYERS + 1


BERT_INIT = {
    "SAN": DongCurve(
        (0.6118, 0.01758, 7.003e-07, 1.898e-07, 1.898e-07, 1.898e-07, 1.964e-07, 1.833e-07, 1.964e-07, 1.898e-07,
         1.898e-07, 1.964e-07, 1.898e-07),
        (0.01381, 0.0009919, 1.211e-07, 1.964e-08, 1.964e-08, 1.964e-08, 1.636e-08, 1.309e-08, 2.291e-08, 1.964e-08,
         1.964e-08, 1.636e-08, 1.964e-08)),
    "SAN+MLP": DongCurve(
        (0.5974, 0.01744, 8.77e-07, 1.964e-07, 1.964e-07, 1.964e-07, 1.898e-07, 1.964e-07, 1.964e-07, 1.964e-07,
         2.029e-07, 1.964e-07, 1.898e-07),
        (0.01304, 0.001021, 1.44e-07, 1.964e-08, 1.964e-08, 1.309e-08, 1.636e-08, 1.309e-08, 2.291e-08, 2.618e-08,
         1.636e-08, 1.309e-08, 1.964e-08)),
    "SAN+skip": DongCurve(
        (0.6072, 0.5649, 0.5588, 0.5651, 0.5625, 0.5517, 0.529, 0.5026, 0.4959, 0.4874, 0.4719, 0.463, 0.4489),
        (0.01137, 0.01147, 0.01292, 0.01243, 0.01337, 0.01295, 0.01206, 0.01186, 0.01131, 0.01115, 0.01045, 0.00881,
         0.008547)),
    "transformer": DongCurve(
        (0.5971, 0.5629, 0.5351, 0.5654, 0.5369, 0.5292, 0.4932, 0.4635, 0.4393, 0.4137, 0.4059, 0.3645, 0.3453),
        (0.01252, 0.0146, 0.01119, 0.01668, 0.01582, 0.01444, 0.0143, 0.01177, 0.01271, 0.01214, 0.0099, 0.009432,
         0.0098)),
}
"""BERT at initialization (bert-base-cased's config, transformers' random draw), per variant."""

BERT_PRETRAINED = {
    "SAN": DongCurve(
        (0.6872, 0.6758, 0.3153, 0.1389, 0.03079, 0.003492, 1.63e-05, 2.094e-07, 2.029e-07, 1.964e-07, 1.636e-07,
         1.964e-07, 1.964e-07),
        (0.01634, 0.06273, 0.07225, 0.07279, 0.04562, 0.01213, 8.135e-05, 2.618e-08, 1.636e-08, 2.291e-08, 2.618e-08,
         2.291e-08, 2.291e-08)),
    "SAN+MLP": DongCurve(
        (0.6872, 0.4334, 0.2093, 0.04017, 0.002169, 3.792e-05, 2.16e-07, 2.029e-07, 1.898e-07, 2.16e-07, 2.16e-07,
         2.291e-07, 2.356e-07),
        (0.01634, 0.03225, 0.02979, 0.03937, 0.009787, 0.0002133, 2.618e-08, 2.291e-08, 5.236e-08, 3.273e-08,
         3.927e-08, 2.618e-08, 1.964e-08)),
    "SAN+skip": DongCurve(
        (0.6872, 0.7169, 0.6364, 0.489, 0.3531, 0.2233, 0.2048, 0.2401, 0.2332, 0.1738, 0.1408, 0.09619, 0.07429),
        (0.01634, 0.02097, 0.01782, 0.01876, 0.01923, 0.01743, 0.0183, 0.0225, 0.01976, 0.014, 0.01161, 0.008163,
         0.007902)),
    "transformer": DongCurve(
        (0.6872, 0.666, 0.5592, 0.5041, 0.4657, 0.4006, 0.3789, 0.3805, 0.3898, 0.3912, 0.3952, 0.369, 0.3096),
        (0.01634, 0.01465, 0.01744, 0.01778, 0.01791, 0.0167, 0.0171, 0.02154, 0.02231, 0.02705, 0.03021, 0.02861,
         0.03155)),
}
"""Pretrained bert-base-cased, per variant."""


def init_layer0() -> float:
    """X_0's relative residual at initialization, the mean of their four draws (one per variant): 0.6034."""
    return sum(c.mean[0] for c in BERT_INIT.values()) / len(BERT_INIT)


__all__ = ["BERT_INIT", "BERT_PRETRAINED", "DongCurve", "LAYERS", "SEQUENCES", "SOURCE", "TOKENS", "VARIANTS",
           "init_layer0"]
