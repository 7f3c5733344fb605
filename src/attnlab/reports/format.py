"""Number formatting and the report outline shared by the HTML and Markdown reports."""

from __future__ import annotations

import math
from dataclasses import dataclass, field


STATUSES = ("pass", "FAIL", "error", "info", "n/a")


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


@dataclass
class Outline:
    """What every report says, in order; built from a stored run only."""

    title: str
    run_name: str
    date: str
    config: dict
    env: dict
    experiments: list[dict] = field(default_factory=list)  # results.json entries, in run order
    claims: list[dict] = field(default_factory=list)

    def status_counts(self) -> dict[str, int]:
        counts = dict.fromkeys(STATUSES, 0)
        for e in self.experiments:
            for row in (e.get("results") or {}).get("summary", []):
                counts[row.get("status", "info")] = counts.get(row.get("status", "info"), 0) + 1
            if e.get("status") == "error":
                counts["error"] += 1
        for c in self.claims:
            counts[c.get("status", "info")] = counts.get(c.get("status", "info"), 0) + 1
        return counts


def outline(run) -> Outline:
    """The report outline of a :class:`attnlab.runs.rundir.StoredRun`."""
    papers = run.config.get("papers") or run.results.get("papers") or []
    titles = [paper_title(p) for p in papers]
    return Outline(
        title=run.config.get("title") or " · ".join(titles) or "attnlab run",
        run_name=run.path.resolve().name,
        date=run.env.get("date") or run.config.get("created") or "",
        config=run.config,
        env=run.env,
        experiments=list((run.results.get("experiments") or {}).values()),
        claims=list(run.results.get("claims") or []),
    )


def paper_title(name: str) -> str:
    """The registered paper's title, or the name itself for a paper this install does not know."""
    from attnlab.registry import papers

    known = papers()
    return known[name].title if name in known else name


def experiment_status(entry: dict) -> str:
    """'error' if it raised, 'FAIL' if any summary row failed, else 'pass' (or 'info')."""
    if entry.get("status") != "ok":
        return "error"
    rows = (entry.get("results") or {}).get("summary", [])
    if any(r.get("status") == "FAIL" for r in rows):
        return "FAIL"
    return "pass" if any(r.get("status") == "pass" for r in rows) else "info"


def row_counts(entry: dict) -> str:
    rows = (entry.get("results") or {}).get("summary", [])
    judged = [r for r in rows if r.get("status") in ("pass", "FAIL")]
    return f"{sum(r['status'] == 'pass' for r in judged)}/{len(judged)}" if judged else "–"


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


def fmt_criterion(c: dict) -> str:
    """A stored claim's comparison: "<= 1e-12", or "-0.5 ± 0.1" for a "±" relation."""
    if c.get("relation") == "±" and c.get("target") is not None:
        return f"{fmt_value(c['target'])} ± {fmt_value(c.get('tolerance'))}"
    return f"{c.get('relation', '')} {fmt_value(c.get('tolerance'))}".strip()
