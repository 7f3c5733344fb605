"""What a sweep runs: the spec, its grid expanded into validated run plans, run ids.

A sweep of experiment E is the Cartesian product of its grid, times K seeds::

    runs = { (p, s) : p in grid[k_1] x ... x grid[k_m],  s in seed0, ..., seed0 + K - 1 }

and the config of run (p, s) is ``E.config_cls(**(defaults | base | p | {seed: s, device}))``.
Every config is built (so validated by its ``__post_init__``) before any run starts.

Values written as text (``--set key=value``, ``--grid key=v1,v2``) are converted
with the type annotation of the config field they set:

    int            "3"                 float   "0.5", "1e-3", "inf"
    bool           true/false/1/0/yes/no (any case)
    str            as written          X | None   "none" or "null" gives None
    tuple[T, ...]  "3;11;64" (";" between items, since "," separates grid values;
                   "" is the empty tuple); list[T] the same
    Literal[...]   one of the listed values

Values given from Python are checked against the same annotations (an int is
accepted where a float is expected; a list where a tuple is).

The run id is the first 12 hex digits of SHA-256 over the sorted JSON of
(experiment id, resolved config, seed): it names the run directory
``out/runs/<run_id>/`` and stays the same for the same config on any machine.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import math
import types
import typing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from attnlab.errors import AttnlabError, ConfigError
from attnlab.reports.rundir import to_jsonable

if TYPE_CHECKING:  # the experiments package may import this one: no import cycle at run time
    from attnlab.experiments.registry import Experiment

RESERVED = ("seed", "device")  # set by --seed/--seeds and --device, never by --set/--grid
_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")


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
            raise ConfigError("name an experiment, e.g. `attnlab sweep transformer-math.sweep-selftest`")
        if not isinstance(self.base, dict) or not isinstance(self.grid, dict):
            raise ConfigError("base and grid must be dicts of config field -> value(s)")
        if not isinstance(self.seeds, int) or isinstance(self.seeds, bool) or self.seeds < 1:
            raise ConfigError(f"--seeds must be an integer >= 1, got {self.seeds!r}")
        if not isinstance(self.seed0, int) or isinstance(self.seed0, bool) or self.seed0 < 0:
            raise ConfigError(f"--seed must be a non-negative integer, got {self.seed0!r}")
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


# ---- value parsing ----------------------------------------------------------------------
def field_types(config_cls: type) -> dict[str, Any]:
    """Field name -> resolved type annotation (string annotations evaluated)."""
    try:
        hints = typing.get_type_hints(config_cls)
    except Exception:  # unresolvable annotation: fall back to no conversion
        hints = {}
    return {f.name: hints.get(f.name, Any) for f in dataclasses.fields(config_cls)}


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) if isinstance(tp, type) else str(tp).replace("typing.", "")


def coerce(value: Any, tp: Any) -> Any:
    """``value`` (text from the command line, or a Python value) as type ``tp``.

    Raises ValueError with a short reason when it does not fit.
    """
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        if type(None) in args and (value is None or (isinstance(value, str) and value.lower() in ("none", "null"))):
            return None
        for a in (a for a in args if a is not type(None)):
            try:
                return coerce(value, a)
            except ValueError:
                continue
        raise ValueError(f"expected {_type_name(tp)}")
    if origin is typing.Literal:
        for a in args:
            try:
                if coerce(value, type(a)) == a:
                    return a
            except ValueError:
                continue
        raise ValueError(f"expected one of {', '.join(map(str, args))}")
    if origin in (tuple, list):
        return _coerce_sequence(value, origin, args)
    if tp is bool:
        return _coerce_bool(value)
    if tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str):
            try:
                return int(value.strip())
            except ValueError:
                pass
        raise ValueError("expected an integer")
    if tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value.strip())
            except ValueError:
                pass
        raise ValueError("expected a number")
    if tp is str:
        if isinstance(value, str):
            return value
        raise ValueError("expected a string")
    return value  # other annotations: the config's __post_init__ judges


def _coerce_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
        return value.strip().lower() in _TRUE
    raise ValueError("expected true or false (or 1/0)")


def _coerce_sequence(value: Any, origin: type, args: tuple) -> Any:
    if isinstance(value, str):
        items = [v.strip() for v in value.split(";")] if value.strip() else []
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        raise ValueError("expected items separated by ';', e.g. 3;11;64")
    if origin is tuple and args and args[-1] is not Ellipsis:  # fixed length tuple[A, B]
        if len(items) != len(args):
            raise ValueError(f"expected {len(args)} items separated by ';'")
        return tuple(coerce(v, a) for v, a in zip(items, args))
    item_tp = args[0] if args else Any
    return origin(coerce(v, item_tp) for v in items)


def format_value(value: Any) -> Any:
    """A config value as one table cell: sequences as "a;b;c" (the --set syntax)."""
    if isinstance(value, (list, tuple)):
        return ";".join(str(format_value(v)) for v in value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


# ---- expansion --------------------------------------------------------------------------
def _resolve_value(exp: Experiment, types_: dict[str, Any], key: str, value: Any, flag: str) -> Any:
    if key in RESERVED:
        hint = "--seed/--seeds" if key == "seed" else "--device"
        raise ConfigError(f"{flag} {key}: {key} is set by {hint}, not by {flag}")
    if key not in types_:
        allowed = ", ".join(k for k in types_ if k not in RESERVED)
        raise ConfigError(f"{flag} {key}: {exp.id} has no config field {key!r}; fields: {allowed}")
    try:
        return coerce(value, types_[key])
    except ValueError as e:
        raise ConfigError(
            f"{flag} {key}={value}: {e} for {key} ({_type_name(types_[key])})"
        ) from None


def resolved_overrides(exp: Experiment, spec: SweepSpec) -> tuple[dict, dict]:
    """(base, grid) with every value converted to its field's type."""
    types_ = field_types(exp.config_cls)
    base = {k: _resolve_value(exp, types_, k, v, "--set") for k, v in spec.base.items()}
    grid = {k: [_resolve_value(exp, types_, k, v, "--grid") for v in vs] for k, vs in spec.grid.items()}
    return base, grid


def run_id(experiment: str, config: dict, seed: int) -> str:
    """First 12 hex digits of SHA-256 over the sorted JSON of (experiment, config, seed)."""
    text = json.dumps({"experiment": experiment, "config": to_jsonable(config), "seed": seed},
                      sort_keys=True, separators=(",", ":"), allow_nan=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def build_config(exp: Experiment, overrides: dict[str, Any], seed: int, device: str) -> Any:
    """The experiment's config from defaults + overrides (+ seed, device where it has them)."""
    names = {f.name for f in dataclasses.fields(exp.config_cls)}
    kw = {**overrides, **{k: v for k, v in (("seed", seed), ("device", device)) if k in names}}
    try:
        return exp.config_cls(**kw)
    except AttnlabError as e:
        raise ConfigError(f"{_describe(overrides)}: {e}") from None
    except (TypeError, ValueError) as e:
        raise ConfigError(f"{_describe(overrides)}: {e}; check the values given with --set/--grid") from None


def _describe(overrides: dict) -> str:
    if not overrides:
        return "the default config"
    return "config " + " ".join(f"{k}={format_value(v)}" for k, v in overrides.items())


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
