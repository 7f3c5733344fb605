"""``attnlab reproduce``: run a paper's experiments into a run directory, then report.

Order of work, chosen so that an interrupted run keeps what it finished:

1. resolve the papers, their experiments and every config (bad input fails here,
   before anything is written);
2. create the run directory, write config.json (configs + argv) and env.json;
3. for each experiment: seed (random, numpy, torch) with the run's seed, run it,
   and rewrite results.json atomically; with ``resume`` an experiment whose
   results are already stored (status "ok") is skipped;
4. run the papers' claims (fast checks) and store them beside the experiments;
5. build report.html and report.md from the stored results.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import random
import time
import traceback
from pathlib import Path
from typing import Callable, Sequence

from attnlab.errors import ConfigError
from attnlab.experiments.registry import Experiment, all_experiments
from attnlab.papers import get_paper
from attnlab.reports.rundir import RunDir, load_run, to_jsonable, utc_now

SCALES = ("quick", "paper")
Progress = Callable[[str, int, int], None]  # (what is running, done, total)


def resolve_device(device: str) -> str:
    """'cpu' or 'cuda' (or 'cuda:N'); cuda without CUDA is a ConfigError."""
    import torch

    if device == "cpu":
        return device
    if device == "cuda" or device.startswith("cuda:"):
        if not torch.cuda.is_available():
            raise ConfigError("CUDA is not available on this machine; use --device cpu")
        return device
    raise ConfigError(f"unknown device {device!r}; use --device cpu or --device cuda")


def experiments_for(papers: Sequence[str]) -> list[Experiment]:
    """The registered experiments of ``papers``; a paper without any is a ConfigError."""
    for p in papers:
        get_paper(p)  # UnknownNameError naming the papers
    exps = all_experiments()
    with_exps = sorted({e.paper for e in exps})
    for p in papers:
        if p not in with_exps:
            raise ConfigError(
                f"paper {p!r} has no experiments yet; papers with experiments: {', '.join(with_exps) or 'none'}"
            )
    return [e for e in exps if e.paper in papers]


def make_config(exp: Experiment, *, scale: str, seed: int, device: str):
    """The experiment's config at ``scale``, passing seed/device where it has them."""
    names = {f.name for f in dataclasses.fields(exp.config_cls)}
    given = {"scale": scale, "seed": seed, "device": device}
    return exp.config_cls(**{k: v for k, v in given.items() if k in names})


def seed_everything(seed: int) -> None:
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device


def default_out(papers: Sequence[str]) -> Path:
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return Path("runs") / f"{'+'.join(papers)}-{stamp}"


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
) -> Path:
    """Run the experiments (and claims) of ``paper`` into a run directory; return its path."""
    papers = [paper] if isinstance(paper, str) else list(dict.fromkeys(paper))
    if not papers:
        raise ConfigError("name at least one paper, e.g. `attnlab reproduce transformer-math`")
    if scale not in SCALES:
        raise ConfigError(f"--scale must be one of {', '.join(SCALES)}, got {scale!r}")
    if not isinstance(seed, int) or seed < 0:
        raise ConfigError(f"--seed must be a non-negative integer, got {seed!r}")
    device = resolve_device(device)
    exps = experiments_for(papers)
    configs = {e.id: make_config(e, scale=scale, seed=seed, device=device) for e in exps}
    config = {
        "papers": papers, "scale": scale, "seed": seed, "device": device,
        "experiments": {i: dataclasses.asdict(c) for i, c in configs.items()},
    }
    rd = RunDir.create(out if out is not None else default_out(papers), resume=resume)
    results = _prepare(rd, config, list(argv or []), resume)
    rd.write_env(seed=seed, device=device)
    total = len(exps) + 1
    for i, e in enumerate(exps):
        if progress:
            progress(e.id, i, total)
        done = results["experiments"].get(e.id)
        if resume and done and done.get("status") == "ok":
            continue
        results["experiments"][e.id] = _run_one(e, configs[e.id], rd, seed)
        rd.write_results(results)
    if progress:
        progress("claims", len(exps), total)
    if not (resume and results.get("claims")):
        results["claims"] = _run_claims(papers, seed)
        rd.write_results(results)
    if progress:
        progress("report", total, total)
    from attnlab.reports import build_report

    build_report(rd.path)
    return rd.path


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


def _run_one(e: Experiment, cfg, rd: RunDir, seed: int) -> dict:
    seed_everything(seed)
    entry = {"id": e.id, "paper": e.paper, "description": e.description,
             "config": dataclasses.asdict(cfg), "seed": seed, "started": utc_now()}
    rd.append_metric({"event": "start", "experiment": e.id, "at": entry["started"]})
    start = time.perf_counter()
    try:
        entry["results"] = e.run(cfg, rd)
        entry["status"] = "ok"
    except Exception:  # recorded and reported; --resume runs it again
        entry["status"] = "error"
        entry["error"] = traceback.format_exc(limit=6)
    entry["seconds"] = round(time.perf_counter() - start, 3)
    entry["finished"] = utc_now()
    rd.append_metric({"event": "finish", "experiment": e.id, "status": entry["status"],
                      "seconds": entry["seconds"]})
    return entry


def _run_claims(papers: Sequence[str], seed: int) -> list[dict]:
    from attnlab.claims import select_claims

    return [c.run(seed).to_dict() for c in select_claims(list(papers))]
