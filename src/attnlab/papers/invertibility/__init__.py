"""Invertibility of the attention matrix over all N^L token sequences.

Registered so that commands name it; its claims, experiments and constructions are
not built yet."""

from attnlab.registry import register_paper

PAPER = register_paper("invertibility", "Invertibility of the attention matrix",
                       "invertibility-of-the-attention-matrix.md", package=__name__)
