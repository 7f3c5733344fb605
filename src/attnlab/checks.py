"""Checks and verdicts: what one measurement shows about a text, and no more.

Every claim (``attnlab verify``), every summary line of an experiment (``attnlab
reproduce``) and every construction (``attnlab construct``) ends in one :class:`Check`:

    Check(quantity, measured, relation, threshold, role=..., paper_value=..., where=..., ...)

It holds the numbers only. The criterion text (``"<= 1e-12"``, ``"125 ± 0.5"``) and the
verdict are *derived* from them, never written by hand, so the two cannot drift apart.

There are eight verdicts.

- ``reproduced``: the text's statement or number holds within the stated tolerance.
- ``differs``: measured, and the text's statement or number does not hold (this includes
  an error in the text; the errata records of :mod:`attnlab.errata` say whose and why).
- ``inconclusive``: the measurement cannot decide: a value censored at a budget or grid
  edge whose bound does not settle the relation, too few seeds, or not like for like with
  the text (another model, another depth; ``cannot_decide`` says which).
- ``holds`` / ``refuted``: attnlab's own statement (a conjecture, a corrected theorem, a
  result of another paper, a property of an optimiser) holds or does not; counted apart
  from the texts' rows, never as a reproduction.
- ``sanity``: holds by construction or tests attnlab's own code (an internal consistency
  check); shown apart, never counted as a reproduction.
- ``fail``: an invariant of attnlab's own code is broken (a construction that does not do
  what it was built to do, a sanity check that does not hold, a value that is not a
  number): a bug.
- ``info``: a descriptive row that compares with nothing.

How a verdict is derived. The *role* says what kind of statement the check tests, and
the *anchor* whether the text states it:

    role              anchor     relation holds   does not hold   undecided
    "text"            required   reproduced       differs         inconclusive
    "construction"    given      reproduced       fail            inconclusive
    "construction"    none       sanity           fail            inconclusive
    "own"             none       holds            refuted         inconclusive
    "sanity"          none       sanity           fail            inconclusive
    "info"            none       info (no relation)

Only a row anchored to an entry of its text's ledger (:mod:`attnlab.ledger`: the text's
words, quoted) can be reproduced or differ; :class:`Check` refuses a text row without
an anchor, and an anchor on a row of any other role but construction. An anchored row
also says its ``falsifier``: in one line, the result that would have made it differ (a
row that cannot fail is no reproduction). A ``differs`` row names the ``erratum`` it
evidences: an errata record's id (:mod:`attnlab.errata`), or :data:`NO_ERROR` where the
text's statement simply does not hold with no error in the text (a measured number that
differs); several rows may evidence one record, and reports count distinct *findings*
(:func:`finding`).

A text check with ``cannot_decide`` set is ``inconclusive`` whatever the numbers say; a
measured value that is not a number (NaN) is ``fail`` in every role but info (for an own
statement too: a NaN is attnlab's bug, not a refutation).

Inside :func:`anchored` (a claim runs its check there), a text or construction row built
without an anchor, falsifier or erratum takes the claim's.

Censored values. A value found at the edge of a search (a capacity search that stopped at its step
budget, an error below the resolution of the solver that measured it) is a
:class:`Bound`, not a number. ``Bound.at_least(750)`` means that the true value is at
least 750. It prints as a bound, and it decides a relation only where the whole interval
it allows decides it (``> 1`` with a lower bound of 20 holds, ``<= 1000`` with a lower
bound of 750 is undecided). It never enters a fit, since :func:`uncensored` raises
:class:`Censored` where a fit would need an exact value.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Iterator, Mapping, Sequence

from attnlab.errors import ConfigError

VERDICTS = ("reproduced", "differs", "inconclusive", "holds", "refuted", "sanity", "fail", "info")
"""Every verdict, in the order reports count them."""
JUDGED = ("reproduced", "differs", "inconclusive", "holds", "refuted", "sanity", "fail")
ROLES = ("text", "own", "construction", "sanity", "info")
RELATIONS = ("<=", "<", ">=", ">", "==", "±")
GROUPS = ("text", "own", "sanity", "info")
"""Where a row is counted: the texts' statements, attnlab's own statements, sanity checks, info."""
NO_ERROR = "none"
"""The ``erratum`` of a differs row whose statement does not hold with no error in the text
(a measured number that differs from the printed one)."""

_TABLE = {  # role -> (holds, does not hold, undecided)
    "text": ("reproduced", "differs", "inconclusive"),
    "construction": ("reproduced", "fail", "inconclusive"),
    "own": ("holds", "refuted", "inconclusive"),
    "sanity": ("sanity", "fail", "inconclusive"),
}
_ANCHORED_ROLES = ("text", "construction")

# what a claim gives the rows its check builds (see :func:`anchored`)
_CONTEXT: contextvars.ContextVar[Mapping[str, str]] = contextvars.ContextVar("attnlab_check_context", default={})
_READING: contextvars.ContextVar[bool] = contextvars.ContextVar("attnlab_reading_stored", default=False)


@contextlib.contextmanager
def anchored(anchor: str = "", falsifier: str = "", erratum: str = "") -> Iterator[None]:
    """Within the block, a text or construction row built without an anchor, a falsifier or
    an erratum takes these (a claim runs its check here, so that its check function need not
    repeat what the claim's registration says)."""
    token = _CONTEXT.set({"anchor": anchor, "falsifier": falsifier, "erratum": erratum})
    try:
        yield
    finally:
        _CONTEXT.reset(token)


@contextlib.contextmanager
def reading_stored() -> Iterator[None]:
    """Within the block, checks are read back from storage: a row stored before rows were
    anchored (a text row with no anchor) is accepted as it was stored."""
    token = _READING.set(True)
    try:
        yield
    finally:
        _READING.reset(token)


# ---- censored values ----------------------------------------------------------------------
class Censored(ValueError):
    """A censored value reached a computation that needs an exact one (a fit, a mean)."""


@dataclass(frozen=True)
class Bound:
    """A censored measurement: the true value lies in [lower, upper] (either end may be infinite).

    lower:  the smallest value the truth can take (-inf: unbounded below)
    upper:  the largest (+inf: unbounded above)
    reason: why it is censored ("search stopped at its 20000-step budget")
    """

    lower: float = -math.inf
    upper: float = math.inf
    reason: str = ""

    def __post_init__(self) -> None:
        lo, hi = float(self.lower), float(self.upper)
        if math.isnan(lo) or math.isnan(hi) or lo > hi or (math.isinf(lo) and math.isinf(hi)):
            raise ConfigError(f"a bound needs lower <= upper with at least one finite end, got [{lo}, {hi}]")
        object.__setattr__(self, "lower", lo)
        object.__setattr__(self, "upper", hi)

    @classmethod
    def at_least(cls, value: float, reason: str = "") -> "Bound":
        """The true value is >= ``value`` (e.g. a search that stopped before it found the end)."""
        return cls(float(value), math.inf, reason)

    @classmethod
    def at_most(cls, value: float, reason: str = "") -> "Bound":
        """The true value is <= ``value`` (e.g. an error below the resolution that measured it)."""
        return cls(-math.inf, float(value), reason)

    def __str__(self) -> str:
        if math.isinf(self.upper):
            return f">= {_num(self.lower)}"
        if math.isinf(self.lower):
            return f"<= {_num(self.upper)}"
        return f"[{_num(self.lower)}, {_num(self.upper)}]"

    def to_dict(self) -> dict:
        return {"lower": None if math.isinf(self.lower) else self.lower,
                "upper": None if math.isinf(self.upper) else self.upper,
                "bound": str(self), "reason": self.reason}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Bound":
        lo, hi = d.get("lower"), d.get("upper")
        return cls(-math.inf if lo is None else lo, math.inf if hi is None else hi, d.get("reason", ""))


def uncensored(values: Iterable[Any], what: str = "a fit") -> list[float]:
    """``values`` as floats; :class:`Censored` if any of them is a :class:`Bound`.

    A fit over a grid with a censored point is not a measurement of the slope: call this
    where the exact values are needed and turn ``Censored`` into an inconclusive check.
    """
    out = []
    for v in values:
        if isinstance(v, Bound):
            raise Censored(f"{what} needs exact values; {v} is censored"
                           + (f" ({v.reason})" if v.reason else ""))
        out.append(float(v))
    return out


# ---- the check ------------------------------------------------------------------------------
CONTROL_DISAGREES = "its control without the deviations gives another verdict"
"""Why a text row whose control run disagrees with it is inconclusive (:meth:`Check.with_control`)."""


@dataclass(frozen=True)
class Check:
    """One measured statement and its verdict.

    quantity:      what is measured ("max |y_hat - y|", "R^2 of T* against H")
    measured:      the number (int, float, bool), a :class:`Bound` when censored, or for an
                   ``info`` row any value (text included)
    relation:      "<=", "<", ">=", ">", "==" or "±" (|measured - threshold| <= tolerance);
                   None for ``info``
    threshold:     the number the relation compares with (the target of "±")
    tolerance:     the half-width of "±"; None otherwise
    role:          "text" (a statement of the text), "construction" (attnlab's realisation of
                   it must work), "sanity" (true by construction) or "info"; see the module
                   docstring for the verdict each gives
    paper_value:   what the text prints, as text or a number (None: it prints nothing)
    where:         where the text states it (section, equation, figure, table)
    cannot_decide: why this measurement cannot decide the text's statement although it was
                   made ("another model: MiniLM layer 6 against BERT layer 12", "2 seeds");
                   makes a text check inconclusive
    detail:        one line of context (sizes, seeds, the worst case)
    values:        the numbers behind ``detail``, by name (what tests and ``--json`` read)
    anchor:        the id of the ledger entry the row checks ("memorization.theorem-1");
                   required for role "text", allowed for "construction", refused otherwise
    falsifier:     for an anchored row, the result that would have made it differ, in one line
    erratum:       for a row that may differ, the errata record it evidences, or
                   :data:`NO_ERROR` (the statement does not hold, with no error in the text)
    deviations:    ids of the experiment's deviations from the text's protocol that touch the row
                   (:mod:`attnlab.deviations`): a text row with one is decided only with a control
    control:       the same row measured with those deviations removed and giving the same verdict
                   ("logic.learning with B full, quick scale: differs in 3 of 3 seeds")
    support:       for a row decided over seeds, how many seeds carry the verdict ("4 of 5 seeds")
    """

    quantity: str
    measured: Any
    relation: str | None = None
    threshold: Any = None
    tolerance: float | None = None
    role: str = "text"
    paper_value: Any = None
    where: str = ""
    cannot_decide: str = ""
    detail: str = ""
    values: Mapping[str, Any] = field(default_factory=dict)
    anchor: str = ""
    falsifier: str = ""
    erratum: str = ""
    deviations: tuple[str, ...] = ()
    control: str = ""
    support: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "deviations", tuple(self.deviations))
        what = f"check {self.quantity!r}"
        if self.role not in ROLES:
            raise ConfigError(f"{what}: role must be one of {', '.join(ROLES)}, got {self.role!r}")
        if self.role in _ANCHORED_ROLES:
            ctx = _CONTEXT.get()
            for name in ("anchor", "falsifier", "erratum") if self.role == "text" else ("anchor", "falsifier"):
                if not getattr(self, name) and ctx.get(name):
                    object.__setattr__(self, name, ctx[name])
        self._check_anchor(what)
        if self.role == "info":
            if self.relation is not None:
                raise ConfigError(f"{what}: an info row compares with nothing; drop relation {self.relation!r}")
            return
        if self.relation not in RELATIONS:
            raise ConfigError(f"{what}: relation must be one of {', '.join(RELATIONS)}, got {self.relation!r}")
        if self.relation == "±":
            if self.tolerance is None or not float(self.tolerance) >= 0:
                raise ConfigError(f"{what}: '±' needs a tolerance >= 0")
        elif self.tolerance is not None:
            raise ConfigError(f"{what}: a tolerance belongs to '±' only; put it in threshold")
        if isinstance(self.threshold, Bound) or _number(self.threshold) is None:
            raise ConfigError(f"{what}: the threshold must be a number, got {self.threshold!r}")
        if not isinstance(self.measured, Bound) and _number(self.measured) is None:
            raise ConfigError(f"{what}: a judged check measures a number or a Bound, got {self.measured!r}; "
                              "use role='info' for a descriptive row")

    def _check_anchor(self, what: str) -> None:
        if self.anchor and self.role not in _ANCHORED_ROLES:
            raise ConfigError(f"{what}: a {self.role} row cannot be anchored to the text ({self.anchor!r}); only a "
                              "text or construction row checks a ledger entry")
        if self.erratum and self.role != "text":
            raise ConfigError(f"{what}: only a text row can evidence an erratum ({self.erratum!r})")
        if _READING.get():
            return
        if self.role == "text" and not self.anchor:
            raise ConfigError(f"{what}: a text row needs an anchor, the id of the ledger entry that quotes what it "
                              "checks; attnlab's own statement is role='own', a check of attnlab's code "
                              "role='sanity'")
        if self.anchor and not self.falsifier.strip():
            raise ConfigError(f"{what}: an anchored row says its falsifier: in one line, the result that would have "
                              "made it differ")

    # -- derived ------------------------------------------------------------------------------
    @property
    def group(self) -> str:
        """Where the row is counted (:data:`GROUPS`): "text" (a statement of the text: a text row
        or an anchored construction), "own" (attnlab's own statement), "sanity" or "info"."""
        if self.role == "construction":
            return "text" if self.anchor else "sanity"
        return self.role

    @property
    def outcome(self) -> bool | None:
        """Whether the relation holds (True), does not (False), or the bound cannot tell (None)."""
        if self.role == "info":
            return None
        lo, hi = self._interval()
        t = float(_number(self.threshold))
        r = self.relation
        if r == "±":
            tol = float(self.tolerance)
            a, b = t - tol, t + tol
            return True if (a <= lo and hi <= b) else False if (hi < a or lo > b) else None
        if r == "==":
            return True if lo == hi == t else False if (t < lo or t > hi) else None
        inside, outside = {
            "<=": (hi <= t, lo > t), "<": (hi < t, lo >= t),
            ">=": (lo >= t, hi < t), ">": (lo > t, hi <= t),
        }[r]
        return True if inside else False if outside else None

    @property
    def verdict(self) -> str:
        """One of :data:`VERDICTS`, from the role, the numbers and ``cannot_decide``."""
        if self.role == "info":
            return "info"
        if self._nan():
            return "fail"
        holds, breaks, undecided = _TABLE[self.role]
        if self.role == "construction" and not self.anchor:
            holds = "sanity"
        if self.role in ("text", "own") and self.cannot_decide:
            return "inconclusive"
        if self.uncontrolled:
            return "inconclusive"
        o = self.outcome
        return undecided if o is None else holds if o else breaks

    @property
    def uncontrolled(self) -> bool:
        """A text row touched by a deviation from the text's protocol, with no control run without it:
        the deviation, not the text, could decide it, so it is inconclusive whatever the numbers say."""
        return self.role == "text" and bool(self.deviations) and not self.control.strip()

    @property
    def passed(self) -> bool:
        """The check's relation holds (for a text check: the text is reproduced)."""
        return self.outcome is True and not self._nan()

    @property
    def criterion(self) -> str:
        """The comparison as text: "<= 1e-12", "125 ± 0.5", "== yes"; "" for info."""
        if self.role == "info":
            return ""
        if self.relation == "±":
            return f"{_num(self.threshold)} ± {_num(self.tolerance)}"
        return f"{self.relation} {_num(self.threshold)}"

    @property
    def measured_text(self) -> str:
        return fmt_measured(self.measured)

    @property
    def reason(self) -> str:
        """Why the verdict is what it is, in one phrase (empty where the numbers say it all)."""
        v = self.verdict
        if v == "fail" and self._nan():
            return "the measured value is not a number"
        if v != "inconclusive":
            return ""
        if self.role in ("text", "own") and self.cannot_decide:
            return self.cannot_decide
        if self.uncontrolled:
            return (f"deviation{'s' if len(self.deviations) > 1 else ''} from the text's protocol "
                    f"({', '.join(self.deviations)}) and no control run without "
                    f"{'them' if len(self.deviations) > 1 else 'it'}")
        b = self.measured
        return f"censored: {b} cannot decide {self.criterion}" + (f" ({b.reason})" if b.reason else "")

    @property
    def text(self) -> str:
        """The whole line: "quantity: measured criterion -> verdict"."""
        core = f"{self.quantity}: {self.measured_text}"
        if self.criterion:
            core += f", required {self.criterion}"
        shown = self.support and self.verdict in ("reproduced", "differs", "holds", "refuted")
        out = f"{core} -> {self.verdict}" + (f" in {self.support}" if shown else "")
        return out + (f" ({self.reason})" if self.reason else "")

    def _interval(self) -> tuple[float, float]:
        if isinstance(self.measured, Bound):
            return self.measured.lower, self.measured.upper
        x = float(_number(self.measured))
        return x, x

    def _nan(self) -> bool:
        return not isinstance(self.measured, Bound) and math.isnan(float(_number(self.measured)))

    # -- storage --------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        return {
            "quantity": self.quantity,
            "measured": _json(self.measured),
            "measured_text": self.measured_text,
            "relation": self.relation,
            "threshold": _json(self.threshold),
            "tolerance": _json(self.tolerance),
            "criterion": self.criterion,
            "role": self.role,
            "verdict": self.verdict,
            "reason": self.reason,
            "paper_value": _json(self.paper_value),
            "where": self.where,
            "cannot_decide": self.cannot_decide,
            "detail": self.detail,
            "values": {str(k): _json(v) for k, v in self.values.items()},
            "anchor": self.anchor,
            "falsifier": self.falsifier,
            "erratum": self.erratum,
            "group": self.group,
            "deviations": list(self.deviations),
            "control": self.control,
            "support": self.support,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Check":
        """Read a stored check back; its verdict is derived again from the stored numbers."""
        m = d.get("measured")
        if isinstance(m, dict) and "bound" in m:
            m = Bound.from_dict(m)
        with reading_stored():
            return cls(d.get("quantity", ""), _unjson(m), d.get("relation"), _unjson(d.get("threshold")),
                       d.get("tolerance"), d.get("role", "text"), d.get("paper_value"), d.get("where", ""),
                       d.get("cannot_decide", ""), d.get("detail", ""), dict(d.get("values") or {}),
                       d.get("anchor", ""), d.get("falsifier", ""), d.get("erratum", ""),
                       tuple(d.get("deviations") or ()), d.get("control", ""), d.get("support", ""))

    def with_context(self, **changes: Any) -> "Check":
        """A copy with fields filled in (a claim adds its statement, where and paper value)."""
        return replace(self, **changes)

    def with_control(self, control: str, *, agrees: bool) -> "Check":
        """This row with its control run (:attr:`control`: what ran without the deviations and what it gave).
        A control that gives another verdict is shown all the same, and the row is inconclusive for that
        reason (:data:`CONTROL_DISAGREES`), not for want of a control."""
        if agrees:
            return replace(self, control=control)
        return replace(self, control=control, cannot_decide=self.cannot_decide or CONTROL_DISAGREES)


