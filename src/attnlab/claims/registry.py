"""The claims registry.

A claim is one checkable sentence of a paper: an id ``<paper>.<name>``, where
in the paper it stands, the statement, the paper's value where it prints one,
and a check. A check takes a seed, draws its own inputs from a generator seeded
with it, and returns a :class:`Measurement`: the measured number, the tolerance
that decided it, and the verdict. A pass is never reported without its
tolerance.
"""

from __future__ import annotations

import math
import time
import traceback
from dataclasses import dataclass
from typing import Callable

from attnlab.errors import ConfigError, UnknownNameError
from attnlab.papers import PAPERS


@dataclass(frozen=True)
class Measurement:
    """What a check measured.

    measured:  the number (an error, a rank, a ratio, ...)
    tolerance: the number it was compared with
    passed:    the verdict
    relation:  how they were compared: "<=", ">=", "==", or "±" (|measured - target| <= tolerance)
    detail:    one line of context (sizes, worst case, paper-vs-ours notes)
    target:    the value a "±" comparison is centred on
    """

    measured: float
    tolerance: float
    passed: bool
    relation: str = "<="
    detail: str = ""
    target: float | None = None

    @property
    def criterion(self) -> str:
        """The comparison as text, e.g. "<= 1e-12" or "-0.5 ± 0.1"."""
        if self.relation == "±":
            return f"{self.target:.3g} ± {self.tolerance:.3g}"
        return f"{self.relation} {self.tolerance:.3g}"

    def to_dict(self) -> dict:
        return {
            "measured": _json_float(self.measured),
            "tolerance": _json_float(self.tolerance),
            "passed": bool(self.passed),
            "relation": self.relation,
            "target": None if self.target is None else _json_float(self.target),
            "detail": self.detail,
        }


def at_most(measured: float, tolerance: float, detail: str = "") -> Measurement:
    """Pass iff measured <= tolerance (an error that must be small)."""
    measured = float(measured)
    return Measurement(measured, float(tolerance), bool(measured <= tolerance), "<=", detail)


def at_least(measured: float, bound: float, detail: str = "") -> Measurement:
    """Pass iff measured >= bound (a rank or a probability that must be large)."""
    measured = float(measured)
    return Measurement(measured, float(bound), bool(measured >= bound), ">=", detail)


def near(measured: float, target: float, tolerance: float, detail: str = "") -> Measurement:
    """Pass iff |measured - target| <= tolerance (a slope, a ratio that must be close to a value)."""
    measured = float(measured)
    ok = abs(measured - target) <= tolerance
    return Measurement(measured, float(tolerance), bool(ok), "±", detail, float(target))


def relative_error(measured: float, target: float) -> float:
    return abs(measured - target) / abs(target) if target != 0 else abs(measured)


CheckFn = Callable[[int], Measurement]


@dataclass(frozen=True)
class Claim:
    id: str
    where: str
    statement: str
    check: CheckFn
    paper_value: str | None = None

    @property
    def paper(self) -> str:
        return self.id.split(".", 1)[0]

    def run(self, seed: int = 0) -> "ClaimResult":
        start = time.perf_counter()
        try:
            m = self.check(seed)
            if not isinstance(m, Measurement):
                raise TypeError(f"check returned {type(m).__name__}, not Measurement")
            return ClaimResult(self, m, None, time.perf_counter() - start)
        except Exception:  # a broken check is reported, never hidden
            return ClaimResult(self, None, traceback.format_exc(limit=4), time.perf_counter() - start)


@dataclass(frozen=True)
class ClaimResult:
    claim: Claim
    measurement: Measurement | None
    error: str | None
    seconds: float = 0.0

    @property
    def status(self) -> str:
        if self.measurement is None:
            return "error"
        return "pass" if self.measurement.passed else "FAIL"

    def to_dict(self) -> dict:
        d = {
            "id": self.claim.id,
            "paper": self.claim.paper,
            "where": self.claim.where,
            "statement": self.claim.statement,
            "paper_value": self.claim.paper_value,
            "status": self.status,
            "seconds": round(self.seconds, 4),
        }
        if self.measurement is not None:
            d.update(self.measurement.to_dict())
        else:
            d["error"] = self.error
        return d


_REGISTRY: dict[str, Claim] = {}


def claim(id: str, *, where: str, statement: str, paper_value: str | None = None):
    """Register the decorated ``check(seed) -> Measurement`` as a claim."""
    paper = id.split(".", 1)[0]
    if paper not in PAPERS or "." not in id:
        raise ConfigError(f"claim id {id!r} must be '<paper>.<name>' with paper in {list(PAPERS)}")

    def register(check: CheckFn) -> CheckFn:
        if id in _REGISTRY:
            raise ConfigError(f"claim {id!r} is registered twice")
        _REGISTRY[id] = Claim(id, where, statement, check, paper_value)
        return check

    return register


def all_claims() -> list[Claim]:
    _load()
    return sorted(_REGISTRY.values(), key=lambda c: c.id)


def select_claims(selectors: list[str] | None = None) -> list[Claim]:
    """Claims matching paper names, claim ids, or id prefixes; all when empty."""
    claims = all_claims()
    if not selectors:
        return claims
    chosen: dict[str, Claim] = {}
    for s in selectors:
        hits = [c for c in claims if c.paper == s or c.id == s or c.id.startswith(s + ".")]
        if not hits:
            if s in PAPERS:
                continue  # a known paper with no claims yet selects nothing
            raise UnknownNameError(
                f"unknown paper or claim {s!r}: papers are {', '.join(PAPERS)}; "
                "`attnlab list` shows every claim id"
            )
        chosen.update((c.id, c) for c in hits)
    return sorted(chosen.values(), key=lambda c: c.id)


def _load() -> None:
    # Importing the package imports every claims module, which registers them.
    import attnlab.claims  # noqa: F401


def _json_float(x: float):
    x = float(x)
    return x if math.isfinite(x) else str(x)
