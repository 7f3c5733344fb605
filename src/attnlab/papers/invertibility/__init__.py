"""Invertibility of the attention matrix over all N^L token sequences (Dana): the matrix A
(:mod:`.matrix`), explicit transcendental embeddings (:mod:`.embeddings`), Theorem 1's
construction with a certified rank (:mod:`.construction`), the claims on full rank, the
minimal number of heads and the rank caps the note leaves out (:mod:`.claims`), and where
the note is wrong or loose, as sourced records (:mod:`.errata`)."""

from attnlab.registry import register_paper

PAPER = register_paper("invertibility", "Invertibility of the attention matrix",
                       "invertibility-of-the-attention-matrix.md", package=__name__)
