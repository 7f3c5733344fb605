"""What a ``reproduce`` or a ``sweep`` will need, before it runs (``--dry-run``).

Every experiment's runs are built and validated exactly as the command would build them (a
size beyond the machine is refused there), then each run's config says its peak memory and
its work (:meth:`attnlab.config.Config.estimate`, :mod:`attnlab.estimates`). An experiment's
runs follow one another: its peak is the largest run's, its time the sum of its runs' times.
A swept experiment runs its grid x seeds in worker processes, each holding one run, so its
peak is the largest run's times the workers that run at once; the time is given as the sum
(one worker), an upper bound of the wall time, and marked as one.

Where an experiment gives no estimate, or counts memory but not time, the plan says so and
leaves its number out of the total: the total time is then a lower bound, and says it is.
Where an experiment's time is an upper bound (training counted to its step budget, a search
to its limit, when runs stop once the examples are memorised: ``Estimate.time_bound``), it is
printed as one ("<= 26 min"), and so is a total that includes it.

Beside this machine's time the plan gives the time on one GPU, rated rather than measured
(:data:`attnlab.estimates.GPU_RATES`; ``-`` where the estimate is timed on this CPU); an
experiment that runs on the CPU inside a CUDA run keeps this machine's time there.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from rich.console import Console
from rich.markup import escape

from attnlab.config import cpu_cores, device_memory
from attnlab.estimates import ONE_CORE, Estimate, format_bytes, format_seconds, gpu_seconds, total
from attnlab.registry import Experiment
from attnlab.terminal import Col, print_table


@dataclass(frozen=True)
class PlannedExperiment:
    """One experiment of a plan: its id, how many runs, and the estimate of them all (None:
    the experiment estimates nothing)."""

    id: str
    runs: int
    estimate: Estimate | None
    cpu_only: bool = False  # runs on the host CPU inside a CUDA run too (Experiment.cpu_only)

    @property
    def timed(self) -> bool:
        """Whether the estimate counts time (some count memory only)."""
        return self.estimate is not None and self.estimate.seconds > 0

    @property
    def gpu_seconds(self) -> float | None:
        """The time on :data:`attnlab.estimates.REFERENCE_GPU`, one run after another: this
        machine's time for a CPU-only experiment; None where the time is not counted, or timed on
        this CPU."""
        if not self.timed:
            return None
        return self.estimate.seconds if self.cpu_only else gpu_seconds(self.estimate)

    def to_dict(self) -> dict[str, Any]:
        e = self.estimate
        return {"experiment": self.id, "runs": self.runs, "estimate": None if e is None else e.to_dict(),
                "time_counted": self.timed, "time_is_bound": bool(self.timed and e.time_bound),
                "seconds_one_gpu_rated": self.gpu_seconds}


@dataclass(frozen=True)
class Plan:
    """Every experiment of a command, in the order it runs them, and the device they run on."""

    experiments: tuple[PlannedExperiment, ...]
    device: str = "cpu"

    @property
    def peak_bytes(self) -> float:
        """The largest experiment's peak (they run one after another)."""
        return max((p.estimate.peak_bytes for p in self.experiments if p.estimate is not None), default=0.0)

    @property
    def seconds(self) -> float:
        """The summed time of the experiments whose estimate counts it (a lower bound when
        some do not: :attr:`complete`)."""
        return sum(p.estimate.seconds for p in self.experiments if p.timed)

    @property
    def complete(self) -> bool:
        """Every experiment's time is counted."""
        return all(p.timed for p in self.experiments)

    @property
    def bounded(self) -> bool:
        """Some experiment's time is an upper bound (a step budget), so the total is one too."""
        return any(p.timed and p.estimate.time_bound for p in self.experiments)

    def fits(self) -> bool | None:
        """Whether the peak fits in the device's memory (None when that is unknown)."""
        available = device_memory(self.device)
        return None if available is None else self.peak_bytes <= available

    def summary(self) -> str:
        """"peak 3.2 GiB, about 6.3 min on one core of this machine (cpu has 23.5 GiB)"; "at least" where a time is missing."""
        available = device_memory(self.device)
        has = f"{self.device} has {format_bytes(available)}" if available is not None else "memory unknown"
        if self.complete:
            when = (f"at most {format_seconds(self.seconds)} on {ONE_CORE} (budgets; runs stop earlier)"
                    if self.bounded else f"about {format_seconds(self.seconds)} on {ONE_CORE}")
        elif self.seconds > 0:
            when = f"at least {format_seconds(self.seconds)} on {ONE_CORE} (some times not counted)"
        else:
            when = "time not counted"
        return f"peak {format_bytes(self.peak_bytes)}, {when} ({has})"

    def to_dict(self) -> dict[str, Any]:
        return {"device": self.device, "memory_available": device_memory(self.device),
                "peak_bytes": int(self.peak_bytes), "seconds": self.seconds, "time_complete": self.complete,
                "time_is_bound": self.bounded,
                "fits": self.fits(), "experiments": [p.to_dict() for p in self.experiments]}


