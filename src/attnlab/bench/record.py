"""A benchmark result read back typed: what ``attnlab bench`` prints from bench.json.

:meth:`attnlab.bench.run.BenchResult.to_dict` stores the run as JSON (bench.json, ``--json``): the config,
the environment, the matmul ceiling, one row per (variant, n), the crossovers and the targets.
:meth:`BenchRecord.from_dict` reads that JSON back into the records below; a field a stored result lacks
(one written by an earlier release, or a hand-made one in a test) takes its default, and keys a record does
not know are ignored.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Mapping, TypeVar

T = TypeVar("T")


def _known(cls: type[T], d: Mapping[str, Any]) -> T:
    """``cls`` built from the keys of ``d`` that name one of its fields."""
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    return cls(**{k: v for k, v in d.items() if k in names})


@dataclass(frozen=True)
class BenchRow:
    """One variant at one n (:func:`attnlab.bench.run.measure_variant`): status "ok", "unavailable",
    "skipped" or "failed" (``note`` says why), the median time and quartiles in ms (no quartiles from one
    repeat), GFLOP/s, % of the matmul ceiling, the peak memory in MiB (its rounds in ``peak_mb_rounds``) and
    ``ratio`` = time / time of its fused ``reference`` at the same n."""

    variant: str
    n: int
    status: str = "ok"
    note: str = ""
    causal: bool = False
    order: str = ""
    reference: str = ""
    masked: bool = False
    requested: bool = True
    time_ms: float | None = None
    q1_ms: float | None = None
    q3_ms: float | None = None
    first_call_ms: float | None = None
    gflop: float | None = None
    gflops: float | None = None
    pct_ceiling: float | None = None
    peak_mb: float | None = None
    peak_mb_rounds: list[float | None] | None = None
    ratio: float | None = None


@dataclass(frozen=True)
class BenchEnv:
    """Where the benchmark ran: the device and its name, torch's threads and the load before it started."""

    device: str = "cpu"
    device_name: str = ""
    threads: int | None = None
    load_average_1m: float = math.nan


@dataclass(frozen=True)
class Crossover:
    """Where a variant's time ratio to fused SDPA passes 1 (:func:`attnlab.bench.targets.crossover`):
    ``status`` ("crosses", "faster throughout", "slower throughout", "not measured") and the interpolated
    ``crossover_n`` where it crosses."""

    status: str
    crossover_n: float | None = None


@dataclass(frozen=True)
class Target:
    """One target of the run (:func:`attnlab.bench.targets.evaluate_targets`): ``measured relation limit``,
    its status (pass, FAIL, not measured, or a memory target's "inconclusive: noisy") and a detail line."""

    statement: str
    measured: float | None
    relation: str
    limit: float
    status: str
    detail: str = ""
    target: str = ""
    repeats: int | None = None


@dataclass(frozen=True)
class BenchRecord:
    """A benchmark result read back (module docstring): the dtype, the environment, the matmul ceiling in
    GFLOP/s, the rows, the crossovers by variant and the targets."""

    dtype: str
    env: BenchEnv
    ceiling_gflops: float
    rows: list[BenchRow]
    crossovers: dict[str, Crossover]
    targets: list[Target]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "BenchRecord":
        """The stored result (:meth:`attnlab.bench.run.BenchResult.to_dict`) back as records."""
        return cls(d["config"]["dtype"], _known(BenchEnv, d["env"]), d["ceiling"]["gflops"],
                   [_known(BenchRow, r) for r in d["rows"]],
                   {name: _known(Crossover, x) for name, x in d["crossovers"].items()},
                   [_known(Target, t) for t in d["targets"]])


__all__ = ["BenchEnv", "BenchRecord", "BenchRow", "Crossover", "Target"]