# ---- constructors ---------------------------------------------------------------------------
def compare(quantity: str, measured: Any, relation: str, threshold: Any, *, tolerance: float | None = None,
            role: str = "text", paper_value: Any = None, where: str = "", cannot_decide: str = "",
            detail: str = "", values: Mapping[str, Any] | None = None, anchor: str = "", falsifier: str = "",
            erratum: str = "", deviations: Sequence[str] = (), control: str = "", support: str = "") -> Check:
    """A judged check: ``measured relation threshold`` (see :class:`Check` for every field)."""
    return Check(quantity, _plain(measured), relation, _plain(threshold), tolerance, role, paper_value, where,
                 cannot_decide, detail, dict(values or {}), anchor, falsifier, erratum, tuple(deviations), control,
                 support)


def at_most(measured: Any, threshold: float, detail: str = "", values: Mapping[str, Any] | None = None, *,
            quantity: str = "", **kw: Any) -> Check:
    """Holds iff measured <= threshold (an error that must be small)."""
    return compare(quantity, measured, "<=", threshold, detail=detail, values=values, **kw)


def at_least(measured: Any, threshold: float, detail: str = "", values: Mapping[str, Any] | None = None, *,
             quantity: str = "", **kw: Any) -> Check:
    """Holds iff measured >= threshold (a rank or a probability that must be large)."""
    return compare(quantity, measured, ">=", threshold, detail=detail, values=values, **kw)


