"""Where a patch acts: a hook point, a position, a head; and how each hook point's tensor is laid out.

A :class:`Site` names one place of a pass on an attnlab stack (:mod:`attnlab.nn.hooked` names and
shapes). Patching a site writes the clean run's values there in place of the corrupted run's:

    x[b, ..., p, ..., h, ...] <- x_clean[0, ..., p, ..., h, ...]

on the axes of the point's layout (B batch, n positions, H heads):

    (B, n, d)          residual points, attention and MLP outputs, mlp.hook_post: position axis 1
    (B, n, H, d)       attn.hook_q, hook_k, hook_v, hook_rot_q, hook_rot_k, hook_z: position 1, head 2
    (B, H, n_q, n_k)   attn.hook_attn_scores, hook_pattern: head 1, query position 2 (a row of P_h)

``position=None`` patches every position and ``head=None`` every head; hook_k and hook_v have one head
per key/value head (H_kv < H under grouped-query attention).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from attnlab.errors import ConfigError

_LAYER = re.compile(r"^blocks\.(\d+)\.")
_HEAD_FIRST = ("attn.hook_attn_scores", "attn.hook_pattern")
_HEAD_SECOND = ("attn.hook_q", "attn.hook_k", "attn.hook_v", "attn.hook_rot_q", "attn.hook_rot_k", "attn.hook_z")
EMBED, FINAL = "hook_embed", "ln_final.hook_normalized"


@dataclass(frozen=True)
class Site:
    """One place patched: hook point ``name`` (TransformerLens' name), at ``position`` (None: every
    position; negative counts from the end) and ``head`` (None: every head; only on per-head points)."""

    name: str
    position: int | None = None
    head: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise ConfigError(f"a site's name must be a hook point's name, got {type(self.name).__name__}")
        for field, v in (("position", self.position), ("head", self.head)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
                raise ConfigError(f"a site's {field} must be an integer or None, got {v!r}")

    @property
    def point(self) -> str:
        """The hook point patched: hook_embed is the same tensor as blocks.0.hook_resid_pre (X_0)."""
        return "blocks.0.hook_resid_pre" if self.name == EMBED else self.name


def layer_of(point: str, n_layers: int) -> int:
    """The block a pass must start from to reach ``point``: l for blocks.{l}.*, L for the final norm."""
    m = _LAYER.match(point)
    if m is not None:
        return int(m.group(1))
    if point == FINAL:
        return n_layers
    raise ConfigError(f"cannot patch {point!r}: patch a blocks.{{l}}.* point, hook_embed or {FINAL}")


def axes_of(point: str) -> tuple[int, int | None]:
    """(position axis, head axis or None) of the point's tensor (module docstring)."""
    rest = _LAYER.sub("", point)
    if rest in _HEAD_FIRST:
        return 2, 1
    if rest in _HEAD_SECOND:
        return 1, 2
    return 1, None


def check_site(site: Site, shape: tuple[int, ...]) -> None:
    """A ConfigError unless ``site`` indexes a tensor of the point's ``shape`` (1, ...)."""
    pos_axis, head_axis = axes_of(site.point)
    n = shape[pos_axis]
    if site.position is not None and not -n <= site.position < n:
        raise ConfigError(f"position {site.position} is outside the {n} positions of {site.name}")
    if site.head is None:
        return
    if head_axis is None:
        raise ConfigError(f"{site.name} has no heads: patch it with head=None")
    if not 0 <= site.head < shape[head_axis]:
        raise ConfigError(f"head {site.head} is outside the {shape[head_axis]} heads of {site.name}")
