"""One run of a sweep, as executed in a worker (in-process, a local process, or a Dask worker).

The worker owns everything inside ``out/runs/<run_id>/``::

    config.json    the resolved config, seed and experiment id (written first)
    metrics.jsonl  whatever the experiment appends through its RunDir
    log.txt        the run's stdout and stderr, and the traceback if it raised
    result.json    written last and atomically, only when the run succeeded

so a run is finished iff its result.json exists. Before calling ``run(cfg, run_dir)``
the worker seeds Python's ``random``, NumPy and torch with the run's seed: the same
config and seed give the same result, bitwise on CPU (at the same thread count).
"""

from __future__ import annotations

import contextlib
import json
import math
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attnlab.results import ExperimentResult
from attnlab.runs.jsonable import to_jsonable
from attnlab.runs.rundir import RunDir, utc_now
from attnlab.runs.seeds import seed_everything
from attnlab.runs.threads import num_threads

RESULT, LOG, RUN_CONFIG = "result.json", "log.txt", "config.json"
ROW_KEYS = ("run_id", "status", "seed", "seconds")  # table columns every row has


@dataclass(frozen=True)
class RunItem:
    """What a worker needs for one run; picklable (sent to processes and Dask workers).

    ``config`` is the resolved config as plain JSON data: the worker rebuilds the config
    object from the experiment it finds in its own registry, so an experiment whose
    module cannot be imported by name (a plugin file) runs in any process.
    """

    experiment: str
    run_id: str
    seed: int
    config: dict
    run_dir: str
    threads: int | None = None  # torch.set_num_threads in the worker; None leaves it


def check_scalars(scalars: Any, config_fields: list[str]) -> dict:
    """The run's ``"scalars"``: a dict of str -> float|int|str|bool whose names are free."""
    if scalars is None:
        return {}
    if not isinstance(scalars, dict):
        raise TypeError(f"'scalars' must be a dict of name -> number, got {type(scalars).__name__}")
    clash = sorted(set(scalars) & (set(config_fields) | set(ROW_KEYS)))
    if clash:
        raise ValueError(f"scalar name(s) {', '.join(clash)} clash with config fields or table columns; rename them")
    out = {}
    for k, v in scalars.items():
        if hasattr(v, "item") and callable(v.item):  # 0-d tensors, numpy scalars
            v = v.item()
        if not isinstance(v, (bool, int, float, str)):
            raise TypeError(f"scalar {k!r} must be a float, int, str or bool, got {type(v).__name__}")
        out[str(k)] = v
    return out


def execute_run(item: RunItem) -> dict:
    """Run ``item`` and return its outcome: {"run_id", "status", "seconds", "error", "record"}.

    "record" is the content of result.json as read back (None for a failed run), so
    the sweep's table is the same whether a run ran now or was found on disk.
    """
    with num_threads(item.threads or None):  # restored after: an inline sweep runs in this process
        return _execute(item)


def _execute(item: RunItem) -> dict:
    from attnlab.registry import get_experiment  # discovers the papers in this process

    path = Path(item.run_dir)
    path.mkdir(parents=True, exist_ok=True)
    rd = RunDir(path)
    config = item.config
    rd.write_json(RUN_CONFIG, {"experiment": item.experiment, "run_id": item.run_id,
                               "seed": item.seed, "config": config})
    started, t0 = utc_now(), time.perf_counter()
    with open(path / LOG, "w", encoding="utf-8", buffering=1) as log:
        try:
            with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
                exp = get_experiment(item.experiment)
                cfg = rebuild_config(exp.config_cls, config)
                seed_everything(item.seed)
                result = exp.run(cfg, rd)
                if not isinstance(result, ExperimentResult):
                    raise TypeError(f"run() must return attnlab.results.ExperimentResult, got {type(result).__name__}")
                scalars = check_scalars(result.scalars, list(config))
        except Exception as e:  # recorded as a failed run; the sweep goes on
            log.write(traceback.format_exc())
            seconds = round(time.perf_counter() - t0, 3)
            return {"run_id": item.run_id, "status": "failed", "seconds": seconds,
                    "error": error_line(e), "record": None}
    seconds = round(time.perf_counter() - t0, 3)
    record = {"run_id": item.run_id, "experiment": item.experiment, "status": "ok", "seed": item.seed,
              "config": config, "scalars": _finite(scalars), "seconds": seconds,
              "started": started, "finished": utc_now(), "result": to_jsonable(result.to_dict())}
    rd.write_json(RESULT, record)
    # read back: what the table holds is exactly what a later resume reads from disk
    record = json.loads((path / RESULT).read_text(encoding="utf-8"))
    return {"run_id": item.run_id, "status": "ok", "seconds": seconds, "error": None, "record": record}


def error_line(e: BaseException) -> str:
    """The last line of an exception as a traceback prints it: 'Type: message'."""
    lines = traceback.format_exception_only(type(e), e)
    last = lines[-1].strip() if lines else type(e).__name__
    return " ".join(last.split())


def rebuild_config(config_cls: type, config: dict) -> Any:
    """The config object whose JSON form is ``config`` (values converted by annotation)."""
    import dataclasses

    from attnlab.config import coerce, field_types

    types_ = field_types(config_cls)
    cfg = config_cls(**{k: coerce(v, types_[k]) for k, v in config.items()})
    if to_jsonable(dataclasses.asdict(cfg)) != config:
        raise ValueError(f"{config_cls.__name__} does not round-trip through JSON: {config!r}")
    return cfg


def _finite(scalars: dict) -> dict:
    # non-finite floats become strings in JSON; keep them readable as numbers in the CSV
    return {k: (str(v) if isinstance(v, float) and not math.isfinite(v) else v) for k, v in scalars.items()}

