"""The one JSON encoder of attnlab's files: what run directories, sweeps and constructions store.

:func:`to_jsonable` turns a value into plain JSON types: tuples to lists, non-finite floats to
their strings ("nan", "inf", "-inf"), tensors and numpy arrays and scalars to (nested) lists or
numbers, typed results (anything with ``to_dict()``) to their stored form, paths to strings.
A value with no JSON form is a TypeError.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any


def to_jsonable(obj: Any) -> Any:
    """Plain JSON types: tuples to lists, non-finite floats to strings, tensors to lists,
    typed results (anything with ``to_dict()``) to their stored form."""
    if hasattr(obj, "to_dict") and callable(obj.to_dict):
        return to_jsonable(obj.to_dict())
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, bool) or obj is None or isinstance(obj, (int, str)):
        return obj
    if isinstance(obj, float):
        return json_float(obj)
    if hasattr(obj, "tolist"):  # numpy / torch scalars and arrays
        return to_jsonable(obj.tolist())
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"{type(obj).__name__} is not JSON-able")


def json_float(x: float) -> float | str:
    """``x`` as a JSON number, or its string where it is not finite ("nan", "inf", "-inf")."""
    x = float(x)
    return x if math.isfinite(x) else str(x)
