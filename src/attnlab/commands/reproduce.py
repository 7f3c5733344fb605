"""``attnlab reproduce``: run a paper's experiments into a run directory, then report.

Order of work, chosen so that an interrupted run keeps what it finished:

1. resolve the papers, their experiments and every config (bad input fails here,
   before anything is written);
2. create the run directory, write config.json (configs + argv) and env.json;
3. for each experiment: seed (random, numpy, torch) with the run's seed, run it,
   and rewrite results.json atomically; with ``resume`` an experiment whose
   results are already stored (status "ok") is skipped. An experiment with a
   ``reproduce_sweep`` runs as a sweep (:mod:`attnlab.sweeps`) into
   ``<run>/sweeps/<experiment id>/``, always resumable (so ``--resume`` keeps
   its finished runs), and ``aggregate(rows)`` of the sweep's table becomes its
   results; a sweep with failed runs is recorded as an error (``--resume``
   reruns only those);
4. run the papers' claims (fast checks) and store them beside the experiments, with the
   papers' text errors (:mod:`attnlab.errata`);
5. build report.html and report.md from the stored results.

Ctrl-C once the run directory exists raises :class:`RunInterrupted` (a KeyboardInterrupt): it
names the directory, the experiments it keeps finished, what was running, and the exact
``attnlab reproduce ... --resume`` command that continues the run.
"""

from __future__ import annotations

from attnlab.config import Config
from attnlab.sweeps.spec import SweepSpec

import dataclasses
import shlex
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from attnlab.config import SCALES, build_config, check_choice, check_device, check_seed, coerce_field, field_types
from attnlab.errors import ConfigError
from attnlab.registry import Experiment, all_experiments, get_paper
from attnlab.results import ExperimentResult
from attnlab.runs.entry import TRACEBACK_LIMIT, ExperimentEntry, SweepCounts, entries
from attnlab.runs.jsonable import to_jsonable
from attnlab.runs.progress import progress_sink
from attnlab.runs.rundir import REPORT_HTML, RunDir, default_run_dir, load_run, utc_now
from attnlab.runs.seeds import seed_everything


Progress = Callable[[str, int, int], None]  # (what is running, done, total)
SWEEPS_DIR = "sweeps"
RESERVED = {"seed": "--seed", "device": "--device"}  # fields that their own options set


def experiments_for(papers: Sequence[str], only: Sequence[str] | None = None) -> list[Experiment]:
    """The experiments of ``papers`` that reproduce runs; a paper without any is a ConfigError.

    only: a subset to run, each named by its id ("memorization.construction") or by the part after the
    paper ("construction"); a name that matches none of the papers' experiments is a ConfigError that
    lists them."""
    for p in papers:
        get_paper(p)  # UnknownNameError naming the papers
    exps = [e for e in all_experiments() if e.in_reproduce]
    with_exps = sorted({e.paper for e in exps})
    for p in papers:
        if p not in with_exps:
            raise ConfigError(
                f"paper {p!r} has no experiments yet; papers with experiments: {', '.join(with_exps) or 'none'}"
            )
    exps = [e for e in exps if e.paper in papers]
    if not only:
        return exps
    chosen = set()
    for name in only:
        hit = [e.id for e in exps if name in (e.id, e.id.split(".", 1)[1])]
        if not hit:
            raise ConfigError(f"--only {name}: not an experiment of {', '.join(papers)}; choose from "
                              + ", ".join(e.id.split(".", 1)[1] for e in exps))
        chosen.update(hit)
    return [e for e in exps if e.id in chosen]


