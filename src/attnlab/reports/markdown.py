"""report.md: the report in Markdown, figures referenced as figures/*.png."""

from __future__ import annotations

import json

from attnlab.checks import Tally
from attnlab.errata import COLUMNS as ERRATA_COLUMNS
from attnlab.errata import table_rows
from attnlab.deviations import COLUMNS as DEVIATION_COLUMNS
from attnlab.deviations import table_rows as deviation_rows
from attnlab.checks import Check
from attnlab.reports.format import (
    Outline,
    Row,
    claim_row,
    config_items,
    env_items,
    experiment_status,
    fmt_measured_cell,
    fmt_paper,
    fmt_value,
    row_counts,
    verdict_notes,
)
from attnlab.reports.stored_run import StoredExperiment
from attnlab.results import ExperimentResult

_MARK = {"reproduced": "✅ reproduced", "differs": "≠ differs", "inconclusive": "? inconclusive",
         "holds": "◆ holds", "refuted": "≠ refuted", "sanity": "◦ sanity", "fail": "❌ fail", "error": "❌ error",
         "info": "info"}


def _notes(check: Check) -> str:
    notes = verdict_notes(check)
    return f" ({'; '.join(notes)})" if notes else ""


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list]) -> list[str]:
    out = ["| " + " | ".join(_cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(_cell(c) for c in r) + " |" for r in rows]
    return out + [""]


def render_markdown(o: Outline, figures: dict[tuple[str, str], str]) -> str:
    """``figures`` maps (experiment id, spec file) to the PNG's path relative to the run dir."""
    lines = [f"# {o.title}", "", f"attnlab run `{o.run_name}` · {o.date}", ""]
    t = o.tally()
    if t.total - t.info:
        lines += [headline(t), ""]
        lines += _verdict_sections(o)
    else:
        lines += [f"**descriptive: {t.info} info rows, nothing judged**", ""]
    lines += ["## Run", ""] + _table(["setting", "value"], [[k, f"`{v}`" if k == "command" else v]
                                                           for k, v in config_items(o.config)])
    lines += ["## Environment", ""] + _table(["", ""], env_items(o.env))
    if o.experiments:
        lines += ["## Summary", ""]
        lines += _table(["experiment", "verdicts", "most serious", "seconds"],
                        [[e.id, row_counts(e), _MARK[experiment_status(e)], fmt_value(e.entry.seconds)]
                         for e in o.experiments])
    if o.claims:
        lines += ["## Claims", ""]
        rows = [(c, claim_row(c)) for c in o.claims]
        lines += _table(
            ["claim", "where", "statement", "paper", "measured", "required", "verdict"],
            [[c.id, c.where, c.statement, fmt_paper(c.paper_value),
              r.measured, r.criterion, _MARK.get(r.verdict, r.verdict) + (f" ({r.reason})" if r.reason else "")]
             for c, r in rows])
    if o.errata:
        lines += ["## Errors in the text", "",
                  "Whose error each is (the text, or the source it copies), the witness, and whether the "
                  "conclusion survives (`attnlab errata` lists them).", ""]
        lines += _table(list(ERRATA_COLUMNS), table_rows(o.errata))
    for e in o.experiments:
        lines += _experiment(e, figures)
    return "\n".join(lines).rstrip() + "\n"


def _experiment(e: StoredExperiment, figures: dict[tuple[str, str], str]) -> list[str]:
    x = e.entry
    lines = [f"## {x.id}", "", x.description, "",
             f"Most serious verdict: {_MARK[experiment_status(e)]} · {fmt_value(x.seconds)} s", ""]
    if e.result is None:
        return lines + ["```", (x.error or "").rstrip(), "```", ""]
    res: ExperimentResult = e.result
    if res.summary:
        lines += _table(["quantity", "the text", "measured", "required", "verdict", "where in the text", "detail"],
                        [[c.quantity, fmt_paper(c.paper_value), fmt_measured_cell(c), c.criterion,
                          _MARK.get(c.verdict, c.verdict) + _notes(c), c.where, c.detail] for c in res.summary])
    if res.deviations:
        lines += ["**Deviations from the text's protocol** (a row touched by one is decided only with a control "
                  "run without it)", ""] + _table(list(DEVIATION_COLUMNS), deviation_rows(res.deviations))
    elif res.summary and res.deviations is not None:
        lines += ["Deviations from the text's protocol: none.", ""]
    for t in res.tables:
        fmts = t.formats or [None] * len(t.columns)
        lines += [f"**{t.title}**", ""]
        lines += _table(list(t.columns), [[fmt_value(v, f) for v, f in zip(row, fmts)] for row in t.rows])
    for spec in res.figures:
        if (x.id, spec.file) in figures:
            lines += [f"![{spec.title or spec.file}]({figures[(x.id, spec.file)]})", "",
                      f"*Figure: {spec.caption}*", ""]
    for b in res.interactive:
        lines += [f"*Interactive view{': ' + b['title'] if b.get('title') else ''}: open report.html to pick a layer "
                  "and head and see the weights of every query token"
                  + (f", with the head's {len(b['scores'])} scores and ranks" if b.get("scores") else "")
                  + ".*", ""]
    for note in res.notes:
        lines += [f"> {note}", ""]
    if not (res.summary or res.tables or res.figures or res.interactive):
        lines += ["```json", json.dumps(x.results or {}, indent=2)[:4000], "```", ""]
    lines += ["<details><summary>config</summary>", "", "```json",
              json.dumps(x.config, indent=2), "```", "", "</details>", ""]
    return lines


def _rows(rows: list[Row], with_reason: bool = False) -> list[str]:
    return _table(["where measured", "quantity", "the text", "measured", "required", "where in the text",
                   "why" if with_reason else "detail"],
                  [[r.source, r.quantity, fmt_paper(r.paper_value), r.measured, r.criterion, r.where,
                    r.reason if with_reason else r.detail] for r in rows])


def headline(t: Tally) -> str:
    """The counts line: the text's rows (differs with their distinct findings), attnlab's own statements, the rest."""
    d = t.text["differs"]
    text = (f"**the text: {t.text['reproduced']} reproduced · {d} differs"
            + (f" ({t.findings} finding{'s' if t.findings != 1 else ''})" if d else "")
            + f" · {t.text['inconclusive']} inconclusive**")
    own = (f" · attnlab's own statements: {t.own['holds']} holds · {t.own['refuted']} refuted · "
           f"{t.own['inconclusive']} inconclusive" if sum(t.own.values()) else "")
    rest = f" · checks of attnlab: {t.sanity} sanity · {t.fail} fail" + (f" · {t.error} error" if t.error else "") + (
        f" · {t.info} info" if t.info else "")
    return text + own + rest


def _verdict_sections(o: Outline) -> list[str]:
    lines = ["## Where the measurements differ from the text", ""]
    findings = o.findings()
    if findings:
        rows = sum(len(f.rows) for f in findings)
        records = sum(f.record is not None for f in findings)
        lines += [f"{len(findings)} distinct finding(s), evidenced by {rows} row(s): {records} error(s) of the text "
                  f"(errata records) and {len(findings) - records} statement(s) that do not hold with no error in "
                  "the text.", ""]
        for f in findings:
            lines += [f"#### {_cell(f.title)}", ""] + _rows(list(f.rows))
    else:
        lines += ["None: every judged measurement agrees with the text, holds by construction, or cannot decide.", ""]
    if o.undecided():
        lines += ["### What the measurements cannot decide", ""] + _rows(o.undecided(), with_reason=True)
    if o.own():
        lines += ["### attnlab's own statements", "",
                  "Statements of attnlab beyond the text: they hold, are refuted or cannot be decided, and never "
                  "count as reproductions.", ""]
        lines += _table(["where measured", "statement", "measured", "required", "verdict", "detail"],
                        [[r.source, r.quantity, r.measured, r.criterion, _MARK.get(r.verdict, r.verdict)
                          + (f" ({r.reason})" if r.reason else ""), r.detail] for r in o.own()])
    if o.failures():
        lines += ["### Failures of attnlab's own checks", ""] + _rows(o.failures(), with_reason=True)
    return lines
