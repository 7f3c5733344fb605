"""The experiments registry.

An experiment is a frozen config dataclass and ``run(cfg, run_dir) -> dict``
that writes machine-readable results; its report section is built from those
stored results alone (``attnlab.reports``), so a report can always be rebuilt.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from attnlab.errors import ConfigError, UnknownNameError
from attnlab.papers import PAPERS


@dataclass(frozen=True)
class Experiment:
    id: str  # "<paper>.<name>"
    description: str
    config_cls: type
    run: Callable[..., dict[str, Any]]

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
