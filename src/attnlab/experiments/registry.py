"""The experiments registry.

An experiment is a frozen config dataclass and ``run(cfg, run_dir) -> dict``
that writes machine-readable results; its report section is built from those
stored results alone (``attnlab.reports``), so a report can always be rebuilt.

Optional fields say how ``attnlab reproduce`` treats an experiment:

- ``in_reproduce=False`` leaves it out (an engine self-test, say); it stays
  runnable through ``attnlab sweep``.
- ``reproduce_sweep(scale) -> SweepPlan`` makes ``reproduce`` run a sweep of it
  (:mod:`attnlab.sweeps`: the plan's grid x seeds, seeds counted from the run's
  seed) instead of one run, and ``aggregate(rows) -> dict`` turns the sweep's
  table rows into the results the report shows (summary, tables, figures, ...).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from attnlab.errors import ConfigError, UnknownNameError
from attnlab.papers import PAPERS


@dataclass(frozen=True)
class SweepPlan:
    """What ``reproduce`` sweeps at one scale: grid key -> values, ``seeds`` seeds per
    grid point, and fixed ``base`` overrides (config fields other than seed/device)."""

    grid: dict[str, list[Any]]
    seeds: int = 1
    base: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.seeds, int) or isinstance(self.seeds, bool) or self.seeds < 1:
            raise ConfigError(f"a sweep plan needs seeds >= 1, got {self.seeds!r}")
        if not self.grid or any(not list(v) for v in self.grid.values()):
            raise ConfigError("a sweep plan needs a non-empty grid with at least one value per key")


@dataclass(frozen=True)
class Experiment:
    id: str  # "<paper>.<name>"
    description: str
    config_cls: type
    run: Callable[..., dict[str, Any]]
    in_reproduce: bool = True
    reproduce_sweep: Callable[[str], SweepPlan] | None = None  # scale -> plan
    aggregate: Callable[[list[dict]], dict[str, Any]] | None = None  # sweep rows -> results

    def __post_init__(self) -> None:
        if (self.reproduce_sweep is None) != (self.aggregate is None):
            raise ConfigError(f"experiment {self.id!r}: give reproduce_sweep and aggregate together")

    @property
    def paper(self) -> str:
        return self.id.split(".", 1)[0]


_REGISTRY: dict[str, Experiment] = {}


def register(exp: Experiment) -> Experiment:
    if exp.paper not in PAPERS:
        raise ConfigError(f"experiment id {exp.id!r} must start with a paper name")
    if exp.id in _REGISTRY:
        raise ConfigError(f"experiment {exp.id!r} is registered twice")
    _REGISTRY[exp.id] = exp
    return exp


def all_experiments() -> list[Experiment]:
    import attnlab.experiments  # noqa: F401  (registers every experiment module)

    return sorted(_REGISTRY.values(), key=lambda e: e.id)


def get_experiment(id: str) -> Experiment:
    for e in all_experiments():
        if e.id == id:
            return e
    raise UnknownNameError(
        f"unknown experiment {id!r}: `attnlab list` shows the experiments"
    )
