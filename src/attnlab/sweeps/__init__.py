"""Sweeps: run any registered experiment over a grid of configs and seeds.

    from attnlab.sweeps import SweepSpec, run_sweep
    spec = SweepSpec("transformer-math.scaling", base={"steps": 200}, grid={"d_head": [8, 16]}, seeds=2)
    result = run_sweep(spec, Path("runs/my-sweep"), executor="process", workers=2)
    result.table_path  # runs/my-sweep/results.csv, one row per run

Resumable (``resume=True`` skips runs whose result.json exists), parallel on local
processes or a Dask cluster; see :mod:`attnlab.sweeps.engine` for the layout of the
sweep directory, :mod:`attnlab.sweeps.spec` for how values are written, and
:mod:`attnlab.sweeps.executors` for where runs execute.
"""

from attnlab.sweeps.engine import SweepInterrupted, SweepResult, describe, run_sweep  # noqa: F401
from attnlab.sweeps.spec import RunPlan, SweepSpec, expand, run_id  # noqa: F401
from attnlab.sweeps.table import TIMING_COLUMNS  # noqa: F401

__all__ = ["SweepSpec", "SweepResult", "SweepInterrupted", "RunPlan", "run_sweep", "expand", "run_id",
           "describe", "TIMING_COLUMNS"]