def below(measured: Any, threshold: float, detail: str = "", values: Mapping[str, Any] | None = None, *,
          quantity: str = "", **kw: Any) -> Check:
    """Holds iff measured < threshold."""
    return compare(quantity, measured, "<", threshold, detail=detail, values=values, **kw)


def above(measured: Any, threshold: float, detail: str = "", values: Mapping[str, Any] | None = None, *,
          quantity: str = "", **kw: Any) -> Check:
    """Holds iff measured > threshold."""
    return compare(quantity, measured, ">", threshold, detail=detail, values=values, **kw)


def near(measured: Any, target: float, tolerance: float, detail: str = "",
         values: Mapping[str, Any] | None = None, *, quantity: str = "", **kw: Any) -> Check:
    """Holds iff |measured - target| <= tolerance (a slope, a ratio that must be close to a value)."""
    return compare(quantity, measured, "±", target, tolerance=float(tolerance), detail=detail, values=values, **kw)


def equals(measured: Any, target: Any, detail: str = "", values: Mapping[str, Any] | None = None, *,
           quantity: str = "", **kw: Any) -> Check:
    """Holds iff measured == target (a count, a rank, a yes/no)."""
    return compare(quantity, measured, "==", target, detail=detail, values=values, **kw)


def info(quantity: str, measured: Any, *, paper_value: Any = None, where: str = "", detail: str = "",
         values: Mapping[str, Any] | None = None) -> Check:
    """A descriptive row: a measured value beside the paper's, compared with nothing."""
    return Check(quantity, _plain(measured), None, None, None, "info", paper_value, where, "", detail,
                 dict(values or {}))


