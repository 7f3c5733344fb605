"""Experiments: a frozen config on :class:`attnlab.config.RunConfig` and ``run(cfg, run_dir)``,
registered with :func:`register_experiment`; what ``reproduce`` sweeps (:class:`SweepPlan`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable

from attnlab.errors import ConfigError, UnknownNameError
from attnlab.registry.state import _STATE, check_anchor, discover, record


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
    """id: "<paper>.<name>"; config_cls: a frozen RunConfig; run(cfg, run_dir) -> ExperimentResult.

    in_reproduce=False leaves it out of ``attnlab reproduce`` (it stays runnable through
    ``attnlab sweep``). ``reproduce_sweep(scale) -> SweepPlan`` makes ``reproduce`` run a
    sweep of it (the plan's grid x seeds, seeds counted from the run's seed) instead of
    one run, and ``aggregate(rows) -> ExperimentResult`` turns the sweep's table rows
    into what the report shows. ``cpu_only``, when set, says why the experiment is better
    on the CPU (small float64 problems, say): inside a CUDA run it runs on the CPU, and
    its report says so (:meth:`run_device`).

    ``anchors`` are the ledger entries its summary rows check (:mod:`attnlab.ledger`): every
    anchored row of its result names one of them, and ``attnlab coverage`` lists the
    experiment under each.
    """

    id: str
    description: str
    config_cls: type
    run: Callable[..., Any]
    in_reproduce: bool = True
    reproduce_sweep: Callable[[str], SweepPlan] | None = None
    aggregate: Callable[[list[dict]], Any] | None = None
    cpu_only: str = ""
    anchors: tuple[str, ...] = ()

    def run_device(self, device: str) -> tuple[str, str | None]:
        """(the device this experiment runs on in a run on ``device``, the note saying why, or None)."""
        if self.cpu_only and device != "cpu":
            return "cpu", f"Ran on the CPU inside a {device} run: {self.cpu_only}."
        return device, None

    def __post_init__(self) -> None:
        if (self.reproduce_sweep is None) != (self.aggregate is None):
            raise ConfigError(f"experiment {self.id!r}: give reproduce_sweep and aggregate together")
        if not dataclasses.is_dataclass(self.config_cls) or not self.config_cls.__dataclass_params__.frozen:
            raise ConfigError(f"experiment {self.id!r}: its config must be a frozen dataclass")

    @property
    def paper(self) -> str:
        return self.id.split(".", 1)[0]


def register_experiment(exp: Experiment) -> Experiment:
    """Register ``exp`` (call it at the bottom of the experiment's module)."""
    from attnlab.config import RunConfig

    if "." not in exp.id or exp.paper not in _STATE.papers:
        raise ConfigError(f"experiment id {exp.id!r} must be '<paper>.<name>' with paper in {list(_STATE.papers)}")
    if not issubclass(exp.config_cls, RunConfig):
        raise ConfigError(f"experiment {exp.id!r}: its config must extend attnlab.config.RunConfig")
    for a in exp.anchors:
        check_anchor(f"experiment {exp.id!r}", exp.paper, a)
    return record("experiments", exp.id, exp, exp.paper, exp.run.__module__)


def all_experiments() -> list[Experiment]:
    discover()
    return sorted(_STATE.experiments.values(), key=lambda e: e.id)


def get_experiment(id: str) -> Experiment:
    discover()
    if id not in _STATE.experiments:
        raise UnknownNameError(f"unknown experiment {id!r}: `attnlab list` shows the experiments")
    return _STATE.experiments[id]
