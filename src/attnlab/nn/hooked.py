"""Named hooks on an attnlab stack: TransformerLens' names, a scoped context, a cache.

Every :class:`attnlab.nn.Encoder` (SmolLM2 and the Llama family, MiniLM and the BERT family, GPT-2)
carries :class:`attnlab.nn.hooks.HookPoint` modules. Their names are TransformerLens' (TL); where
attnlab's module tree differs, :data:`TL_NAMES` maps the TL name to the module path ({l}: the block,
0-based). Shapes, B batch, n positions, H query heads, H_kv key/value heads, d_head, d_v head sizes:

    hook_embed                    (B, n, d_model)   X_0, the embedding output entering block 0 (token,
                                                    position and type embeddings, with BERT's LayerNorm;
                                                    TL's hook_embed is W_E[x] alone, which X_0 equals where
                                                    positions enter the attention: the Llama family)
    blocks.{l}.hook_resid_pre     (B, n, d_model)   the stream entering block l
    blocks.{l}.attn.hook_q        (B, n, H, d_head) queries X W_Q,h + b_Q,h (before RoPE, as TL)
    blocks.{l}.attn.hook_k        (B, n, H_kv, d_head)  keys, one per key/value head (before RoPE)
    blocks.{l}.attn.hook_v        (B, n, H_kv, d_v) values, one per key/value head
    blocks.{l}.attn.hook_rot_q    (B, n, H, d_head) queries after RoPE (= hook_q without rotary positions)
    blocks.{l}.attn.hook_rot_k    (B, n, H_kv, d_head)  keys after RoPE
    blocks.{l}.attn.hook_attn_scores  (B, H, n, n)  c q_h k_g(h)^T + M, masked pairs -inf
    blocks.{l}.attn.hook_pattern  (B, H, n, n)      P_h, the attention weights
    blocks.{l}.attn.hook_z        (B, n, H, d_v)    z_h = P_h v_g(h)
    blocks.{l}.hook_attn_out      (B, n, d_model)   sum_h z_h W_O,h + b_O
    blocks.{l}.hook_resid_mid     (B, n, d_model)   pre-LN: resid_pre + attn_out; post-LN (BERT):
                                                    LN_1(resid_pre + attn_out)
    blocks.{l}.mlp.hook_post      (B, n, d_ff)      the MLP's hidden activation (gated: phi(u W_g) * u W_1)
    blocks.{l}.hook_mlp_out       (B, n, d_model)   the MLP's output
    blocks.{l}.hook_resid_post    (B, n, d_model)   the block's output = blocks.{l+1}.hook_resid_pre
    ln_final.hook_normalized      (B, n, d_model)   Z, the final LayerNorm's output (pre-LN stacks); on a
                                                    post-LN stack (BERT), which has none, Z = X_L

The encoder-decoder's :class:`attnlab.nn.Decoder` carries the same points with the same names and
shapes (n the target positions; its self-attention module is ``self_attn``, named ``attn`` as in TL),
and in every block a second attention, the cross-attention to the encoder output Z (n_src positions),
with the names of TL's encoder-decoder (T5) block:

    hook_embed                    (B, n, d_model)   the target embeddings entering block 0
    blocks.{l}.hook_resid_pre ... blocks.{l}.hook_resid_mid     as above (self-attention masked j > i)
    blocks.{l}.cross_attn.hook_q  (B, n, H, d_head) queries from the decoder stream (hook_rot_q: the same,
                                                    a Decoder has no rotary positions)
    blocks.{l}.cross_attn.hook_k  (B, n_src, H_kv, d_head)  keys Z W_K,g + b_K,g (hook_rot_k: the same)
    blocks.{l}.cross_attn.hook_v  (B, n_src, H_kv, d_v)     values Z W_V,g + b_V,g
    blocks.{l}.cross_attn.hook_attn_scores  (B, H, n, n_src)  masked only where Z is padding
    blocks.{l}.cross_attn.hook_pattern      (B, H, n, n_src)  C_h, the cross-attention weights
    blocks.{l}.cross_attn.hook_z  (B, n, H, d_v)    z_h = C_h v_g(h)
    blocks.{l}.hook_cross_attn_out  (B, n, d_model) the cross-attention's output sum_h z_h W_O,h + b_O
    blocks.{l}.hook_resid_mid_cross (B, n, d_model) pre-LN: resid_mid + cross_attn_out; post-LN (the
                                                    text): LN_2(resid_mid + cross_attn_out), the FFN's input
    blocks.{l}.mlp.hook_post ... ln_final.hook_normalized       as above (Y, before P_out)

A Decoder's pass needs Z: ``decoder.run_with_cache(tokens, Z=Z)``, keywords as ``Decoder.forward``.

A hook is ``fn(tensor, name) -> None or a replacement`` (:mod:`attnlab.nn.hooks`). Only hooks on
hook_attn_scores or hook_pattern make the attention leave the fused kernel; with no hook attached the
forward is the one without hooks. :class:`Hooked` gives a stack ``hook_points``, ``hooks`` (a context
that detaches what it attached on exit, also on error), ``run_with_hooks`` and ``run_with_cache``.
"""

from __future__ import annotations

import contextlib
import difflib
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Union

from torch import Tensor, nn

from attnlab.errors import ConfigError
from attnlab.nn.attention import HOOK_POINTS as ATTENTION_HOOK_POINTS
from attnlab.nn.hooks import HookFn, HookPoint

