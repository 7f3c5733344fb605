"""Experiments: one file each, a frozen config and ``run(cfg, run_dir)``.

Every module in this package other than ``registry`` is imported for its
registrations.
"""

import importlib
import pkgutil

from attnlab.experiments.registry import Experiment, all_experiments, get_experiment, register  # noqa: F401

for _m in pkgutil.iter_modules(__path__):
    if _m.name != "registry":
        importlib.import_module(f"{__name__}.{_m.name}")
