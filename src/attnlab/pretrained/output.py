"""What :meth:`attnlab.pretrained.PretrainedModel.run` returns: the pass with the input it ran on.

:class:`PretrainedOutput` is a :class:`attnlab.nn.transformer.TransformerOutput` (every field
as there: output, hidden_states, attentions, cross_attentions, logits) that also carries

    tokens            B lists of n token strings, padding included (as :attr:`Encoded.tokens`)
    labels            the same tokens as figures show them (:func:`attnlab.pretrained.labels.token_labels`:
                      byte-level pieces such as GPT-2's "Ġthe" read "▁the")
    key_padding_mask  (B, n) bool, True = padding
    model             the checkpoint's name and type, e.g. "all-MiniLM-L6-v2 (bert)"

In Jupyter it renders itself (``_repr_html_``): a line with the model and the shapes, and, when the
attentions were computed, the attention viewer (:mod:`attnlab.reports.viewer`) of text 0 with its
real tokens as labels (padding left out, on either side):

    out = pm.run(["The cat sat on the mat.", "A second text."])
    out                      # in a notebook: the summary and every head of text 0
    out.viewer(1)            # the viewer of text 1 (an AttentionView: .save("page.html"))
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from html import escape
from typing import Any

from torch import Tensor

from attnlab.errors import ConfigError
from attnlab.nn.transformer import TransformerOutput


@dataclass(frozen=True)
class PretrainedOutput(TransformerOutput):
    """A :class:`TransformerOutput` of a pretrained model with its tokens (module docstring)."""

    tokens: list[list[str]] | None = None
    labels: list[list[str]] | None = None
    key_padding_mask: Tensor | None = None
    model: str = ""

    @classmethod
    def of(cls, out: TransformerOutput, **extra: Any) -> "PretrainedOutput":
        """``out``'s fields, unchanged, with the ``extra`` ones (tokens, labels, key_padding_mask, model)."""
        return cls(**{f.name: getattr(out, f.name) for f in dataclasses.fields(TransformerOutput)}, **extra)

    def real_positions(self, text: int = 0) -> list[int]:
        """The positions of text ``text``'s real tokens (padding left out), in order."""
        B = self.output.shape[0]
        if isinstance(text, bool) or not isinstance(text, int) or not 0 <= text < B:
            raise ConfigError(f"text must be an integer in [0, {B - 1}], got {text!r}")
        n = self.output.shape[1]
        if self.key_padding_mask is None:
            return list(range(n))
        return [i for i, pad in enumerate(self.key_padding_mask[text].tolist()) if not pad]

    def viewer(self, text: int = 0, **kw: Any):
        """The attention viewer (:class:`attnlab.reports.AttentionView`) of text ``text``: every head's
        weights among its real tokens, labelled; ``kw`` as AttentionView (title, scores, ...)."""
        if not self.attentions:
            raise ConfigError("this output has no attentions: run the model with output_attentions=True")
        import torch

        from attnlab.reports.viewer import AttentionView

        keep = self.real_positions(text)
        idx = torch.tensor(keep, device=self.attentions[0].device)
        A = torch.stack([a.detach()[text] for a in self.attentions])  # (L, H, n, n)
        A = A.index_select(-2, idx).index_select(-1, idx)
        names = self.labels or self.tokens
        tokens = [names[text][i] for i in keep] if names else [str(i) for i in keep]
        kw.setdefault("title", f"{self.model or 'model'}: text {text}")
        return AttentionView(A, tokens, **kw)

    def _summary(self) -> str:
        def shape(t: Tensor | None) -> str:
            return "(" + ", ".join(str(x) for x in t.shape) + ")"

        B, n = self.output.shape[:2]
        parts = [f"output {shape(self.output)}"]
        if self.hidden_states:
            parts.append(f"hidden_states {len(self.hidden_states)} x {shape(self.hidden_states[0])}")
        if self.attentions:
            parts.append(f"attentions {len(self.attentions)} x {shape(self.attentions[0])}")
        if self.logits is not None:
            parts.append(f"logits {shape(self.logits)}")
        real = len(self.real_positions(0))
        return (f"{self.model or 'a pretrained model'}: {B} text(s) of {n} positions (text 0: {real} tokens); "
                + "; ".join(parts))

    def _repr_html_(self) -> str:
        head = (f'<div style="font:13px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;color:#1d2430;'
                f'margin:4px 0">PretrainedOutput · {escape(self._summary())}</div>')
        if not self.attentions:
            return head + ('<div style="color:#5b6575;font-size:13px">No attention weights in this output '
                           "(run with output_attentions=True to see them).</div>")
        return head + self.viewer(0).html()