TL_NAMES: dict[str, str] = {  # TransformerLens name -> attnlab module path, where they differ
    "blocks.{l}.mlp.hook_post": "blocks.{l}.ffn.hook_post",
    "ln_final.hook_normalized": "hook_normalized",
    **{f"blocks.{{l}}.attn.{p}": f"blocks.{{l}}.self_attn.{p}" for p in ATTENTION_HOOK_POINTS},  # a Decoder's
}
_FROM_PATH = {path: tl for tl, path in TL_NAMES.items()}
_LAYER = re.compile(r"^blocks\.(\d+)\.")
_BLOCK_ORDER = ("hook_resid_pre", *(f"attn.{p}" for p in ATTENTION_HOOK_POINTS), "hook_attn_out", "hook_resid_mid",
                *(f"cross_attn.{p}" for p in ATTENTION_HOOK_POINTS), "hook_cross_attn_out", "hook_resid_mid_cross",
                "mlp.hook_post", "hook_mlp_out", "hook_resid_post")

NameFilter = Union[str, Sequence[str], Callable[[str], bool], None]
FwdHooks = Sequence[tuple[Union[str, Callable[[str], bool]], HookFn]]


def tl_name(path: str) -> str:
    """The TransformerLens name of the hook point at module path ``path`` (the path itself where they agree)."""
    m = _LAYER.match(path)
    template = _LAYER.sub("blocks.{l}.", path) if m else path
    tl = _FROM_PATH.get(template)
    return path if tl is None else tl.format(l=m.group(1)) if m else tl


def _forward_order(name: str) -> tuple[float, int, str]:
    """Sort key of a TransformerLens name in the order of a pass: hook_embed, the blocks, ln_final."""
    m = _LAYER.match(name)
    if m is None:
        return (-1.0 if name == "hook_embed" else float("inf"), 0, name)
    rest = name[m.end():]
    return (float(m.group(1)), _BLOCK_ORDER.index(rest) if rest in _BLOCK_ORDER else len(_BLOCK_ORDER), rest)


def _matches(names_filter: NameFilter, names: list[str]) -> list[str]:
    """The names a filter selects: None every one, a name, a sequence of names, or a predicate."""
    if names_filter is None:
        return names
    if callable(names_filter):
        return [n for n in names if names_filter(n)]
    wanted = [names_filter] if isinstance(names_filter, str) else list(names_filter)
    known = set(names)
    for w in wanted:
        if w not in known:
            close = difflib.get_close_matches(str(w), names, n=3)
            raise ConfigError(f"no hook point {w!r} on this model"
                              + (f": did you mean {', '.join(close)}?" if close else
                                 f"; names look like {names[1] if len(names) > 1 else names[0]}"))
    wanted = set(wanted)
    return [n for n in names if n in wanted]


class Hooked(nn.Module):
    """Named hooks for a stack whose ``forward(tokens, ...)`` returns a
    :class:`~attnlab.nn.transformer.TransformerOutput` (module docstring)."""

    def hook_points(self) -> dict[str, HookPoint]:
        """Every hook point by TransformerLens name (:data:`TL_NAMES`), in the order a pass reaches them."""
        points = {}
        for path, m in self.named_modules():
            if isinstance(m, HookPoint):
                m.name = tl_name(path)
                points[m.name] = m
        return {n: points[n] for n in sorted(points, key=_forward_order)}

    @contextlib.contextmanager
    def hooks(self, fwd_hooks: FwdHooks = ()) -> Iterator["Hooked"]:
        """``with model.hooks([(name, fn), ...]):`` attaches every fn (a name may be a predicate on names)
        and detaches exactly those on exit, whether the block ends or raises."""
        removers: list[Callable[[], None]] = []
        points = self.hook_points()
        names = list(points)
        try:
            for name, fn in fwd_hooks:
                for n in ([name] if isinstance(name, str) and name in points else _matches(name, names)):
                    removers.append(points[n].add_hook(fn))
            yield self
        finally:
            for remove in reversed(removers):
                remove()

    def reset_hooks(self) -> None:
        """Detach every hook from every point (hooks left by code outside a ``hooks`` context)."""
        for point in self.hook_points().values():
            point.remove_hooks()

    def run_with_hooks(self, tokens: Tensor, fwd_hooks: FwdHooks = (), **forward_kwargs: Any) -> Tensor:
        """One forward pass with ``fwd_hooks`` attached (detached afterwards): the logits (B, n, vocab) of a
        stack with an output head, else its output Z (B, n, d_model). Keywords go to ``forward``."""
        with self.hooks(fwd_hooks):
            return _result(self(tokens, **forward_kwargs))

    def run_with_cache(self, tokens: Tensor, names_filter: NameFilter = None,
                       **forward_kwargs: Any) -> tuple[Tensor, dict[str, Tensor]]:
        """(logits or Z as :meth:`run_with_hooks`, cache): the cache maps each selected hook point's name
        (default: every one) to the tensor it saw, shapes as the module docstring. The tensors are the pass's
        own: attached to the graph when gradients are enabled (``torch.enable_grad()``), else plain."""
        fwd_hooks, cache = cache_hooks(list(self.hook_points()), names_filter)
        with self.hooks(fwd_hooks):
            out = _result(self(tokens, **forward_kwargs))
        return out, cache


def cache_hooks(names: list[str], names_filter: NameFilter = None) -> tuple[list[tuple[str, HookFn]], dict[str, Tensor]]:
    """Hooks that record what the selected points of ``names`` see, and the dict they fill (name -> tensor)."""
    cache: dict[str, Tensor] = {}

    def keep(x: Tensor, name: str) -> None:
        cache[name] = x

    return [(n, keep) for n in _matches(names_filter, names)], cache


def _result(out: Any) -> Tensor:
    """The logits of a TransformerOutput when the stack has an output head, else its output."""
    return out.output if out.logits is None else out.logits