def planned(exp: Experiment, configs: Sequence[Any], workers: int = 1) -> PlannedExperiment:
    """The runs of ``exp`` with ``configs``, one after another on each of ``workers`` (module
    docstring): None when its config estimates nothing."""
    parts = [c.estimate() for c in configs]
    cpu_only = bool(exp.cpu_only)
    if not parts or any(p is None for p in parts):
        return PlannedExperiment(exp.id, len(configs), None, cpu_only)
    e = total(parts)
    at_once = min(workers, len(parts))
    if at_once > 1:  # the runs share the workers: the peak adds up, the summed time bounds the wall time
        shared = f"the sum over {len(parts)} runs that {at_once} workers run side by side"
        e = dataclasses.replace(e, peak_bytes=e.peak_bytes * at_once,
                                time_bound="; ".join(b for b in (e.time_bound, shared) if b))
    return PlannedExperiment(exp.id, len(configs), e, cpu_only)


def plan_reproduce(paper: str | Sequence[str], *, scale: str = "quick", seed: int = 0, device: str = "cpu",
                   settings: Mapping[str, Any] | None = None, sweep_workers: int | None = None,
                   only: Sequence[str] | None = None) -> Plan:
    """The plan of :func:`attnlab.commands.reproduce.reproduce` with these arguments: every
    experiment's configs built as it builds them (nothing is run or written)."""
    from attnlab.commands.reproduce import resolve
    from attnlab.sweeps.spec import expand

    _, exps, configs, specs = resolve(paper, scale=scale, seed=seed, device=device, settings=settings,
                                      only=only)
    workers = sweep_workers or cpu_cores()
    out = []
    for e in exps:
        if e.id in specs:
            runs = [r.config for r in expand(e, specs[e.id], e.run_device(device)[0])]
            out.append(planned(e, runs, workers))
        else:
            out.append(planned(e, [configs[e.id]]))
    return Plan(tuple(out), device)


def plan_sweep(exp: Experiment, spec, device: str = "cpu", workers: int | None = None) -> Plan:
    """The plan of ``attnlab sweep`` (:func:`attnlab.sweeps.run_sweep`) for ``spec``."""
    from attnlab.sweeps.spec import expand

    runs = [r.config for r in expand(exp, spec, device)]
    return Plan((planned(exp, runs, workers or min(cpu_cores(), len(runs))),), device)


def print_plan(console, plan: Plan, title: str) -> None:
    """The plan on ``console``: one row per experiment (runs, peak, time, what dominates), then the total."""
    rows = []
    for p in plan.experiments:
        e = p.estimate
        if e is None:
            rows.append([escape(p.id), str(p.runs), "-", "-", "-", "not estimated"])
            continue
        bound = "<= " if e.time_bound else ""
        when = bound + format_seconds(e.seconds) if p.timed else "not counted"
        gpu = "-" if p.gpu_seconds is None else bound + format_seconds(p.gpu_seconds)
        rows.append([escape(p.id), str(p.runs), escape(format_bytes(e.peak_bytes)), escape(when), escape(gpu),
                     escape(e.what)])
    print_table(console, title, [Col("experiment", "key"), Col("runs", "number"), Col("peak", "number"),
                                 Col("time", "number"), Col("one GPU, rated", "number"), Col("dominated by")], rows)
    console.print(("fits: " if plan.fits() is not False else "does not fit: ") + plan.summary(),
                  highlight=False, markup=False, soft_wrap=True)


def print_plan_or_json(console: Console, plan: Plan, title: str, as_json: bool) -> None:
    """A dry run's plan: as JSON, or as the table of :func:`print_plan`."""
    from attnlab.commands.console import print_json

    if as_json:
        print_json(plan.to_dict())
    else:
        print_plan(console, plan, title)