def across_seeds(quantity: str, per_seed: Sequence[Any], relation: str, threshold: float, *,
                 min_seeds: int = 3, tolerance: float | None = None, paper_value: Any = None, where: str = "",
                 detail: str = "", values: Mapping[str, Any] | None = None, role: str = "text", anchor: str = "",
                 falsifier: str = "", erratum: str = "", deviations: Sequence[str] = (), control: str = "") -> Check:
    """Whether the statement ``value relation threshold`` holds across seeds, decided by the majority.

    The rule, for every row decided over seeds: a text that shows one run states what a
    typical run gives, so the statement is reproduced when it holds in more than half of the
    seeds and differs when it fails in more than half; the verdict carries its support
    ("4 of 5 seeds", :attr:`Check.support`). It is inconclusive with fewer than ``min_seeds``
    seeds, on a tie, and where censored seeds could tip the majority. The measured value is
    the count of seeds where it holds (a :class:`Bound` over the censored ones), judged
    ``> seeds / 2``; the detail lists every seed's value.
    """
    per = [compare(quantity, v, relation, threshold, tolerance=tolerance, role="sanity") for v in per_seed]
    held = sum(c.outcome is True for c in per)
    failed = sum(c.outcome is False for c in per)
    undecided = len(per) - held - failed
    n = len(per)
    crit = per[0].criterion if per else f"{relation} {_num(threshold)}"
    seeds_text = f"{held} of {n} seeds satisfy {crit}" + (f", {undecided} censored" if undecided else "")
    listing = ", ".join(fmt_measured(c.measured) for c in per)
    cannot, support = "", ""
    if n < min_seeds:
        cannot = f"{n} seed(s), fewer than the {min_seeds} a majority needs"
    elif held == failed and not undecided:
        cannot = f"a tie: {held} of {n} seeds hold, {failed} fail"
    elif held > n / 2:
        support = f"{held} of {n} seeds"
    elif failed > n / 2:
        support = f"{failed} of {n} seeds"
    else:
        cannot = f"no majority: {held} of {n} seeds hold, {failed} fail, {undecided} censored"
    measured = held if not undecided else Bound(held, held + undecided, f"{undecided} censored seed(s)")
    return compare(f"{quantity}: seeds satisfying {crit}", measured, ">", n / 2, paper_value=paper_value,
                   where=where, cannot_decide=cannot, role=role, anchor=anchor, falsifier=falsifier,
                   erratum=erratum, deviations=deviations, control=control, support=support,
                   detail=f"{seeds_text} (per seed: {listing})" + (f"; {detail}" if detail else ""),
                   values={"per_seed": [_json(c.measured) for c in per], "held": held, "failed": failed,
                           "seeds": n, **dict(values or {})})


