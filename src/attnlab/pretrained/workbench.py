"""Hooks and tokens on a pretrained model, as a TransformerLens user works:

    pm = load_pretrained("smollm2", dtype="float64")
    tokens = pm.to_tokens(" When Mary and John went to the store")      # (1, n), BOS prepended
    logits, cache = pm.run_with_cache(tokens, names_filter=lambda n: n.endswith("hook_z"))
    cache["blocks.3.attn.hook_z"]                                        # (1, n, H, d_head)
    logits = pm.run_with_hooks(tokens, fwd_hooks=[("blocks.3.attn.hook_z", zero_head_5)])
    with pm.hooks([("blocks.3.hook_resid_pre", patch)]):                # detached on exit, also on error
        ...

The hook names, shapes and semantics are those of :mod:`attnlab.nn.hooked`. ``run_with_hooks`` and
``run_with_cache`` run without gradients unless ``grad=True`` (then the cache's tensors are the graph's
own: ``x.retain_grad()`` in a hook, or differentiate the logits through them).

BOS conventions (``prepend_bos=None`` takes the model's; True adds the tokenizer's BOS unless the text
already starts with it; False adds nothing beyond what the tokenizer adds itself):

    SmolLM2 (Llama family)  BOS "<|im_start|>" (id 1, the GGUF tokenizer's bos_token; its add_bos_token is
                            false, so the tokenizer alone adds none): prepended by default, as
                            TransformerLens does for its decoders
    GPT-2                   BOS "<|endoftext|>" (its bos_token): prepended by default (every causal stack
                            whose tokenizer has a bos_token)
    MiniLM (BERT family)    the tokenizer adds "[CLS]" ... "[SEP]" itself and has no bos_token: nothing is
                            prepended by default, and prepend_bos=True is refused
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from attnlab.errors import ConfigError
from attnlab.nn.hooked import FwdHooks, NameFilter, cache_hooks
from attnlab.nn.hooks import HookPoint

Text = str | Sequence[str]


class Workbench:
    """Hooks (:mod:`attnlab.nn.hooked`) and TransformerLens-style tokens on
    :class:`attnlab.pretrained.PretrainedModel` (module docstring)."""

    model: Any
    tokenizer: Any

    def hook_points(self) -> dict[str, HookPoint]:
        """Every hook point of the model by TransformerLens name, in the order of a pass."""
        return self.model.hook_points()

    def hooks(self, fwd_hooks: FwdHooks = ()) -> Any:
        """A context attaching ``fwd_hooks`` [(name, fn)] and detaching them on exit, also on error."""
        return self.model.hooks(fwd_hooks)

    def reset_hooks(self) -> None:
        """Detach every hook from every point."""
        self.model.reset_hooks()

    def run_with_hooks(self, tokens: Tensor | Text, fwd_hooks: FwdHooks = (), *,
                       key_padding_mask: Tensor | None = None, grad: bool = False,
                       prepend_bos: bool | None = None) -> Tensor:
        """One pass over ``tokens`` (ids (B, n), or text, tokenized by :meth:`to_tokens`) with ``fwd_hooks``
        attached: the logits (B, n, vocab) of a model with an output head, else the output Z (B, n, d)."""
        ids, pad = self._input(tokens, key_padding_mask, prepend_bos)
        with self.model.hooks(fwd_hooks):
            out = self.forward(ids, pad, output_hidden_states=False, output_attentions=False, grad=grad)
        return out.output if out.logits is None else out.logits

    def run_with_cache(self, tokens: Tensor | Text, names_filter: NameFilter = None, *,
                       key_padding_mask: Tensor | None = None, grad: bool = False,
                       prepend_bos: bool | None = None) -> tuple[Tensor, dict[str, Tensor]]:
        """(logits or Z as :meth:`run_with_hooks`, cache name -> tensor) for the points ``names_filter``
        selects (None: every one; a name, a list of names, or a predicate on names). A filter that leaves
        out hook_attn_scores and hook_pattern keeps every attention on the fused kernel."""
        fwd_hooks, cache = cache_hooks(list(self.model.hook_points()), names_filter)
        return self.run_with_hooks(tokens, fwd_hooks, key_padding_mask=key_padding_mask, grad=grad,
                                   prepend_bos=prepend_bos), cache

    def to_tokens(self, text: Text, prepend_bos: bool | None = None) -> Tensor:
        """Token ids (B, n) int64 of one text or several (right-padded with the tokenizer's pad id; the
        padding mask comes with :meth:`run_with_hooks` given the texts), with the tokenizer's own special
        tokens and the BOS convention of the module docstring."""
        return self._tokenize(text, prepend_bos)[0]

    def to_str_tokens(self, tokens: Tensor | Text, prepend_bos: bool | None = None) -> list[str] | list[list[str]]:
        """Every token as the text it decodes to (" Mary", "[CLS]"): a list for one text or a 1-D / one-row
        tensor of ids, a list of lists for several."""
        tok = self._tokenizer()
        if isinstance(tokens, Tensor):
            rows = tokens.reshape(-1, tokens.shape[-1]) if tokens.ndim else tokens.reshape(1, 1)
            out = [[tok.decode([i]) for i in row] for row in rows.tolist()]
            return out[0] if tokens.ndim <= 1 or tokens.shape[0] == 1 else out
        ids, pad = self._tokenize(tokens, prepend_bos)
        out = [[tok.decode([i]) for i, p in zip(row, mask) if not p] for row, mask in zip(ids.tolist(), pad.tolist())]
        return out[0] if isinstance(tokens, str) else out

    def bos_token_id(self, prepend_bos: bool | None = None) -> int | None:
        """The id :meth:`to_tokens` prepends under ``prepend_bos`` (module docstring's convention), or None."""
        return self._bos(prepend_bos)

    def _tokenizer(self) -> Any:
        """The tokenizer, or a ConfigError saying to pass ids."""
        if self.tokenizer is None:
            raise ConfigError("this model has no usable tokenizer: pass token ids instead of text")
        return self.tokenizer

    def _bos(self, prepend_bos: bool | None) -> int | None:
        """The id to prepend, or None (module docstring's convention)."""
        tok = self._tokenizer()
        bos = getattr(tok, "bos_token_id", None)
        if prepend_bos is None:
            return bos if self.model.causal else None
        if not isinstance(prepend_bos, bool):
            raise ConfigError(f"prepend_bos must be True, False or None (the model's convention), got {prepend_bos!r}")
        if prepend_bos and bos is None:
            raise ConfigError("this tokenizer has no BOS token (a BERT-family tokenizer adds [CLS] itself): "
                              "pass prepend_bos=False or None")
        return bos if prepend_bos else None

    def _tokenize(self, text: Text, prepend_bos: bool | None) -> tuple[Tensor, Tensor]:
        """(ids (B, n) int64, key_padding_mask (B, n) bool, True = padding) of one text or several."""
        texts = [text] if isinstance(text, str) else list(text) if isinstance(text, Sequence) else None
        if not texts or not all(isinstance(t, str) for t in texts):
            raise ConfigError("text must be a string or a non-empty list of strings")
        tok, bos = self._tokenizer(), self._bos(prepend_bos)
        rows = [list(tok(t)["input_ids"]) for t in texts]
        if bos is not None:
            rows = [r if r[:1] == [bos] else [bos] + r for r in rows]
        n = max(len(r) for r in rows)
        pad_id = tok.pad_token_id if tok.pad_token_id is not None else 0
        ids = torch.tensor([r + [pad_id] * (n - len(r)) for r in rows], dtype=torch.int64)
        pad = torch.tensor([[False] * len(r) + [True] * (n - len(r)) for r in rows])
        return ids.to(self.model.embed.W_E.device), pad.to(self.model.embed.W_E.device)

    def _input(self, tokens: Tensor | Text, key_padding_mask: Tensor | None,
               prepend_bos: bool | None) -> tuple[Tensor, Tensor | None]:
        """Ids (B, n) and padding mask from ids (a 1-D tensor is one sequence) or text."""
        if isinstance(tokens, Tensor):
            ids = tokens[None] if tokens.ndim == 1 else tokens
            return ids.to(self.model.embed.W_E.device), key_padding_mask
        if key_padding_mask is not None:
            raise ConfigError("key_padding_mask goes with token ids; text is padded and masked here")
        ids, pad = self._tokenize(tokens, prepend_bos)
        return ids, pad if bool(pad.any()) else None
