"""The stored form of a record: every field by name, in declaration order.

A frozen dataclass that results.json (or a claim's values, or ``--json``) stores as its
fields subclasses :class:`Stored` instead of writing ``to_dict`` by hand::

    @dataclass(frozen=True)
    class Stat(Stored):
        mean: float
        min: float
        max: float

    Stat(1.0, 0.5, 2.0).to_dict() == {"mean": 1.0, "min": 0.5, "max": 2.0}

``to_dict`` is ``dataclasses.asdict(self)`` with two differences, both what the stored form
needs: a tuple is stored as a list (JSON has no tuples, and a record read back compares
equal to one written), and a value that has its own ``to_dict`` is stored by it (a nested
record whose stored form is not its fields, e.g. a flattened table row, keeps that form).
A record whose stored form renames, leaves out, adds or flattens fields keeps a
``to_dict`` of its own.
"""

from __future__ import annotations

import dataclasses
from typing import Any


class Stored:
    """Base of a dataclass stored as its fields (module docstring)."""

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        """Every field by name, in declaration order: nested records by their own ``to_dict``,
        other dataclasses field by field, tuples and lists as lists, dicts as dicts (keys as they are)."""
        return {f.name: stored_value(getattr(self, f.name)) for f in dataclasses.fields(self)}


def stored_value(v: Any) -> Any:
    """``v`` as :meth:`Stored.to_dict` stores it (see there); a leaf (number, string, None, tensor) is ``v`` itself."""
    if hasattr(v, "to_dict") and not isinstance(v, type):
        return v.to_dict()
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {f.name: stored_value(getattr(v, f.name)) for f in dataclasses.fields(v)}
    if isinstance(v, (list, tuple)):
        return [stored_value(x) for x in v]
    if isinstance(v, dict):
        return {k: stored_value(x) for k, x in v.items()}
    return v
