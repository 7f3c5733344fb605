"""Experiments: one file each, a frozen config and ``run(cfg, run_dir)``."""

from attnlab.experiments.registry import Experiment, all_experiments, get_experiment, register  # noqa: F401
