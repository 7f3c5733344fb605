"""report.md: the report in Markdown, figures referenced as figures/*.png."""

from __future__ import annotations

import json

from attnlab.reports.format import (
    Outline,
    config_items,
    env_items,
    experiment_status,
    fmt_auto,
    fmt_criterion,
    fmt_paper,
    fmt_value,
    row_counts,
)

_MARK = {"pass": "✅ pass", "FAIL": "❌ FAIL", "error": "❌ error", "info": "info", "n/a": "n/a"}


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list]) -> list[str]:
    out = ["| " + " | ".join(_cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(_cell(c) for c in r) + " |" for r in rows]
    return out + [""]


def render_markdown(o: Outline, figures: dict[tuple[str, str], str]) -> str:
    """``figures`` maps (experiment id, spec file) to the PNG's path relative to the run dir."""
    lines = [f"# {o.title}", "", f"attnlab run `{o.run_name}` · {o.date}", ""]
    counts = o.status_counts()
    lines += [f"**{counts['pass']} pass · {counts['FAIL']} fail · {counts['error']} error**", ""]
    lines += ["## Run", ""] + _table(["setting", "value"], [[k, f"`{v}`" if k == "command" else v]
                                                           for k, v in config_items(o.config)])
    lines += ["## Environment", ""] + _table(["", ""], env_items(o.env))
    if o.experiments:
        lines += ["## Summary", ""]
        lines += _table(["experiment", "checks passed", "status", "seconds"],
                        [[e["id"], row_counts(e), _MARK[experiment_status(e)], fmt_value(e.get("seconds"))]
                         for e in o.experiments])
    if o.claims:
        lines += ["## Claims", ""]
        lines += _table(
            ["claim", "where", "statement", "paper", "measured", "tolerance", "status"],
            [[c["id"], c.get("where", ""), c.get("statement", ""), fmt_paper(c.get("paper_value")),
              fmt_value(c.get("measured")), fmt_criterion(c),
              _MARK.get(c.get("status"), c.get("status"))] for c in o.claims])
    for e in o.experiments:
        lines += _experiment(e, figures)
    return "\n".join(lines).rstrip() + "\n"


def _experiment(e: dict, figures: dict[tuple[str, str], str]) -> list[str]:
    lines = [f"## {e['id']}", "", e.get("description", ""), "",
             f"Status: {_MARK[experiment_status(e)]} · {fmt_value(e.get('seconds'))} s", ""]
    if e.get("status") != "ok":
        return lines + ["```", (e.get("error") or "").rstrip(), "```", ""]
    res = e.get("results") or {}
    if res.get("summary"):
        lines += _table(["quantity", "paper", "measured", "expected", "status", "detail"],
                        [[r.get("quantity", ""), fmt_paper(r.get("paper_value")), fmt_auto(r.get("measured")),
                          fmt_value(r.get("expected")), _MARK.get(r.get("status"), r.get("status")),
                          r.get("detail", "")] for r in res["summary"]])
    for t in res.get("tables", []):
        fmts = t.get("formats") or [None] * len(t["columns"])
        lines += [f"**{t.get('title', '')}**", ""]
        lines += _table(t["columns"], [[fmt_value(v, f) for v, f in zip(row, fmts)] for row in t["rows"]])
    for spec in res.get("figures", []):
        if (e["id"], spec["file"]) in figures:
            lines += [f"![{spec.get('title') or spec['file']}]({figures[(e['id'], spec['file'])]})", "",
                      f"*Figure: {spec.get('caption', '')}*", ""]
    for note in res.get("notes", []):
        lines += [f"> {note}", ""]
    if not any(res.get(k) for k in ("summary", "tables", "figures")):
        lines += ["```json", json.dumps(res, indent=2)[:4000], "```", ""]
    lines += ["<details><summary>config</summary>", "", "```json",
              json.dumps(e.get("config", {}), indent=2), "```", "", "</details>", ""]
    return lines
