"""Number formatting and the report outline shared by the HTML and Markdown reports."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

from attnlab.checks import JUDGED, NO_ERROR, Check, Tally, count_verdicts, finding, tally
from attnlab.reports.stored_run import StoredClaim, StoredExperiment
from attnlab.runs.entry import entries


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
    experiments: list[StoredExperiment] = field(default_factory=list)  # results.json entries, in run order
    claims: list[StoredClaim] = field(default_factory=list)
    errata: list[dict] = field(default_factory=list)       # TextError records of the run's papers

    @cached_property
    def rows(self) -> list[Row]:
        """Every claim and every summary line of every experiment, verdicts derived again (once)."""
        out = [claim_row(c) for c in self.claims]
        for e in self.experiments:
            out += [summary_row(e.id, c) for c in e.checks]
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


def claim_row(c: StoredClaim) -> Row:
    """A stored claim as a row (one that raised: verdict "error")."""
    if c.check is None:
        return Row(c.id, c.statement, c.paper_value, "–", "", "error", c.where, "the check raised", "")
    k = c.check
    return Row(c.id, c.statement, c.paper_value, k.measured_text, k.criterion, k.verdict, c.where, k.reason, c.detail,
               k)


def summary_row(source: str, c: Check) -> Row:
    """A summary check of experiment ``source`` as a row."""
    return Row(source, c.quantity, c.paper_value, c.measured_text, c.criterion, c.verdict, c.where, c.reason,
               c.detail, c)


def outline(run) -> Outline:
    """The report outline of a :class:`attnlab.runs.rundir.StoredRun`: its stored experiments and claims
    read back typed, once (:mod:`attnlab.reports.stored_run`)."""
    papers = run.config.get("papers") or run.results.get("papers") or []
    stored = run.config.get("titles") or {}
    titles = [stored.get(p, p) for p in papers]  # what the run stored: the report reads files only
    return Outline(
        title=run.config.get("title") or " · ".join(titles) or "attnlab run",
        run_name=run.path.resolve().name,
        date=run.env.get("date") or run.config.get("created") or "",
        config=run.config,
        env=run.env,
        experiments=[StoredExperiment.read(e) for e in entries(run.results).values()],
        claims=[StoredClaim.from_dict(c) for c in run.results.get("claims") or []],
        errata=list(run.results.get("errata") or []),
    )


def experiment_status(e: StoredExperiment) -> str:
    """One word for an experiment: "error" if it raised, else its most serious verdict
    (fail, differs, refuted, inconclusive, reproduced, holds, sanity, info, in that order)."""
    if not e.ok:
        return "error"
    verdicts = {c.verdict for c in e.checks}
    for v in ("fail", "differs", "refuted", "inconclusive", "reproduced", "holds", "sanity"):
        if v in verdicts:
            return v
    return "info"


def row_counts(e: StoredExperiment) -> str:
    """"3 reproduced · 1 differs" for an experiment's judged summary lines ("–" if none is judged)."""
    counts = count_verdicts(c.verdict for c in e.checks)
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


def verdict_notes(check: Check) -> list[str]:
    """What a check's verdict carries beside it, in order: its support over seeds ("in 4 of 5
    seeds"), why it is what it is, the deviations from the text's protocol that touch it, and the
    control run that clears them."""
    out = []
    if check.support and check.verdict in ("reproduced", "differs", "holds", "refuted"):
        out.append(f"in {check.support}")
    if check.reason:
        out.append(check.reason)
    if check.deviations and not check.reason.startswith("deviation"):
        out.append("deviation" + ("s" if len(check.deviations) > 1 else "") + ": " + ", ".join(check.deviations))
    if check.control:
        out.append(f"control: {check.control}")
    return out


def row_notes(r: Row) -> list[str]:
    """:func:`verdict_notes` of a row's check; of a claim or experiment that raised, its reason."""
    if r.check is not None:
        return verdict_notes(r.check)
    return [r.reason] if r.reason else []


def fmt_measured_cell(check: Check) -> str:
    """A check's measured value as a table cell: bounds as bounds, large counts as counts."""
    m = check.measured
    if isinstance(m, (int, float)) and not isinstance(m, bool) and math.isfinite(m):
        return fmt_auto(m)
    return check.measured_text or fmt_value(m)