# ---- counting -------------------------------------------------------------------------------
def count_verdicts(verdicts: Iterable[str]) -> dict[str, int]:
    """{verdict: count} over :data:`VERDICTS` (plus "error" for checks that raised)."""
    counts = dict.fromkeys((*VERDICTS, "error"), 0)
    for v in verdicts:
        counts[v] = counts.get(v, 0) + 1
    return counts


def finding(check: Check) -> str:
    """What a differs row evidences, as one key: its errata record's id, or (with no error in
    the text, or no record named) the ledger entry whose statement does not hold. Rows with
    the same key are one finding."""
    if check.erratum and check.erratum != NO_ERROR:
        return check.erratum
    return f"statement {check.anchor}" if check.anchor else f"row {check.quantity}"


@dataclass(frozen=True)
class Tally:
    """Rows counted where they belong (:data:`GROUPS`).

    text:     {"reproduced", "differs", "inconclusive"}: the texts' statements (anchored rows)
    own:      {"holds", "refuted", "inconclusive"}: attnlab's own statements
    sanity, fail, info, error: the other rows, and the checks that raised
    findings: the distinct findings among the text's differs rows (:func:`finding`): errata
              records and statements that do not hold, each counted once
    """

    text: Mapping[str, int]
    own: Mapping[str, int]
    sanity: int = 0
    fail: int = 0
    info: int = 0
    error: int = 0
    findings: int = 0

    @property
    def total(self) -> int:
        return sum(self.text.values()) + sum(self.own.values()) + self.sanity + self.fail + self.info + self.error

    def to_dict(self) -> dict:
        return {"text": dict(self.text), "own": dict(self.own), "sanity": self.sanity, "fail": self.fail,
                "info": self.info, "error": self.error, "findings": self.findings, "total": self.total}


