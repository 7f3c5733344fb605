"""Pretrained checkpoints as attnlab modules.

:func:`load_pretrained` (:mod:`attnlab.pretrained.loader`) turns a local BERT-family, GPT-2 or
Llama-family checkpoint directory, a Llama GGUF file, or a shipped model (all-MiniLM-L6-v2,
"minilm"; SmolLM2-135M-Instruct, "smollm2") into an
:class:`attnlab.nn.Encoder` (``run`` returns a :class:`PretrainedOutput`: the pass with its tokens, shown
with the attention viewer in Jupyter); :mod:`attnlab.pretrained.minilm` runs all-MiniLM-L6-v2 through
transformers for the memorization paper's App. J tables.
"""

from attnlab.pretrained.architecture import Architecture
from attnlab.pretrained.loader import Encoded, PretrainedModel, load_pretrained
from attnlab.pretrained.output import PretrainedOutput
from attnlab.pretrained.minilm import (
    MiniLMHidden,
    load_minilm,
    minilm_hidden_states,
    minilm_model_dir,
)

__all__ = [
    "Architecture",
    "Encoded",
    "MiniLMHidden",
    "PretrainedModel",
    "PretrainedOutput",
    "load_minilm",
    "load_pretrained",
    "minilm_hidden_states",
    "minilm_model_dir",
]
