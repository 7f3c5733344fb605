"""Constructions: weights built from parameters, in the paper's orientation, with the check that
proves they work; registered with :func:`register_construction`."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from attnlab.checks import Check
from attnlab.errors import ConfigError, UnknownNameError
from attnlab.registry.state import _STATE, check_anchor, discover, record
from attnlab.runs.jsonable import to_jsonable


@dataclass
class ConstructionResult:
    """What a construction built and what its check measured.

    arrays: what ``--out`` saves (.npz): weights and the data they were built for, in the
            paper's notation and orientation
    values: the check's numbers and the parameters, in the order they are shown
    check:  the :class:`attnlab.checks.Check` that proves the weights do what the text says
            (role "construction", anchored to the statement it realises where the text's
            hypotheses hold: reproduced, or fail when attnlab's construction is wrong;
            unanchored, a sanity check, where they do not; role "text" where the text's
            statement itself may not hold for these parameters)
    notes:  caveats and where the construction departs from the text
    """

    arrays: dict[str, Any]
    values: dict[str, Any]
    check: Check
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not isinstance(self.check, Check):
            raise TypeError(f"ConstructionResult.check must be an attnlab.checks.Check, got {type(self.check).__name__}")

    @property
    def verdict(self) -> str:
        return self.check.verdict

    @property
    def passed(self) -> bool:
        """The construction's check holds."""
        return self.check.passed

    @property
    def criterion(self) -> str:
        return f"{self.check.quantity} {self.check.criterion}"

    def to_dict(self) -> dict:
        return {**{k: to_jsonable(v) for k, v in self.values.items()}, "verdict": self.verdict,
                "passed": bool(self.passed), "criterion": self.criterion, "check": self.check.to_dict(),
                "notes": list(self.notes), "arrays": sorted(self.arrays)}


@dataclass(frozen=True)
class Construction:
    """name: what ``attnlab construct NAME`` takes; params_cls: a frozen attnlab.config.Config
    whose fields are the ``--set`` keys; build(params) -> ConstructionResult.

    Every parameter can also be given as ``--<name> value`` (``-`` for ``_``);
    ``flag_aliases`` maps further value-less flags to (parameter, value), e.g.
    {"per-example": ("shared", False)}.

    estimate(params) -> :class:`attnlab.estimates.Estimate`: the peak memory and the work of
    ``build(params)``, from the parameters alone (no array allocated). ``attnlab construct``
    refuses before building when the memory exceeds the machine's, says the estimate when
    the time exceeds ``attnlab.estimates.ANNOUNCE_SECONDS``, and prints it with ``--dry-run``.

    ``anchors``: the ledger entries its check may be anchored to (what ``attnlab coverage``
    lists it under).
    """

    name: str
    paper: str
    description: str
    params_cls: type
    build: Callable[[Any], ConstructionResult]
    flag_aliases: Mapping[str, tuple[str, Any]] = field(default_factory=dict)
    estimate: Callable[[Any], Any] | None = None
    anchors: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not dataclasses.is_dataclass(self.params_cls) or not self.params_cls.__dataclass_params__.frozen:
            raise ConfigError(f"construction {self.name!r}: its parameters must be a frozen dataclass")


def register_construction(c: Construction) -> Construction:
    """Register ``c`` (call it at the bottom of the construction's module)."""
    from attnlab.config import Config

    if c.paper not in _STATE.papers:
        raise ConfigError(f"construction {c.name!r}: paper {c.paper!r} is not registered")
    if not issubclass(c.params_cls, Config):
        raise ConfigError(f"construction {c.name!r}: its parameters must extend attnlab.config.Config")
    for a in c.anchors:
        check_anchor(f"construction {c.name!r}", c.paper, a)
    return record("constructions", c.name, c, c.paper, c.build.__module__)


def all_constructions() -> list[Construction]:
    discover()
    return sorted(_STATE.constructions.values(), key=lambda c: c.name)


def get_construction(name: str) -> Construction:
    discover()
    if name not in _STATE.constructions:
        known = ", ".join(sorted(_STATE.constructions)) or "none"
        raise UnknownNameError(f"unknown construction {name!r}: choose one of {known}")
    return _STATE.constructions[name]
