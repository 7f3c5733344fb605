"""Errors in the texts, as sourced records.

Every place where a text is wrong or loose, and what is mathematically right instead, is
one :class:`TextError`. A paper package lists its records and registers them
(:func:`attnlab.registry.register_errata`); ``attnlab errata [PAPER] [--json]`` prints
them and every report of a paper shows them as one table.

A record says *whose* error it is: the text itself, or the source it copies (a derivation
taken from a cited paper carries that paper's error; the text may even flag it). It says
what kind of error, gives the witness (the smallest counterexample, or the measured
numbers and the claim that measures them), and whether the text's conclusion survives.
"""

from __future__ import annotations

from dataclasses import dataclass

from attnlab.errors import ConfigError
from attnlab.stored import Stored

KINDS = ("typo", "wrong statement", "missing hypothesis", "omission", "overstatement", "notation")
"""typo: a slip whose intent is clear; wrong statement: false as written and as meant;
missing hypothesis: true only under a condition the text does not state; omission: a part
the argument needs is absent; overstatement: the text claims more than holds (or than it
shows); notation: symbols that do not conform (shapes, indices) though the intent is clear."""

SURVIVES = ("yes", "partly", "no", "open")
"""Whether the text's conclusion survives the error: yes, partly (say which part in
``conclusion``), no, or open (neither shown nor refuted)."""


@dataclass(frozen=True)
class TextError(Stored):
    """One error of a text.

    id:         "<paper>.<slug>", unique
    where:      where the text says it (section, equation, figure)
    says:       what the text says (quoted or paraphrased)
    correct:    what is right instead (what attnlab implements)
    whose:      "the text", or the source it copies ("Dong et al. (2021), App. A.1, copied by the notes")
    kind:       one of :data:`KINDS`
    witness:    the smallest counterexample, or the measured numbers
    survives:   one of :data:`SURVIVES`
    conclusion: what of the text's conclusion survives, in one sentence
    check:      the claim or experiment id that measures the witness, several separated by ", "
                ("" if the witness is on paper)
    """

    id: str
    where: str
    says: str
    correct: str
    whose: str
    kind: str
    witness: str
    survives: str
    conclusion: str = ""
    check: str = ""

    def __post_init__(self) -> None:
        if "." not in self.id:
            raise ConfigError(f"text error id {self.id!r} must be '<paper>.<slug>'")
        if self.kind not in KINDS:
            raise ConfigError(f"text error {self.id!r}: kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if self.survives not in SURVIVES:
            raise ConfigError(f"text error {self.id!r}: survives must be one of {', '.join(SURVIVES)}")
        for name in ("where", "says", "correct", "whose", "witness"):
            if not str(getattr(self, name)).strip():
                raise ConfigError(f"text error {self.id!r}: {name} must not be empty")

    @property
    def paper(self) -> str:
        return self.id.split(".", 1)[0]


COLUMNS = ("where", "the text says", "what is right", "whose", "kind", "witness", "conclusion survives",
           "measured by")


def table_rows(errors: list[TextError] | list[dict]) -> list[list[str]]:
    """The rows of the errata table every report shows (one per record, :data:`COLUMNS`)."""
    rows = []
    for e in errors:
        d = e.to_dict() if isinstance(e, TextError) else dict(e)
        survives = d["survives"] + (f": {d['conclusion']}" if d.get("conclusion") else "")
        rows.append([d["where"], d["says"], d["correct"], d["whose"], d["kind"], d["witness"], survives,
                     d.get("check") or "–"])
    return rows


__all__ = ["COLUMNS", "KINDS", "SURVIVES", "TextError", "table_rows"]
