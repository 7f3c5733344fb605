"""Logic in self-attention: hand-programmed one-layer transformers for q(X_{i-1}, X_i).

Registered so that commands name it; its claims, experiments and constructions are
not built yet."""

from attnlab.registry import register_paper

PAPER = register_paper("logic", "Logic in self-attention", "logic-in-self-attention.md", package=__name__)
