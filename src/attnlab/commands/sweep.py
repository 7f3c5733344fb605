"""`attnlab sweep`'s table: one row per run, with the columns whose values differ between runs."""

from __future__ import annotations

from rich.markup import escape

from attnlab.commands.console import say
from attnlab.terminal import Col, fmt, print_table


def print_sweep_table(console, result) -> None:
    """run_id, status, seed, then the columns whose values differ between runs, as many as fit."""
    rows = result.rows
    fixed = ("run_id", "status", "seed", "seconds")
    varying = [k for k in (rows[0] if rows else {})
               if k not in fixed and len({str(r.get(k)) for r in rows}) > 1]
    cell = {c: [fmt(r.get(c)) for r in rows] for c in ("seed", "seconds", *varying)}
    cell["run_id"] = [str(r["run_id"])[:8] for r in rows]
    cell["status"] = [r["status"] for r in rows]

    cols = ["run_id", "status", "seed", *varying, "seconds"]
    print_table(console, f"sweep results ({len(rows)} runs)",
                [Col(c, "key" if c == "run_id" else "number") for c in cols],
                [[("[green]ok[/]" if r["status"] == "ok" else "[red]failed[/]") if c == "status"
                  else escape(cell[c][i]) for c in cols] for i, r in enumerate(rows)])
    say(console, f"table: {result.table_path}")
    console.print(f"{result.n_ok} ok, {result.n_failed} failed, {result.n_skipped} skipped (finished before)",
                  highlight=False, soft_wrap=True)
