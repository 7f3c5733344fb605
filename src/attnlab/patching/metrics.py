"""Patching metrics: the logit difference and the normalised recovered fraction.

A metric maps the output a patching run reads, the logits at one position (B, vocab) by default
(:mod:`attnlab.patching.runner`), to one number per batch row (B,).

    logit difference        m(x) = logit_answer(x) - logit_wrong(x)
    recovered fraction      r = (m_patched - m_corrupted) / (m_clean - m_corrupted)

r = 0 where the patch changes nothing the metric sees, r = 1 where it restores the clean value.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from attnlab.errors import ConfigError

Metric = Callable[[Tensor], Tensor]
"""out (B, ...) -> (B,): one value per patched run."""


@dataclass(frozen=True)
class LogitDiff:
    """m = logits[..., answer] - logits[..., wrong] (answer and wrong: token ids); on the logits at one
    position (B, vocab) it gives (B,)."""

    answer: int
    wrong: int

    def __post_init__(self) -> None:
        for field, v in (("answer", self.answer), ("wrong", self.wrong)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ConfigError(f"{field} must be a token id (an integer >= 0), got {v!r}")

    @classmethod
    def from_text(cls, model: Any, answer: str, wrong: str) -> "LogitDiff":
        """The ids of two texts that are one token each on ``model`` (a PretrainedModel), BOS not added:
        ``LogitDiff.from_text(pm, " Mary", " John")``."""
        ids = []
        for text in (answer, wrong):
            t = model.to_tokens(text, prepend_bos=False)[0]
            if t.numel() != 1:
                raise ConfigError(f"{text!r} is {t.numel()} tokens on this model; an answer must be one token")
            ids.append(int(t[0]))
        return cls(*ids)

    def __call__(self, logits: Tensor) -> Tensor:
        """logits (..., vocab) -> (...,)."""
        return logits[..., self.answer] - logits[..., self.wrong]


def recovered_fraction(patched: Tensor | float, clean: float, corrupted: float) -> Tensor:
    """(patched - corrupted) / (clean - corrupted), elementwise; a ConfigError where clean = corrupted
    (the prompts do not differ in what the metric sees, so there is nothing to recover)."""
    if clean == corrupted:
        raise ConfigError(f"the clean and corrupted metrics are equal ({clean}): nothing to recover; pick prompts "
                          "or a metric that tell them apart")
    return (torch.as_tensor(patched) - corrupted) / (clean - corrupted)
