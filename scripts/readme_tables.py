"""The README's account of what reproduces, computed from the claims, the ledgers and the stored runs.

    python scripts/readme_tables.py            # print both parts
    python scripts/readme_tables.py --write    # replace them in README.md, between their markers

Two parts, each between its markers in README.md; ``tests/test_readme.py`` recomputes both and fails
when the README says otherwise:

- the claims table: one row per paper, the claims of ``attnlab verify PAPER`` (seed 0) counted where
  they belong (the texts' rows: reproduced / differs, with their distinct findings / inconclusive;
  attnlab's own statements: holds / refuted / inconclusive; sanity) and the paper's ledger (entries
  checked by a row / entries / not executable);
- the findings: per paper, from its stored quick reproduce (``tests/fixtures/reports/<paper>.json.gz``,
  claims and experiments) and its committed runs at the text's size (``results/paper-scale/``): what
  reproduces (by ledger entry), each distinct finding with the rows that evidence it, what cannot be
  decided and why, and attnlab's own statements.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAPER_SCALE = ROOT / "results" / "paper-scale"
TABLE = ("<!-- claims-table: written by scripts/readme_tables.py -->", "<!-- /claims-table -->")
FINDINGS = ("<!-- findings: written by scripts/readme_tables.py -->", "<!-- /findings -->")
HEADER = ["paper", "the texts: reproduced / differs (findings) / inconclusive",
          "attnlab's own: holds / refuted / inconclusive", "sanity", "ledger: checked / entries / not executable"]


def _fixtures():
    spec = importlib.util.spec_from_file_location("refresh_report_fixtures", ROOT / "scripts" /
                                                  "refresh_report_fixtures.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("refresh_report_fixtures", mod)
    spec.loader.exec_module(mod)
    return mod


def tree_papers() -> list[str]:
    from attnlab.registry import papers

    return sorted(n for n, p in papers().items() if p.package.startswith("attnlab.papers."))


# ---- the claims table ------------------------------------------------------------------------
def table(run: Callable | None = None) -> str:
    """The Markdown table; ``run(claim, seed)`` computes a claim (default ``claim.run``)."""
    from attnlab.checks import tally
    from attnlab.registry import all_claims
    from attnlab.registry.coverage import paper_coverage

    rows = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    for name in tree_papers():
        results = [run(c, 0) if run else c.run(0) for c in all_claims() if c.paper == name]
        t = tally(r.check for r in results)
        cov = paper_coverage(name)
        rows.append(f"| {name} | {t.text['reproduced']} / {t.text['differs']} ({t.findings}) / "
                    f"{t.text['inconclusive']} | {t.own['holds']} / {t.own['refuted']} / {t.own['inconclusive']} | "
                    f"{t.sanity} | {cov.checked} / {len(cov.entries)} / {cov.not_executable} |")
    return "\n".join(rows)


# ---- the findings ------------------------------------------------------------------------------
def _outline(results: dict, config: dict):
    from attnlab.reports.format import Outline
    from attnlab.reports.stored_run import StoredClaim, StoredExperiment
    from attnlab.runs.entry import entries

    return Outline(title="", run_name="", date="", config=config, env={},
                   experiments=[StoredExperiment.read(e) for e in entries(results).values()],
                   claims=[StoredClaim.from_dict(c) for c in results.get("claims") or []],
                   errata=list(results.get("errata") or []))


_ABBREVIATIONS = ("eq", "eqs", "Fig", "Figs", "e.g", "i.e", "App", "cf", "vs", "Prop", "Thm", "al")


def _short(text: str, limit: int = 180, stops: str = ":;") -> str:
    """The first clause of ``text``: up to its first ': ' or '; ' (``stops``) or end of sentence outside
    brackets (an abbreviation such as "eq." ends none), at most ``limit`` characters."""
    one, depth = " ".join(str(text).split()), 0
    for i, ch in enumerate(one):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if depth or i + 1 >= len(one) or one[i + 1] != " ":
            continue
        if ch in stops or (ch == "." and not one[:i].endswith(_ABBREVIATIONS) and one[i + 2:i + 3].isupper()):
            one = one[:i]
            break
    return one if len(one) <= limit else one[:limit].rsplit(" ", 1)[0] + " ..."


def _source(s: str) -> str:
    return s.split(".", 1)[1] if "." in s else s


def _counts(t) -> str:
    d = t.text["differs"]
    return (f"the text {t.text['reproduced']} reproduced · {d} differs"
            + (f" ({t.findings} finding{'s' if t.findings != 1 else ''})" if d else "")
            + f" · {t.text['inconclusive']} inconclusive; attnlab's own statements {t.own['holds']} hold · "
            f"{t.own['refuted']} refuted · {t.own['inconclusive']} inconclusive; {t.sanity} sanity, {t.fail} fail")


def paper_findings(paper: str, results: dict, config: dict) -> list[str]:
    """The README's lines for one paper, from a stored run's results.json (claims and experiments)."""
    from attnlab.registry import paper_ledger

    o = _outline(results, config)
    ledger = {s.id: s for s in paper_ledger(paper)}
    lines = [f"- **{paper}**: {_counts(o.tally())}."]
    reproduced = Counter(r.anchor for r in o.rows if r.verdict == "reproduced" and r.anchor)
    if reproduced:
        parts = [f"{ledger[a].where if a in ledger else a} (`{_source(a)}`" + (f", {n} rows)" if n > 1 else ")")
                 for a, n in reproduced.items()]
        lines.append("  - Reproduced: " + "; ".join(parts) + ".")
    for f in o.findings():
        rows = ", ".join(dict.fromkeys(_source(r.source) for r in f.rows))
        if f.record is not None:
            what = f"errata `{_source(f.record['id'])}` ({f.record['where']}): {_short(f.record['correct'])}"
        else:
            a = f.rows[0].anchor
            where = ledger[a].where if a in ledger else f.rows[0].where
            what = f"`{_source(a)}` ({where}): does not hold as measured, no error in the text: {f.rows[0].measured} " \
                   f"against {f.rows[0].criterion}"
        lines.append(f"  - Differs, {what} (rows: {rows}).")
    undecided = Counter(_short(r.reason, 140, stops=";") for r in o.undecided())
    if undecided:
        lines.append("  - Cannot be decided: " + "; ".join(f"{why} ({n} row{'s' if n > 1 else ''})"
                                                          for why, n in undecided.most_common()) + ".")
    refuted = [r for r in o.own() if r.verdict == "refuted"]
    if refuted:
        lines.append("  - attnlab's own statements refuted: " + "; ".join(_short(r.quantity, 160, stops=";") for r in refuted)
                     + ".")
    return lines


def paper_scale_lines() -> list[str]:
    """One line per committed run at a text's size: its folder and its counts."""
    lines = []
    for run in sorted(d for d in PAPER_SCALE.glob("*") if d.is_dir()):
        results = json.loads((run / "results.json").read_text())
        config = json.loads((run / "config.json").read_text())
        t = _outline(results, config).tally()
        stale = undeclared(results)
        lines.append(f"- `results/paper-scale/{run.name}/`: {_counts(t)}."
                     + (f" Stored before experiments declared their deviations ({', '.join(stale)}): a row such a "
                        "deviation touches keeps the verdict of the code that ran; re-run it for the current rules."
                        if stale else ""))
    return lines