def tally(checks: Iterable[Check | None]) -> Tally:
    """Count ``checks`` by group and verdict; None counts as a check that raised."""
    text = dict.fromkeys(("reproduced", "differs", "inconclusive"), 0)
    own = dict.fromkeys(("holds", "refuted", "inconclusive"), 0)
    rest = dict.fromkeys(("sanity", "fail", "info", "error"), 0)
    keys: set[str] = set()
    for c in checks:
        if c is None:
            rest["error"] += 1
            continue
        v = c.verdict
        if v in ("fail", "info", "sanity"):
            rest[v] += 1
        elif c.group == "own":
            own[v] += 1
        else:
            text[v] += 1
            if v == "differs":
                keys.add(finding(c))
    return Tally(text, own, rest["sanity"], rest["fail"], rest["info"], rest["error"], len(keys))


def tally_line(t: Tally, noun: str = "checks") -> str:
    """"78 claims · the texts: 20 reproduced, 8 differs (5 findings), 3 inconclusive · attnlab's own
    statements: 10 holds, 0 refuted, 1 inconclusive · 30 sanity, 0 fail, 1 info"."""
    d = t.text["differs"]
    texts = (f"the texts: {t.text['reproduced']} reproduced, {d} differs"
             + (f" ({t.findings} finding{'s' if t.findings != 1 else ''})" if d else "")
             + f", {t.text['inconclusive']} inconclusive")
    own = (f"attnlab's own statements: {t.own['holds']} holds, {t.own['refuted']} refuted, "
           f"{t.own['inconclusive']} inconclusive")
    rest = f"{t.sanity} sanity, {t.fail} fail, {t.info} info" + (f", {t.error} error" if t.error else "")
    return f"{t.total} {noun} · {texts} · {own} · {rest}"


