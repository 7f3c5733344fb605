"""The cases the invertibility experiments sweep: (N, L, d, P, w) as one key, and the "N:L:d" strings
a config lists them in.

A case is one attention matrix A (N^L x Pd) of the construction
(:mod:`attnlab.papers.invertibility.construction`): N tokens, sequences of length L, embeddings in
R^d, P heads and the scale w of W_QK^p = w p E_11. :class:`CaseKey` holds those five numbers; the
experiments' rows (:class:`attnlab.papers.invertibility.measurement.MeasuredCase` and the rows
built on it) extend it, so every row is keyed the same way and stores the five fields first.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable

from attnlab.config import check_number
from attnlab.errors import ConfigError
from attnlab.papers.invertibility.construction import MAX_ROWS


@dataclass(frozen=True)
class CaseKey:
    """One case of A: vocabulary size N, sequence length L, embedding dimension d, number of heads P
    and the scale w of W_QK^p = w p E_11 (for another W_QK kind, the scale of that kind)."""

    N: int
    L: int
    d: int
    P: int
    w: float

    def size_text(self) -> str:
        """(N, L, d) as text, e.g. "(N,L,d)=(2,4,4)"."""
        return f"(N,L,d)=({self.N},{self.L},{self.d})"

    def heads_text(self, with_w: bool = False) -> str:
        """(N, L, d, P) as text, e.g. "(N,L,d,P)=(2,4,4,4)", and " w=<w>" after it when ``with_w``."""
        return f"(N,L,d,P)=({self.N},{self.L},{self.d},{self.P})" + (f" w={self.w:g}" if with_w else "")


def parse_cases(name: str, values: Iterable[object] | None, parts: int) -> tuple[tuple[int, ...], ...]:
    """Cases written "N:L:d" (parts = 3) or "N:L" (parts = 2) as integer tuples.

    Args:
        name: the config field, named in the errors.
        values: the strings (or anything whose ``str`` is such a string).
        parts: 3 for "N:L:d", 2 for "N:L".

    Raises:
        ConfigError: not a list, an entry that is not ``parts`` integers, N < 1, L < 2 or d < 1,
            N^L above the construction's MAX_ROWS, or no case at all.
    """
    form = ":".join("NLd"[:parts])
    try:
        listed = tuple(values)
    except TypeError:
        raise ConfigError(f"{name} must list cases written {form}, got {values!r}") from None
    out = []
    for v in listed:
        try:
            case = tuple(int(x) for x in str(v).split(":"))
        except ValueError:
            raise ConfigError(f"{name}: {v!r} is not {form} with integers, e.g. {':'.join(['2', '4', '4'][:parts])}") \
                from None
        if len(case) != parts or case[0] < 1 or case[1] < 2 or (parts == 3 and case[2] < 1):
            raise ConfigError(f"{name}: {v!r} must be {form} with N >= 1, L >= 2" + (", d >= 1" if parts == 3 else ""))
        if case[0] ** case[1] > MAX_ROWS:
            raise ConfigError(f"{name}: {v!r} has N^L = {case[0] ** case[1]} rows, more than {MAX_ROWS}; lower N or L")
        out.append(case)
    if not out:
        raise ConfigError(f"{name} must list at least one case written {form}")
    return tuple(out)


def minimal_theorem_heads(N: int, L: int, d: int) -> int:
    """P = ceil(N^L / d): the fewest heads with Pd >= N^L (Theorem 1's hypothesis). Unlike
    :func:`attnlab.papers.invertibility.matrix.minimal_heads` it ignores the rank cap
    1 + P (N + L - 2), so for d > N + L - 2 it may give fewer heads than rank N^L needs."""
    return math.ceil(N ** L / d)


__all__ = ["CaseKey", "minimal_theorem_heads", "parse_cases"]


def cases_and_w_normal_form(values: dict[str, Any]) -> dict[str, Any]:
    """The normal form of a config with ``cases`` and ``w_values``, each checked: a copy of ``values`` with
    the cases written N:L:d and the w values (each > 0) sorted."""
    v = dict(values)
    v["cases"] = tuple(":".join(map(str, c)) for c in parse_cases("cases", v["cases"], 3))
    v["w_values"] = tuple(sorted(check_number("every entry of w_values", w, 0, open_min=True) for w in v["w_values"]))
    return v