def undeclared(results: dict) -> list[str]:
    """The experiments of a stored run that decide text rows but list no deviations (stored by code
    that did not declare them), by id."""
    from attnlab.runs.entry import entries

    return [name for name, e in entries(results).items()
            if any(r.get("role") == "text" for r in e.summary) and (e.results or {}).get("deviations") is None]


def findings() -> str:
    """The findings part of the README: every paper from its stored quick run, then the runs at the
    texts' sizes."""
    fx = _fixtures()
    out = ["At the quick scale (each paper's `attnlab reproduce PAPER`, claims included, as stored in "
           "`tests/fixtures/reports/`):", ""]
    for paper in tree_papers():
        stored = fx.read_fixture(fx.fixture_path(paper))
        out += paper_findings(paper, stored["results.json"], stored["config.json"])
    out += ["", "At the texts' sizes (`results/paper-scale/`, each run's claims included):", ""]
    out += paper_scale_lines()
    return "\n".join(out)


# ---- the README ----------------------------------------------------------------------------
def between(text: str, markers: tuple[str, str]) -> str:
    """The part of README.md between ``markers``."""
    begin, end = markers
    if begin not in text or end not in text:
        raise SystemExit(f"README.md lacks the markers {begin} ... {end}")
    return text.split(begin, 1)[1].split(end, 1)[0].strip()


def readme_table(text: str) -> str:
    return between(text, TABLE)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help="replace both parts in README.md")
    args = ap.parse_args(argv)
    parts = {TABLE: table(), FINDINGS: findings()}
    if not args.write:
        print("\n\n".join(parts.values()))
        return 0
    text = README.read_text()
    for (begin, end), new in parts.items():
        between(text, (begin, end))  # both markers are there
        head, rest = text.split(begin, 1)
        text = f"{head}{begin}\n{new}\n{end}{rest.split(end, 1)[1]}"
    README.write_text(text)
    print("README.md: written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
