"""Deviations: where an experiment's protocol departs from the text's, and why.

An experiment that measures a text's result says, in its :class:`attnlab.results.ExperimentResult`,
every way its protocol differs from the text's (another model, other data, another optimiser, a
step budget, a mask, another statistic, a smaller size), each with the reason. A summary row
touched by a deviation names it (``Check.deviations``), and the report shows the deviation beside
the row.

A deviation never decides a verdict (:mod:`attnlab.checks`): a text row touched by one is
reproduced or differs only if it also names its *control*, the same row measured with the
deviation removed (at least at the quick scale) giving the same verdict; otherwise it is
inconclusive, with the deviation as the reason. ``Deviation.control`` says how the control run is
made, where it can be (``--set B=full``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

from attnlab.errors import ConfigError
from attnlab.stored import Stored

KINDS = ("model", "data", "optimizer", "budget", "masking", "statistic", "size", "architecture", "precision")
"""model: another model than the text's (MiniLM for BERT); data: other data (English text for ImageNet);
optimizer: another optimiser or schedule; budget: a step or search budget the text does not state;
masking: another mask; statistic: another summary of the same measurements (a mean for a median);
size: smaller or larger sizes than the text's; architecture: a part of the model changed or
restricted; precision: another number format."""

_ID = re.compile(r"^[a-z0-9][a-z0-9-]*$")


@dataclass(frozen=True)
class Deviation(Stored):
    """One departure of an experiment's protocol from its text's.

    id:      a slug, unique in the experiment ("diagonal-b"); rows name it in ``Check.deviations``
    kind:    one of :data:`KINDS`
    what:    what attnlab does, against what the text does
    why:     why ("the text's data is not available offline")
    control: how the run without it is made (a ``--set``), "" where it cannot be
    """

    id: str
    kind: str
    what: str
    why: str
    control: str = ""

    def __post_init__(self) -> None:
        if not _ID.match(self.id):
            raise ConfigError(f"deviation id {self.id!r} must be a slug (lower-case letters, digits, '-')")
        if self.kind not in KINDS:
            raise ConfigError(f"deviation {self.id!r}: kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        for name in ("what", "why"):
            if not str(getattr(self, name)).strip():
                raise ConfigError(f"deviation {self.id!r}: say {name}")

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Deviation":
        return cls(d["id"], d["kind"], d["what"], d["why"], d.get("control", ""))


COLUMNS = ("deviation", "kind", "what attnlab does", "why", "control run")


def table_rows(deviations: "list[Deviation] | list[dict]") -> list[list[str]]:
    """The rows of a report's table of an experiment's deviations (:data:`COLUMNS`)."""
    out = []
    for d in deviations:
        x = d.to_dict() if isinstance(d, Deviation) else dict(d)
        out.append([x["id"], x["kind"], x["what"], x["why"], x.get("control") or "–"])
    return out


__all__ = ["COLUMNS", "KINDS", "Deviation", "table_rows"]
