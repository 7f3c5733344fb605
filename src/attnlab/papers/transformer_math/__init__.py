"""The math behind transformers: the transformer block and encoder-decoder as written,
parameter counts (Table 1), softmax saturation and the 1/sqrt(d) scale, and the
efficient attention variants of §2 (sparse, linear, low-rank)."""

from attnlab.registry import register_paper

PAPER = register_paper("transformer-math", "The math behind transformers", "math-behind-transformers.md",
                       package=__name__)
