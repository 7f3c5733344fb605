"""Number formatting and the report outline shared by the HTML and Markdown reports."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

from attnlab.checks import JUDGED, NO_ERROR, Check, Tally, count_verdicts, finding, tally
from attnlab.results import check_from_dict
from attnlab.runs.entry import ExperimentEntry, entries


def fmt_count(x: float) -> str:
    """117000000 -> '117.0M', 1557611200 -> '1.558B': parameter-count style."""
    for unit, size in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= size:
            v = x / size
            return f"{v:.4g}{unit}" if v < 100 else f"{v:.1f}{unit}"
    return f"{x:g}"


def fmt_value(v, fmt: str | None = None) -> str:
    """A stored value as table text; ``fmt`` in {None, 'text', 'count', 'percent', 'float', 'int'}."""
    if v is None:
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, str):
        return v
    if isinstance(v, (list, tuple)):
        return ", ".join(fmt_value(x, fmt) for x in v)
    if isinstance(v, dict):
        return ", ".join(f"{k}={fmt_value(x)}" for k, x in v.items())
    x = float(v)
    if not math.isfinite(x):
        return str(x)
    if fmt == "percent":
        return f"{100 * x:.2f}%"
    if fmt == "count":
        return fmt_count(x)
    if isinstance(v, int) or fmt == "int":
        return f"{int(x):,}"
    if x == 0:
        return "0"
    if abs(x) >= 1e5 or abs(x) < 1e-3:
        return f"{x:.3e}"
    return f"{x:.4g}"


def fmt_auto(v) -> str:
    """Large integers read as counts (parameters), everything else as fmt_value."""
    if isinstance(v, (int, float)) and not isinstance(v, bool) and abs(v) >= 1e6:
        return f"{fmt_count(v)} ({v:,.0f})"
    return fmt_value(v)


def fmt_paper(v) -> str:
    """A paper's printed value: large numbers as counts ('117.0M'), the rest as fmt_value."""
    if isinstance(v, (int, float)) and not isinstance(v, bool) and abs(v) >= 1e6:
        return fmt_count(v)
    return fmt_value(v)


@dataclass(frozen=True)
class Row:
    """One judged line of a run, from a claim or an experiment's summary, ready to print."""

    source: str        # the claim id or the experiment id
    quantity: str
    paper_value: object
    measured: str      # as printed: a bound prints as ">= 750"
    criterion: str     # "<= 1e-12", "125 ± 0.5", "" for info
    verdict: str
    where: str
    reason: str
    detail: str
    check: Check | None = None  # None: the claim or experiment raised

    @property
    def group(self) -> str:
        """Where the row counts (:data:`attnlab.checks.GROUPS`); a raised check counts with the texts'."""
        return "text" if self.check is None else self.check.group

    @property
    def finding(self) -> str:
        """The finding a differs row evidences (:func:`attnlab.checks.finding`)."""
        return finding(self.check) if self.check is not None else ""

    @property
    def anchor(self) -> str:
        return self.check.anchor if self.check is not None else ""


@dataclass(frozen=True)
class Finding:
    """One distinct finding of a run: an errata record, or a statement that does not hold with no
    error in the text, and the differs rows that evidence it."""

    key: str
    record: dict | None  # the errata record (stored TextError) where the finding is one
    rows: tuple[Row, ...]

    @property
    def title(self) -> str:
        if self.record is not None:
            return f"errata {self.record['id']} ({self.record['where']}): {self.record['says']}"
        r = self.rows[0]
        if r.check is not None and r.check.erratum in ("", NO_ERROR) and r.anchor:
            return f"{r.anchor} ({r.where}): the statement does not hold (no error in the text)"
        return self.key


@dataclass
class Outline:
    """What every report says, in order; built from a stored run only."""

    title: str
    run_name: str
    date: str
    config: dict
    env: dict
    experiments: list[ExperimentEntry] = field(default_factory=list)  # results.json entries, in run order
    claims: list[dict] = field(default_factory=list)
    errata: list[dict] = field(default_factory=list)       # TextError records of the run's papers

    @cached_property
    def rows(self) -> list[Row]:
        """Every claim and every summary line of every experiment, verdicts derived again (once)."""
        out = [claim_row(c) for c in self.claims]
        for e in self.experiments:
            out += [summary_row(e.id, r) for r in summary_checks(e)]
        return out

    def verdict_counts(self) -> dict[str, int]:
        """{verdict: count} over claims and experiment summaries; "error" counts what raised."""
        counts = count_verdicts(r.verdict for r in self.rows)
        counts["error"] += sum(not e.ok for e in self.experiments)
        return counts

    def tally(self) -> Tally:
        """The rows counted by group (the texts' rows, attnlab's own statements, the rest) with the
        differs rows as distinct findings; experiments that raised count as errors."""
        raised = sum(not e.ok for e in self.experiments)
        return tally([r.check for r in self.rows] + [None] * raised)

    def differs(self) -> list[Row]:
        """The rows where the measurement and the text disagree."""
        return [r for r in self.rows if r.verdict == "differs"]

    def findings(self) -> list[Finding]:
        """The differs rows grouped by what they evidence, one :class:`Finding` per errata record or
        statement, in the order the rows come."""
        records = {e.get("id"): e for e in self.errata}
        keys: dict[str, list[Row]] = {}
        for r in self.differs():
            keys.setdefault(r.finding, []).append(r)
        return [Finding(k, records.get(k), tuple(rs)) for k, rs in keys.items()]

    def undecided(self) -> list[Row]:
        """The texts' rows the measurement cannot decide."""
        return [r for r in self.rows if r.verdict == "inconclusive" and r.group != "own"]

    def own(self) -> list[Row]:
        """attnlab's own statements (holds, refuted, inconclusive)."""
        return [r for r in self.rows if r.group == "own" and r.verdict in ("holds", "refuted", "inconclusive")]

    def failures(self) -> list[Row]:
        return [r for r in self.rows if r.verdict in ("fail", "error")]