def make_config(exp: Experiment, *, scale: str, seed: int, device: str, settings: Mapping[str, Any] | None = None):
    """The experiment's config at ``scale`` with the run's seed, on the run's device (the CPU
    for an experiment that is better there, :meth:`Experiment.run_device`); ``settings``: field
    values (text as on the command line, e.g. {"smollm2": "true"}) that replace the preset's."""
    settings = dict(settings or {})
    values = {k: coerce_field(exp.id, exp.config_cls, k, v, "--set", {"scale": "--scale", **RESERVED})
              for k, v in settings.items()}
    what = f"{exp.id} with --set " + " ".join(f"{k}={v}" for k, v in settings.items()) if settings else exp.id
    return build_config(exp.config_cls, {"scale": scale, "seed": seed, "device": exp.run_device(device)[0],
                                         **values}, what=what)


def settings_by_experiment(exps: Sequence[Experiment], settings: Mapping[str, Any] | None) -> dict[str, dict]:
    """{experiment id: the ``settings`` its config has a field for}; each key must name a field of at
    least one of ``exps`` (a ConfigError lists the experiments otherwise)."""
    out: dict[str, dict] = {e.id: {} for e in exps}
    for key, value in (settings or {}).items():
        hit = [e for e in exps if key in field_types(e.config_cls)]
        if not hit:
            raise ConfigError(f"--set {key}: no experiment of this run has a config field {key!r} "
                              f"(experiments: {', '.join(e.id for e in exps)}; `attnlab list` shows their fields)")
        for e in hit:
            out[e.id][key] = value
    return out


def sweep_spec(exp: Experiment, *, scale: str, seed: int):
    """The SweepSpec ``reproduce`` runs for ``exp`` at ``scale``: its plan, seeds from ``seed``."""
    from attnlab.sweeps.spec import SweepSpec

    plan = exp.reproduce_sweep(scale)
    base = {"scale": scale, **plan.base}
    return SweepSpec(exp.id, base=base, grid={k: list(v) for k, v in plan.grid.items()},
                     seeds=plan.seeds, seed0=seed)


