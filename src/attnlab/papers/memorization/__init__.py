"""Memorization capacity of multi-head attention: the model of eqs. (1)-(6), Theorem 1's
construction, the rank bounds (Propositions 1, 2, 4, 5), the FCN comparison
(Proposition 3), the assumption checks and the synthetic memorization experiments."""

from attnlab.registry import register_paper

PAPER = register_paper("memorization", "Memorization capacity of multi-head attention",
                       "memorization-capacity-of-mha.md", package=__name__)