def counts_line(counts: Mapping[str, int], noun: str = "checks") -> str:
    """"68 claims: 40 reproduced, 9 differs, 6 inconclusive, 0 holds, 0 refuted, 12 sanity, 0 fail, 1 info"
    (verdicts only; :func:`tally_line` counts the texts' rows and attnlab's own apart)."""
    total = sum(counts.values())
    parts = [f"{counts.get(v, 0)} {v}" for v in VERDICTS]
    if counts.get("error"):
        parts.append(f"{counts['error']} error")
    return f"{total} {noun}: " + ", ".join(parts)


def exit_status(verdicts: Iterable[str], *, strict: bool = False) -> int:
    """0 when nothing failed or raised; with ``strict`` also 1 on differs, refuted or inconclusive."""
    bad = {"fail", "error"} | ({"differs", "refuted", "inconclusive"} if strict else set())
    return 1 if any(v in bad for v in verdicts) else 0


# ---- formatting -----------------------------------------------------------------------------
def fmt_measured(v: Any) -> str:
    if isinstance(v, Bound):
        return str(v)
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (int, float)):
        return _num(v)
    return "–" if v is None else str(v)


def _num(x: Any) -> str:
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return f"{x:,}" if abs(x) >= 100_000 else str(x)
    try:
        f = float(x)
    except (TypeError, ValueError):
        return str(x)
    if math.isnan(f) or math.isinf(f):
        return str(f)
    if f == int(f) and abs(f) < 1e15:
        return str(int(f)) if abs(f) < 100_000 else f"{int(f):,}"
    return f"{f:.3g}"


