"""Write the stored quick runs that the report layout test rebuilds its reports from.

    python scripts/refresh_report_fixtures.py [PAPER ...] [--from RUNS] [--rerun EXPERIMENT ...]

Each fixture, ``tests/fixtures/reports/<paper>.json.gz``, is one gzipped JSON object holding the
``config.json``, ``env.json`` and ``results.json`` of a quick-scale ``attnlab reproduce PAPER``
(everything :func:`attnlab.reports.build_report` reads). ``tests/reports/test_layout.py``
rebuilds each paper's report from it and checks in headless Chromium that no table or figure
overflows the page (``scripts/check_report_layout.py``), so CI checks the reports of all the
papers without running their quick reproduces.

Run it

* after adding, removing or renaming an experiment (the layout test that every registered
  experiment is in its paper's fixture fails until you do);
* after changing what an experiment stores for its report (tables, figures, notes, summary
  rows), so the test sees the report the new code writes;

then check the reports (``python scripts/check_report_layout.py``) and commit the fixtures.

Without options it runs the quick reproduce of every paper (all papers: about 15 minutes on two
cores). ``--from RUNS`` reads finished quick runs ``RUNS/<paper>/`` instead (for example those of
``attnlab reproduce PAPER --out RUNS/PAPER``; they are copied, never changed). ``--rerun`` reruns
only the named experiments on a copy of the stored run (``attnlab reproduce --resume`` on the copy
after their stored results were dropped; an experiment stored with an error is rerun too), which
is enough when only those experiments changed. Prints each fixture's path and compressed size.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "reports"
FILES = ("config.json", "env.json", "results.json")


def fixture_path(paper: str, directory: Path = FIXTURES) -> Path:
    return Path(directory) / f"{paper}.json.gz"


def write_fixture(run_dir: str | Path, path: str | Path) -> Path:
    """Store ``run_dir``'s three files in ``path`` (gzipped JSON, byte-identical for the same files)."""
    run_dir, path = Path(run_dir), Path(path)
    data = {name: json.loads((run_dir / name).read_text(encoding="utf-8")) for name in FILES}
    if data["config.json"].get("scale") != "quick":
        raise ValueError(f"{run_dir} is a {data['config.json'].get('scale')!r}-scale run; the fixtures hold quick runs")
    raw = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, compresslevel=9, mtime=0) as gz:
        gz.write(raw)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(buf.getvalue())
    return path


def read_fixture(path: str | Path) -> dict:
    """{file name: parsed JSON} for the three files of a fixture."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def unpack_fixture(path: str | Path, run_dir: str | Path) -> Path:
    """Write a fixture's three files into ``run_dir`` (created), ready for ``build_report``."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    for name, content in read_fixture(path).items():
        (run_dir / name).write_text(json.dumps(content, indent=2, ensure_ascii=False), encoding="utf-8")
    return run_dir


def _rerun(run_dir: Path, paper: str, experiments: list[str]) -> None:
    """Run ``experiments`` again in ``run_dir`` (a copy): drop their results, then resume."""
    from attnlab.commands.reproduce import reproduce

    results = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    for e in experiments:
        results["experiments"].pop(e, None)
    (run_dir / "results.json").write_text(json.dumps(results, indent=2), encoding="utf-8")
    config = json.loads((run_dir / "config.json").read_text(encoding="utf-8"))
    reproduce(paper, scale="quick", out=run_dir, seed=config["seed"], device=config["device"], resume=True,
              argv=["attnlab", "reproduce", paper, "--out", str(run_dir), "--resume"])


def refresh(paper: str, *, runs: Path | None = None, rerun: list[str] = (), out: Path = FIXTURES) -> Path:
    """Write ``paper``'s fixture from ``runs/<paper>`` or from a fresh quick reproduce."""
    from attnlab.commands.reproduce import reproduce

    with tempfile.TemporaryDirectory(prefix="attnlab-fixture-") as tmp:
        run_dir = Path(tmp) / paper
        if runs is None:
            reproduce(paper, scale="quick", out=run_dir, argv=["attnlab", "reproduce", paper])
        else:
            src = Path(runs) / paper
            if not (src / "results.json").is_file():
                raise FileNotFoundError(f"{src} holds no finished run (no results.json)")
            run_dir.mkdir()
            for name in FILES:
                shutil.copy2(src / name, run_dir / name)
        mine = [e for e in rerun if e.split(".", 1)[0] == paper]
        if mine:
            _rerun(run_dir, paper, mine)
        return write_fixture(run_dir, fixture_path(paper, out))


def reproduced_papers() -> list[str]:
    """Every paper of attnlab's tree that ``attnlab reproduce`` runs experiments of (papers
    registered from outside, through ATTNLAB_PLUGINS, have no fixture)."""
    from attnlab.registry import all_experiments, papers

    ours = {name for name, p in papers().items() if p.package.startswith("attnlab.papers.")}
    return sorted({e.paper for e in all_experiments() if e.in_reproduce and e.paper in ours})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("papers", nargs="*", help="papers (default: all)")
    ap.add_argument("--from", dest="runs", type=Path, help="read finished quick runs RUNS/<paper>/")
    ap.add_argument("--rerun", nargs="+", default=[], metavar="EXPERIMENT",
                    help="experiment ids to run again on a copy of the stored run")
    ap.add_argument("--out", type=Path, default=FIXTURES, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    papers = args.papers or reproduced_papers()
    for paper in papers:
        path = refresh(paper, runs=args.runs, rerun=args.rerun, out=args.out)
        print(f"{path} {path.stat().st_size / 1024:.0f} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
