"""The nonlinearity of the feed-forward layer, FFN(u) = phi(u W_1 + b_1) W_2 + b_2.

    "relu"       phi(x) = max(0, x)                                  math-behind-transformers §1.2.4
    "gelu"       phi(x) = x Phi(x) = x (1 + erf(x / sqrt(2))) / 2     exact GELU (Hendrycks & Gimpel
                                                                     2016, arXiv:1606.08415); BERT's
                                                                     hidden_act "gelu"
    "gelu_tanh"  phi(x) = x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) / 2
                                                                     the same paper's tanh
                                                                     approximation; GPT-2's
                                                                     activation_function "gelu_new"
    "silu"       phi(x) = x sigma(x) = x / (1 + e^{-x})              SiLU / Swish (Elfwing et al. 2018;
                                                                     Ramachandran et al. 2017), the
                                                                     gate of Llama's SwiGLU MLP

Phi is the standard normal CDF. The two GELUs differ by at most ~5e-4 (near |x| ~ 2), far
above float64 round-off, so a checkpoint must be run with the one it was trained with.
"""

from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F
from torch import Tensor

from attnlab.config import check_choice


def _gelu(x: Tensor) -> Tensor:
    return F.gelu(x)


def _gelu_tanh(x: Tensor) -> Tensor:
    return F.gelu(x, approximate="tanh")


ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {"relu": torch.relu, "gelu": _gelu, "gelu_tanh": _gelu_tanh,
                                                      "silu": F.silu}


def resolve_activation(name: str) -> Callable[[Tensor], Tensor]:
    """phi for ``name`` in ACTIVATIONS ("relu", "gelu", "gelu_tanh", "silu"); ConfigError otherwise."""
    return ACTIVATIONS[check_choice("activation", name, tuple(ACTIVATIONS))]
