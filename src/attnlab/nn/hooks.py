"""Hook points: named places in a forward pass where a function may read or replace a tensor.

A :class:`HookPoint` is an identity module placed in a forward pass, ``x = self.hook_resid_pre(x)``.
With no function attached it returns its input untouched and costs one Python call (it bypasses
``nn.Module.__call__``'s machinery); with functions attached, each is called in the order added as

    fn(x, name) -> None (x kept) or a tensor of x's shape (x replaced for the rest of the pass)

where ``name`` is the point's name (TransformerLens' name on an attnlab stack,
:mod:`attnlab.nn.hooked`). A function that returns its input changes nothing, to the last bit.
"""

from __future__ import annotations

from typing import Callable

from torch import Tensor, nn

from attnlab.errors import ConfigError

HookFn = Callable[[Tensor, str], "Tensor | None"]


class HookPoint(nn.Module):
    """An identity on the forward pass that calls the functions attached to it (module docstring).

    ``name`` is set by the stack that owns the point (:meth:`attnlab.nn.hooked.Hooked.hook_points`);
    a point outside a stack is called with its attribute path or "".
    """

    def __init__(self) -> None:
        super().__init__()
        self.name = ""
        self.fns: list[HookFn] = []

    def add_hook(self, fn: HookFn) -> Callable[[], None]:
        """Attach ``fn``; returns a function that detaches this one attachment (and nothing else)."""
        if not callable(fn):
            raise ConfigError(f"a hook must be a function (tensor, name) -> tensor or None, got {type(fn).__name__}")
        entry = _Attached(fn)
        self.fns.append(entry)

        def remove() -> None:
            if entry in self.fns:
                self.fns.remove(entry)

        return remove

    def remove_hooks(self) -> None:
        """Detach every function."""
        self.fns.clear()

    def __call__(self, x: Tensor) -> Tensor:
        return self.forward(x) if self.fns else x

    def forward(self, x: Tensor) -> Tensor:
        """x through every attached function in turn; a replacement must keep x's shape."""
        for fn in list(self.fns):
            out = fn(x, self.name)
            if out is None:
                continue
            if not isinstance(out, Tensor) or out.shape != x.shape:
                got = tuple(out.shape) if isinstance(out, Tensor) else type(out).__name__
                raise ConfigError(f"the hook on {self.name or 'a hook point'} returned {got}; return None or a "
                                  f"tensor of the input's shape {tuple(x.shape)}")
            x = out
        return x

    def extra_repr(self) -> str:
        return f"{self.name!r}, {len(self.fns)} hook(s)" if self.name else f"{len(self.fns)} hook(s)"


class _Attached:
    """One attachment of a function: the same function attached twice is two entries, removed one by one."""

    __slots__ = ("fn",)

    def __init__(self, fn: HookFn) -> None:
        self.fn = fn

    def __call__(self, x: Tensor, name: str) -> Tensor | None:
        return self.fn(x, name)
