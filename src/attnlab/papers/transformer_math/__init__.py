"""The math behind transformers: the transformer block and encoder-decoder as written,
parameter counts (Table 1), softmax saturation and the 1/sqrt(d) scale, the
efficient attention variants of §2 (sparse, linear, low-rank), and the head structure
of §3.1 (Sigma_1, Sigma_2, Sigma_3, the projection of eqs. (21)-(22), head roles), fitted
on trained models and on the thesis's own saved maps (:mod:`.thesis_maps`). Where the text
is wrong or loose: :mod:`.errata`."""

from attnlab.registry import register_paper

PAPER = register_paper("transformer-math", "The math behind transformers", "math-behind-transformers.md",
                       package=__name__)