def _number(x: Any) -> float | int | bool | None:
    if isinstance(x, (bool, int, float)):
        return x
    if hasattr(x, "item") and callable(x.item) and getattr(x, "ndim", 0) == 0:
        return x.item()
    return None


def _plain(x: Any) -> Any:
    """Tensor and NumPy scalars as Python numbers; everything else unchanged."""
    n = _number(x)
    return x if n is None else n


def _json(v: Any) -> Any:
    if isinstance(v, Bound):
        return v.to_dict()
    v = _plain(v)
    if isinstance(v, float):
        return v if math.isfinite(v) else str(v)
    if isinstance(v, (list, tuple)):
        return [_json(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _json(x) for k, x in v.items()}
    return v


def _unjson(v: Any) -> Any:
    if isinstance(v, str) and v in ("nan", "inf", "-inf"):
        return float(v)
    return v


# ---- rows stored by an earlier release ---------------------------------------------------------
@dataclass(frozen=True)
class LegacyCheck(Check):
    """A summary row stored before verdicts were derived: its criterion as text and its
    pass/fail given apart (``status`` pass/FAIL/info in results.json). Only for reading
    such a run directory back (``attnlab report``); pass reads as ``reproduced``, FAIL as
    ``fail``, info as ``info``.
    """

    expected_text: str = ""
    legacy_passed: bool | None = None

    def __post_init__(self) -> None:
        pass

    @property
    def outcome(self) -> bool | None:
        return self.legacy_passed

    @property
    def verdict(self) -> str:
        return {True: "reproduced", False: "fail", None: "info"}[self.legacy_passed]

    @property
    def uncontrolled(self) -> bool:
        """A text row touched by a deviation from the text's protocol, with no control run without it:
        the deviation, not the text, could decide it, so it is inconclusive whatever the numbers say."""
        return self.role == "text" and bool(self.deviations) and not self.control.strip()

    @property
    def passed(self) -> bool:
        return bool(self.legacy_passed)

    @property
    def criterion(self) -> str:
        return str(self.expected_text or "")

    @property
    def reason(self) -> str:
        return ""


def legacy_check(quantity: str, paper_value: Any, measured: Any, expected: Any, passed: bool | None,
                 detail: str = "") -> LegacyCheck:
    """A stored row of an earlier release as a :class:`LegacyCheck`."""
    return LegacyCheck(quantity, _plain(measured), "legacy", None, None, "text", paper_value, "", "", detail, {},
                       expected_text="" if expected is None else str(expected),
                       legacy_passed=None if passed is None else bool(passed))


__all__ = ["Bound", "Censored", "Check", "GROUPS", "JUDGED", "NO_ERROR", "RELATIONS", "ROLES", "Tally", "VERDICTS",
           "above", "across_seeds", "anchored", "at_least", "at_most", "below", "compare", "count_verdicts",
           "counts_line", "equals", "exit_status", "finding", "fmt_measured", "info", "near", "reading_stored",
           "tally", "tally_line", "uncensored"]
