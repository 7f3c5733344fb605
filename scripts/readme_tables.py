"""The README's table of what reproduces, computed from the claims and the ledgers.

    python scripts/readme_tables.py            # print the table
    python scripts/readme_tables.py --write    # replace it in README.md, between its markers

One row per paper: the claims of ``attnlab verify PAPER`` (seed 0) counted where they belong
(the texts' rows: reproduced / differs, with their distinct findings / inconclusive; attnlab's
own statements: holds / refuted / inconclusive; sanity), and the paper's ledger (entries checked
by a row / entries / not executable). ``tests/test_readme.py`` recomputes it and fails when the
README says otherwise.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BEGIN = "<!-- claims-table: written by scripts/readme_tables.py -->"
END = "<!-- /claims-table -->"
HEADER = ["paper", "the texts: reproduced / differs (findings) / inconclusive",
          "attnlab's own: holds / refuted / inconclusive", "sanity", "ledger: checked / entries / not executable"]


def table(run: Callable | None = None) -> str:
    """The Markdown table; ``run(claim, seed)`` computes a claim (default ``claim.run``)."""
    from attnlab.checks import tally
    from attnlab.registry import all_claims, papers
    from attnlab.registry.coverage import paper_coverage

    rows = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    for name, p in sorted(papers().items()):
        if not p.package.startswith("attnlab.papers."):
            continue
        results = [run(c, 0) if run else c.run(0) for c in all_claims() if c.paper == name]
        t = tally(r.check for r in results)
        cov = paper_coverage(name)
        rows.append(f"| {name} | {t.text['reproduced']} / {t.text['differs']} ({t.findings}) / "
                    f"{t.text['inconclusive']} | {t.own['holds']} / {t.own['refuted']} / {t.own['inconclusive']} | "
                    f"{t.sanity} | {cov.checked} / {len(cov.entries)} / {cov.not_executable} |")
    return "\n".join(rows)


def readme_table(text: str) -> str:
    """The table as README.md holds it, between its markers."""
    if BEGIN not in text or END not in text:
        raise SystemExit(f"README.md lacks the markers {BEGIN} ... {END}")
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help="replace the table in README.md")
    args = ap.parse_args(argv)
    new = table()
    if not args.write:
        print(new)
        return 0
    text = README.read_text()
    old = readme_table(text)
    README.write_text(text.replace(old, new, 1))
    print("README.md: table " + ("unchanged" if old == new else "rewritten"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
