"""Claims: one checkable sentence of a paper each, registered with :func:`claim`, and the
result of running one (:class:`ClaimResult`)."""

from __future__ import annotations

import fnmatch
import time
import traceback
from dataclasses import dataclass
from typing import Callable

from attnlab.checks import Check, anchored
from attnlab.errors import ConfigError, UnknownNameError
from attnlab.registry.state import _STATE, check_anchor, discover, record


CheckFn = Callable[[int], Check]


@dataclass(frozen=True)
class Claim:
    """One checkable statement and the check that measures it.

    id:          "<paper>.<name>"
    where:       where the text states it
    statement:   the sentence checked (the text's, or attnlab's own for an own or sanity row)
    check:       check(seed) -> Check
    paper_value: what the text prints (None where it prints nothing)
    anchor:      the ledger entry the claim checks ("" for attnlab's own statements and sanity
                 checks); its check's text rows take it, and the falsifier and erratum
    falsifier:   the result that would have made the claim differ, in one line
    erratum:     the errata record a differs evidences, or ``checks.NO_ERROR``
    """

    id: str
    where: str
    statement: str
    check: CheckFn
    paper_value: str | None = None
    anchor: str = ""
    falsifier: str = ""
    erratum: str = ""

    @property
    def paper(self) -> str:
        return self.id.split(".", 1)[0]

    def run(self, seed: int = 0) -> "ClaimResult":
        """Run the check; the claim's statement, where and paper value fill what the check leaves empty."""
        start = time.perf_counter()
        try:
            with anchored(self.anchor, self.falsifier, self.erratum):
                m = self.check(seed)
            if not isinstance(m, Check):
                raise TypeError(f"check returned {type(m).__name__}, not attnlab.checks.Check")
            m = m.with_context(quantity=m.quantity or self.statement, where=m.where or self.where,
                               paper_value=self.paper_value if m.paper_value is None else m.paper_value)
            return ClaimResult(self, m, None, time.perf_counter() - start)
        except Exception:  # a broken check is reported, never hidden
            return ClaimResult(self, None, traceback.format_exc(limit=4), time.perf_counter() - start)


@dataclass(frozen=True)
class ClaimResult:
    claim: Claim
    check: Check | None
    error: str | None
    seconds: float = 0.0

    @property
    def verdict(self) -> str:
        """The check's verdict (:data:`attnlab.checks.VERDICTS`), or "error" if the check raised."""
        return "error" if self.check is None else self.check.verdict

    def to_dict(self) -> dict:
        d = {
            "id": self.claim.id,
            "paper": self.claim.paper,
            "where": self.claim.where,
            "statement": self.claim.statement,
            "paper_value": self.claim.paper_value,
            "anchor": self.claim.anchor,
            "verdict": self.verdict,
            "seconds": round(self.seconds, 4),
        }
        if self.check is not None:
            c = self.check.to_dict()
            c.pop("paper_value"), c.pop("where")
            d.update(c)
            d["anchor"] = c["anchor"]
            d["verdict"] = self.verdict
        else:
            d["error"] = self.error
        return d


def register_claim(c: Claim) -> Claim:
    """Register ``c`` (the :func:`claim` decorator does it for a check function)."""
    if "." not in c.id or c.paper not in _STATE.papers:
        raise ConfigError(f"claim id {c.id!r} must be '<paper>.<name>' with paper in {list(_STATE.papers)}")
    if c.anchor:
        check_anchor(f"claim {c.id!r}", c.paper, c.anchor)
        if not c.falsifier.strip():
            raise ConfigError(f"claim {c.id!r}: an anchored claim says its falsifier (the result that would have "
                              "made it differ)")
    return record("claims", c.id, c, c.paper, c.check.__module__)


def claim(id: str, *, where: str, statement: str, paper_value: str | None = None, anchor: str = "",
          falsifier: str = "", erratum: str = ""):
    """Register the decorated ``check(seed) -> Check`` as the claim ``id`` (fields: :class:`Claim`)."""
    paper = id.split(".", 1)[0]
    if "." not in id or paper not in _STATE.papers:
        raise ConfigError(f"claim id {id!r} must be '<paper>.<name>' with paper in {list(_STATE.papers)}")

    def register(check: CheckFn) -> CheckFn:
        register_claim(Claim(id, where, statement, check, paper_value, anchor, falsifier, erratum))
        return check

    return register


def all_claims() -> list[Claim]:
    discover()
    return sorted(_STATE.claims.values(), key=lambda c: c.id)


def select_claims(selectors: list[str] | None = None) -> list[Claim]:
    """Claims matching paper names, claim ids (a whole id names that claim alone), any prefix
    of an id, or a glob of ids (``memorization.prop*``, ``*.theorem1*``); all when empty.

    A known paper with no claims yet is a ConfigError: nothing would be checked."""
    claims = all_claims()
    if not selectors:
        return claims
    chosen: dict[str, Claim] = {}
    for s in selectors:
        if any(ch in s for ch in "*?["):
            hits = [c for c in claims if fnmatch.fnmatchcase(c.id, s)]
        elif any(c.id == s for c in claims):  # a whole id names that claim alone
            hits = [c for c in claims if c.id == s]
        else:
            hits = [c for c in claims if c.paper == s or c.id.startswith(s)]
        if not hits:
            if s in _STATE.papers:
                with_claims = sorted({c.paper for c in claims})
                raise ConfigError(f"paper {s!r} has no executable claims yet; papers with claims: "
                                  f"{', '.join(with_claims)}")
            raise UnknownNameError(
                f"unknown paper or claim {s!r}: papers are {', '.join(_STATE.papers)}; "
                "`attnlab list` shows every claim id"
            )
        chosen.update((c.id, c) for c in hits)
    return sorted(chosen.values(), key=lambda c: c.id)
