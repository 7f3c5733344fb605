"""What a sweep runs: the spec, its grid expanded into validated run plans, run ids.

A sweep of experiment E is the Cartesian product of its grid, times K seeds::

    runs = { (p, s) : p in grid[k_1] x ... x grid[k_m],  s in seed0, ..., seed0 + K - 1 }

and the config of run (p, s) is ``E.config_cls(**(defaults | base | p | {seed: s, device}))``.
Every config is built (so validated by its ``__post_init__``) before any run starts.

Values written as text (``--set key=value``, ``--grid key=v1,v2``) are converted
with the type annotation of the config field they set, by the one conversion
every command uses (:func:`attnlab.config.coerce`: "3,11,64" or "3;11;64" for tuples, and
"3;11;64" inside ``--grid``, whose commas separate its values; true/false for bools, "none" for None). Values given from Python are checked against the same
annotations (an int is accepted where a float is expected; a list where a tuple is).

The run id is the first 12 hex digits of SHA-256 over the sorted JSON of
(experiment id, resolved config, seed): it names the run directory
``out/runs/<run_id>/`` and stays the same for the same config on any machine.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
from dataclasses import dataclass, field
from typing import Any

from attnlab.config import build_config as _build, check_int, check_seed, coerce_field, format_value, shown
from attnlab.errors import ConfigError
from attnlab.registry import Experiment
from attnlab.runs.jsonable import to_jsonable

RESERVED = {"seed": "--seed/--seeds", "device": "--device"}  # never set by --set/--grid


@dataclass(frozen=True)
class SweepSpec:
    """experiment: a registered id; base: fixed overrides; grid: key -> values to sweep;
    seeds: K seeds seed0, ..., seed0 + K - 1 for every grid point."""

    experiment: str
    base: dict[str, Any] = field(default_factory=dict)
    grid: dict[str, list[Any]] = field(default_factory=dict)
    seeds: int = 1
    seed0: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.experiment, str) or not self.experiment:
            raise ConfigError("name an experiment, e.g. `attnlab sweep transformer-math.scaling`")
        if not isinstance(self.base, dict) or not isinstance(self.grid, dict):
            raise ConfigError("base and grid must be dicts of config field -> value(s)")
        check_int("--seeds", self.seeds, minimum=1)
        check_seed(self.seed0, "--seed")
        check_seed(self.seed0 + self.seeds - 1, "--seed + --seeds - 1")
        for k, values in self.grid.items():
            if isinstance(values, (str, bytes)) or not hasattr(values, "__len__") or len(values) == 0:
                raise ConfigError(f"--grid {k} needs a non-empty list of values, e.g. --grid {k}=v1,v2")
        both = sorted(set(self.base) & set(self.grid))
        if both:
            raise ConfigError(f"{', '.join(both)} given in both --set and --grid; give each key once")

    def to_json(self) -> dict:
        return to_jsonable(dataclasses.asdict(self))


@dataclass(frozen=True)
class RunPlan:
    """One run of a sweep: its id, grid point, seed and validated config."""

    run_id: str
    point: dict[str, Any]
    seed: int
    config: Any  # an instance of the experiment's config_cls

    def config_json(self) -> dict:
        return to_jsonable(dataclasses.asdict(self.config))


# ---- expansion --------------------------------------------------------------------------
def resolved_overrides(exp: Experiment, spec: SweepSpec) -> tuple[dict, dict]:
    """(base, grid) with every value converted to its field's type."""
    def value(key: str, v: Any, flag: str) -> Any:
        return coerce_field(exp.id, exp.config_cls, key, v, flag, RESERVED)

    base = {k: value(k, v, "--set") for k, v in spec.base.items()}
    grid = {k: [value(k, v, "--grid") for v in vs] for k, vs in spec.grid.items()}
    return base, grid


def run_id(experiment: str, config: dict, seed: int) -> str:
    """First 12 hex digits of SHA-256 over the sorted JSON of (experiment, config, seed)."""
    text = json.dumps({"experiment": experiment, "config": to_jsonable(config), "seed": seed},
                      sort_keys=True, separators=(",", ":"), allow_nan=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def build_config(exp: Experiment, overrides: dict[str, Any], seed: int, device: str) -> Any:
    """The experiment's config from defaults + overrides + seed and device."""
    return _build(exp.config_cls, {**overrides, "seed": seed, "device": device}, what=_describe(overrides))


def _describe(overrides: dict) -> str:
    if not overrides:
        return "the default config"
    return "config " + " ".join(f"{k}={shown(format_value(v), quote=False)}" for k, v in overrides.items())


def expand(exp: Experiment, spec: SweepSpec, device: str = "cpu") -> list[RunPlan]:
    """Every run of ``spec``, in grid order (first key slowest, seeds innermost), validated."""
    base, grid = resolved_overrides(exp, spec)
    keys = list(grid)
    plans, seen = [], {}
    for values in itertools.product(*(grid[k] for k in keys)):
        point = dict(zip(keys, values))
        for seed in range(spec.seed0, spec.seed0 + spec.seeds):
            cfg = build_config(exp, {**base, **point}, seed, device)
            rid = run_id(exp.id, dataclasses.asdict(cfg), seed)
            if rid in seen:
                raise ConfigError(
                    f"grid points {_describe(seen[rid])} and {_describe(point)} give the same config; "
                    "remove the repeated value from --grid"
                )
            seen[rid] = point
            plans.append(RunPlan(rid, point, seed, cfg))
    return plans
