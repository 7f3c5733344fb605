"""Pretrained models that ship offline (the ``models`` extra): all-MiniLM-L6-v2 (:mod:`attnlab.pretrained.minilm`)."""

from attnlab.pretrained.minilm import (
    MiniLMHidden,
    load_minilm,
    minilm_hidden_states,
    minilm_model_dir,
)

__all__ = ["MiniLMHidden", "load_minilm", "minilm_hidden_states", "minilm_model_dir"]