class RunPath(type(Path())):
    """A run directory's path: a :class:`pathlib.Path` in every respect (what :func:`reproduce`
    returns) that in Jupyter shows the run's report.html (:mod:`attnlab.reports.notebook`); a path
    without a report.html shows as a plain path."""

    def _repr_html_(self) -> str | None:
        if not (self / REPORT_HTML).is_file():
            return None
        from attnlab.reports.notebook import report_frame

        return report_frame(self / REPORT_HTML)


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C during :func:`reproduce` once its run directory exists.

    path: the run directory; finished: the experiments stored there as finished (status "ok");
    experiments: every experiment of the run, in order; running: what was running when it stopped
    (an experiment id, "claims" or "report"); resume: the command that continues the run."""

    def __init__(self, path: Path, finished: list[str], experiments: list[str], running: str, resume: str):
        super().__init__(f"reproduce stopped during {running}; resume with: {resume}")
        self.path, self.finished, self.experiments = Path(path), finished, experiments
        self.running, self.resume = running, resume

    def lines(self) -> list[str]:
        """What the command line prints: that the run stopped, what is kept, how to resume."""
        k, n = len(self.finished), len(self.experiments)
        left = [i for i in self.experiments if i not in self.finished]
        kept = f"{self.path}, with {k} of {n} experiment{'s' if n != 1 else ''} finished"
        kept += f" ({', '.join(self.finished)})" if self.finished else ""
        if self.running in self.experiments and (self.path / SWEEPS_DIR / self.running).is_dir():
            kept += f" and the finished runs of {self.running}'s sweep ({SWEEPS_DIR}/{self.running}/)"
        again = ", ".join(left + ["the claims", "the report"] if self.running != "report" else ["the report"])
        return [f"attnlab: reproduce stopped (Ctrl-C) during {self.running}",
                f"kept: {kept}; resuming runs {again}",
                f"resume: {self.resume}"]


def resume_command(papers: Sequence[str], path: Path, *, scale: str, seed: int, device: str,
                   settings: Mapping[str, Any] | None, only: Sequence[str] | None) -> str:
    """The ``attnlab reproduce`` command that continues the run in ``path`` with the options it was started
    with (a resumed run must match them), quoted for a POSIX shell."""
    argv = ["attnlab", "reproduce", *papers, "--out", str(path), "--resume"]
    if scale != "quick":
        argv += ["--scale", scale]
    if seed != 0:
        argv += ["--seed", str(seed)]
    if device != "cpu":
        argv += ["--device", device]
    for key, value in (settings or {}).items():
        argv += ["--set", f"{key}={value}"]
    for name in only or ():
        argv += ["--only", name]
    return " ".join(shlex.quote(a) for a in argv)


def default_out(papers: Sequence[str]) -> Path:
    return default_run_dir(*papers)


def resolve(paper: str | Sequence[str], *, scale: str, seed: int, device: str,
            settings: Mapping[str, Any] | None = None,
            only: Sequence[str] | None = None) -> tuple[list[str], list[Experiment], dict, dict]:
    """(papers, their experiments, {id: config}, {id: SweepSpec of a swept experiment}): step 1 of
    the module docstring, where every bad input fails before anything is written."""
    papers = [paper] if isinstance(paper, str) else list(dict.fromkeys(paper))
    if not papers:
        raise ConfigError("name at least one paper, e.g. `attnlab reproduce transformer-math`")
    check_choice("--scale", scale, SCALES)
    check_seed(seed, "--seed")
    device = check_device(device, "--device")
    exps = experiments_for(papers, only)
    given = settings_by_experiment(exps, settings)
    configs = {e.id: make_config(e, scale=scale, seed=seed, device=device, settings=given[e.id]) for e in exps}
    specs = {e.id: sweep_spec(e, scale=scale, seed=seed) for e in exps if e.reproduce_sweep}
    specs = {i: dataclasses.replace(sp, base={**sp.base, **given[i]}) for i, sp in specs.items()}
    return papers, exps, configs, specs


def reproduce(
    paper: str | Sequence[str],
    *,
    scale: str = "quick",
    out: str | Path | None = None,
    seed: int = 0,
    device: str = "cpu",
    argv: Sequence[str] | None = None,
    resume: bool = False,
    progress: Progress | None = None,
    sweep_executor: str = "process",
    sweep_workers: int | None = None,
    settings: Mapping[str, Any] | None = None,
    only: Sequence[str] | None = None,
) -> Path:
    """Run the experiments (and claims) of ``paper`` into a run directory; return its path (a
    :class:`RunPath`: in Jupyter it shows the report).

    ``settings``: config values ({field: value}, ``--set``) for every experiment whose config has
    that field, replacing the scale's preset (e.g. {"smollm2": "true"}). ``only``: run these
    experiments of the papers and no others (``--only``, :func:`experiments_for`); the claims run as always.

    ``sweep_executor`` / ``sweep_workers`` say where the runs of sweep experiments
    execute (:func:`attnlab.sweeps.run_sweep`; None workers = one per core).
    """
    papers, exps, configs, specs = resolve(paper, scale=scale, seed=seed, device=device, settings=settings,
                                           only=only)
    config = {
        "papers": papers, "titles": {p: get_paper(p).title for p in papers},
        "scale": scale, "seed": seed, "device": device,
        "experiments": {i: dataclasses.asdict(c) for i, c in configs.items()},
        "sweeps": {i: sp.to_json() for i, sp in specs.items()},
    }
    rd = RunDir.create(out if out is not None else default_out(papers), resume=resume)
    stored = _prepare(rd, config, list(argv or []), resume)
    rd.write_env(seed=seed, device=device)
    run = _Run(rd, stored, entries(stored), seed, resume, _Ticker(progress, len(exps) + 1))
    try:
        for i, e in enumerate(exps):
            run.experiment(e, i, configs[e.id], specs.get(e.id),
                           {"executor": sweep_executor, "workers": sweep_workers, "device": device})
        run.claims_and_report(papers, len(exps))
    except KeyboardInterrupt:
        finished = [i for i, entry in run.entries.items() if entry.ok]
        raise RunInterrupted(rd.path, finished, [e.id for e in exps], run.ticker.running, resume_command(
            papers, rd.path, scale=scale, seed=seed, device=device, settings=settings, only=only)) from None
    return RunPath(rd.path)


@dataclass
class _Ticker:
    """What the run is doing (``running``: what a Ctrl-C stops, an experiment's id, "claims" or "report")
    and the progress callback told of each step, ``progress(what, done, total)``."""

    progress: Progress | None
    total: int
    running: str = "claims"

    def __call__(self, what: str, done: int) -> None:
        if self.progress:
            self.progress(what, done, self.total)


@dataclass
class _Run:
    """Steps 3 to 5 of the module docstring on one run directory: the stored results.json (``stored``)
    with its experiments' entries, rewritten after each experiment."""

    rd: RunDir
    stored: dict
    entries: dict[str, ExperimentEntry]
    seed: int
    resume: bool
    ticker: _Ticker

    def experiment(self, e: Experiment, i: int, cfg: Config, spec: SweepSpec | None, sweep: dict) -> None:
        """Run the ``i``-th experiment (as a sweep when it has a ``spec``) unless a resumed run holds it
        finished; store its entry."""
        self.ticker.running = e.id
        self.ticker(e.id, i)
        done = self.entries.get(e.id)
        if self.resume and done is not None and done.ok:
            return
        if spec is not None:
            def on_sweep(finished: int, n: int) -> None:
                self.ticker(f"{e.id} ({finished}/{n} runs)", i)

            self.entries[e.id] = _run_sweep(e, spec, self.rd, self.seed, {**sweep, "progress": on_sweep})
        else:
            def on_step(text: str) -> None:
                self.ticker(f"{e.id}: {text}", i)

            with progress_sink(on_step if self.ticker.progress else None):
                self.entries[e.id] = _run_one(e, cfg, self.rd, self.seed)
        self.write()

    def claims_and_report(self, papers: list[str], n_experiments: int) -> None:
        """The papers' claims (kept from a resumed run that has them) and text errors, then the reports."""
        self.ticker.running = "claims"
        self.ticker("claims", n_experiments)
        if not (self.resume and self.stored.get("claims")):
            self.stored["claims"] = _run_claims(papers, self.seed)
        self.stored["errata"] = _errata(papers)
        self.write()
        self.ticker.running = "report"
        self.ticker("report", self.ticker.total)
        from attnlab.reports import build_report

        build_report(self.rd.path)

    def write(self) -> None:
        """Rewrite results.json (atomically) with every entry."""
        self.stored["experiments"] = {i: entry.to_dict() for i, entry in self.entries.items()}
        self.rd.write_results(self.stored)


def _prepare(rd: RunDir, config: dict, argv: list[str], resume: bool) -> dict:
    """Write config.json (or check it on resume) and return the stored results."""
    if resume and (rd.path / "config.json").exists():
        stored = load_run(rd.path)
        for key in ("papers", "scale", "seed", "device", "experiments"):
            if stored.config.get(key) != to_jsonable(config[key]):  # tuples are stored as lists
                raise ConfigError(
                    f"{rd.path} was run with a different {key} ({stored.config.get(key)!r}); "
                    "resume with the options it was started with, or choose another --out"
                )
        resumes = stored.config.get("resumed", []) + [{"argv": argv, "at": utc_now()}]
        rd.write_config({**stored.config, "resumed": resumes}, stored.config.get("argv"))
        results = stored.results or {}
    else:
        rd.write_config({**config, "created": utc_now()}, argv)
        results = {}
    results.setdefault("papers", config["papers"])
    results.setdefault("experiments", {})
    return results


def _started(e: Experiment, rd: RunDir, seed: int, config: dict, sweep_dir: str | None = None) -> ExperimentEntry:
    """The entry of ``e`` as it starts, logged to metrics.jsonl."""
    entry = ExperimentEntry(e.id, e.description, config, paper=e.paper, seed=seed, sweep_dir=sweep_dir,
                            started=utc_now())
    rd.append_metric({"event": "start", "experiment": e.id, **({"sweep": sweep_dir} if sweep_dir else {}),
                      "at": entry.started})
    return entry


def _run_one(e: Experiment, cfg: Config, rd: RunDir, seed: int) -> ExperimentEntry:
    """Seed every generator, run ``e`` at ``cfg`` and return its entry (status "error" if it raised)."""
    seed_everything(seed)
    entry = _started(e, rd, seed, dataclasses.asdict(cfg))
    start = time.perf_counter()
    try:
        entry = entry.succeeded(start, stored_result(e, e.run(cfg, rd), device_note(e, rd)))
    except Exception:  # recorded and reported; --resume runs it again
        entry = entry.failed(start, traceback.format_exc(limit=TRACEBACK_LIMIT))
    return _logged(entry, rd)


def _logged(entry: ExperimentEntry, rd: RunDir) -> ExperimentEntry:
    """``entry``, its finish logged to metrics.jsonl."""
    rd.append_metric({"event": "finish", "experiment": entry.id, "status": entry.status, "seconds": entry.seconds})
    return entry


def _run_sweep(e: Experiment, spec: SweepSpec, rd: RunDir, seed: int, options: dict) -> ExperimentEntry:
    """Run (or resume) ``spec`` into <run>/sweeps/<id>/ and store ``e.aggregate(rows)``."""
    from attnlab.sweeps.engine import run_sweep

    rel = f"{SWEEPS_DIR}/{e.id}"
    entry = _started(e, rd, seed, spec.to_json(), sweep_dir=rel)
    start = time.perf_counter()
    try:
        result = run_sweep(spec, rd.path / rel, resume=True, argv=[], **options)
        entry = dataclasses.replace(entry, sweep=SweepCounts(f"{rel}/{result.table_path.name}", result.n_ok,
                                                             result.n_failed, result.n_skipped))
        if result.n_failed:
            raise RuntimeError(f"{result.n_failed} of {len(result.rows)} sweep runs failed; their logs are in "
                               f"{rel}/runs/<run_id>/log.txt; `attnlab reproduce --resume` reruns them")
        entry = entry.succeeded(start, stored_result(e, e.aggregate(result.rows), device_note(e, rd)))
    # Recorded and reported; --resume runs it again. Ctrl-C (SweepInterrupted) is not an
    # Exception: it stops reproduce and keeps the finished runs.
    except Exception:
        entry = entry.failed(start, traceback.format_exc(limit=TRACEBACK_LIMIT))
    return _logged(entry, rd)


def stored_result(e: Experiment, result: ExperimentResult, note: str | None = None) -> dict:
    """What results.json stores of an experiment's result (``note`` first among its notes);
    TypeError if it is not typed."""
    if not isinstance(result, ExperimentResult):
        raise TypeError(f"{e.id} returned {type(result).__name__}; an experiment returns "
                        "attnlab.results.ExperimentResult")
    if note:
        result.notes.insert(0, note)
    return result.to_dict()


def device_note(e: Experiment, rd: RunDir) -> str | None:
    """The note of an experiment run on the CPU inside a run on another device."""
    return e.run_device(rd.read_json("config.json", {}).get("device", "cpu"))[1]


def _errata(papers: Sequence[str]) -> list[dict]:
    """The text errors of ``papers`` (:mod:`attnlab.errata`), stored so that a report reads files only."""
    from attnlab.registry import all_errata

    return [e.to_dict() for e in all_errata(list(papers))]


def _run_claims(papers: Sequence[str], seed: int) -> list[dict]:
    from attnlab.registry import all_claims

    return [c.run(seed).to_dict() for c in all_claims() if c.paper in papers]