def summary_checks(entry: ExperimentEntry) -> list[dict]:
    """An experiment's stored summary rows, each with its verdict derived from its numbers."""
    return [check_from_dict(r).to_dict() | {"values": {}} for r in entry.summary]


def claim_row(c: dict) -> Row:
    if c.get("error") is not None or c.get("verdict") == "error" or c.get("status") == "error":
        return Row(c["id"], c.get("statement", ""), c.get("paper_value"), "–", "", "error", c.get("where", ""),
                   "the check raised", "")
    check = check_from_dict({**c, "quantity": c.get("statement", "")})
    d = check.to_dict()
    return Row(c["id"], c.get("statement", ""), c.get("paper_value"), d["measured_text"], d["criterion"], d["verdict"],
               c.get("where", ""), d["reason"], c.get("detail", ""), check)


def summary_row(source: str, d: dict) -> Row:
    return Row(source, d.get("quantity", ""), d.get("paper_value"), d.get("measured_text", fmt_value(d.get("measured"))),
               d.get("criterion", ""), d["verdict"], d.get("where", ""), d.get("reason", ""), d.get("detail", ""),
               check_from_dict(d))


def outline(run) -> Outline:
    """The report outline of a :class:`attnlab.runs.rundir.StoredRun`."""
    papers = run.config.get("papers") or run.results.get("papers") or []
    stored = run.config.get("titles") or {}
    titles = [stored.get(p, p) for p in papers]  # what the run stored: the report reads files only
    return Outline(
        title=run.config.get("title") or " · ".join(titles) or "attnlab run",
        run_name=run.path.resolve().name,
        date=run.env.get("date") or run.config.get("created") or "",
        config=run.config,
        env=run.env,
        experiments=list(entries(run.results).values()),
        claims=list(run.results.get("claims") or []),
        errata=list(run.results.get("errata") or []),
    )


def experiment_status(entry: ExperimentEntry) -> str:
    """One word for an experiment: "error" if it raised, else its most serious verdict
    (fail, differs, refuted, inconclusive, reproduced, holds, sanity, info, in that order)."""
    if not entry.ok:
        return "error"
    verdicts = {r["verdict"] for r in summary_checks(entry)}
    for v in ("fail", "differs", "refuted", "inconclusive", "reproduced", "holds", "sanity"):
        if v in verdicts:
            return v
    return "info"


def row_counts(entry: ExperimentEntry) -> str:
    """"3 reproduced · 1 differs" for an experiment's judged summary lines ("–" if none is judged)."""
    counts = count_verdicts(r["verdict"] for r in summary_checks(entry))
    parts = [f"{counts[v]} {v}" for v in JUDGED if counts[v]]
    return " · ".join(parts) if parts else "–"


def config_items(config: dict) -> list[tuple[str, str]]:
    """The run-level config as (key, text) pairs (per-experiment configs are shown per section)."""
    keys = ("papers", "scale", "seed", "model", "model_type", "text", "max_tokens", "segments", "dtype", "device",
            "created")
    items = [(k, fmt_value(config[k])) for k in keys if k in config]
    if config.get("argv"):
        items.append(("command", " ".join(config["argv"])))
    if config.get("resumed"):
        items.append(("resumed", f"{len(config['resumed'])} time(s)"))
    return items


def env_items(env: dict) -> list[tuple[str, str]]:
    keys = ("python", "torch", "numpy", "platform", "device", "cuda_device", "torch_threads",
            "cpu_count", "seed", "git_commit")
    return [(k, fmt_value(env[k]) if k != "git_commit" else str(env[k])[:12]) for k in keys
            if env.get(k) is not None]


def verdict_notes(d: dict) -> list[str]:
    """What a stored check's verdict carries beside it, in order: its support over seeds ("in 4 of 5
    seeds"), why it is what it is, the deviations from the text's protocol that touch it, and the
    control run that clears them."""
    out = []
    if d.get("support") and d.get("verdict") in ("reproduced", "differs", "holds", "refuted"):
        out.append(f"in {d['support']}")
    if d.get("reason"):
        out.append(d["reason"])
    if d.get("deviations") and not d.get("reason", "").startswith("deviation"):
        out.append("deviation" + ("s" if len(d["deviations"]) > 1 else "") + ": " + ", ".join(d["deviations"]))
    if d.get("control"):
        out.append(f"control: {d['control']}")
    return out


def fmt_criterion(c: dict) -> str:
    """A stored check's comparison as text ("<= 1e-12", "-0.5 ± 0.1"), derived from its numbers."""
    return check_from_dict(c).criterion


def fmt_measured_cell(r: dict) -> str:
    """A stored check's measured value as a table cell: bounds as bounds, large counts as counts."""
    m = r.get("measured")
    if isinstance(m, (int, float)) and not isinstance(m, bool):
        return fmt_auto(m)
    return r.get("measured_text") or fmt_value(m)
