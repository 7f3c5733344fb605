"""Rank collapse and low-rank notes (Xie, 2021): self-attention networks, the path
decomposition, the doubly exponential bound and the low-rank (JL) theorem."""

from attnlab.registry import register_paper

PAPER = register_paper("rank-collapse", "Rank collapse and low-rank notes (Xie, 2021)",
                       "rank-collapse-and-low-rank-notes.md", package=__name__)
