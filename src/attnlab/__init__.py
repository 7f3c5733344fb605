"""attnlab: the mathematics of attention, executable.

A paper-agnostic library at the bottom and one package per paper on top:

- ``ops``, ``nn``: attention operators (a float64 reference among them) and modules
- ``analysis``, ``training``, ``data``, ``tasks``, ``pretrained``: measurements, batched
  training, text that ships offline, synthetic tasks, real checkpoints
- ``registry``, ``config``, ``results``: claims, experiments and constructions, their
  configs and one validation path, typed results
- ``runs``, ``sweeps``, ``reports``, ``bench``: run directories, grids of runs,
  HTML/Markdown reports, ``attnlab bench``
- ``papers``: one package per text; the library never imports it
- ``commands``: ``reproduce``, ``analyze`` and ``construct``, above the library
- ``cli``: the ``attnlab`` command
"""

__version__ = "0.1.0"

# ``import attnlab`` is cheap; the library's packages and the attention operators load on
# first use: ``attnlab.softmax_attention``, ``attnlab.linear_attention``, ``attnlab.nn``.
_PACKAGES = ("ops", "nn", "analysis", "training", "data", "tasks", "pretrained", "registry", "config", "results",
             "checks", "errata", "runs", "sweeps", "reports", "bench", "papers", "commands", "cli", "errors")
_OPERATORS = ("attnlab.ops", "attnlab.ops.linear", "attnlab.ops.sparse")
_LOWRANK = ("linformer_attention", "gaussian_projection", "random_projection_weights", "best_rank_k")


def __getattr__(name: str):
    import importlib

    if name in _PACKAGES:
        return importlib.import_module(f"attnlab.{name}")
    for module in _OPERATORS:
        m = importlib.import_module(module)
        if name in getattr(m, "__all__", ()):
            return getattr(m, name)
    if name in _LOWRANK:
        return getattr(importlib.import_module("attnlab.ops.lowrank"), name)
    raise AttributeError(f"module 'attnlab' has no attribute {name!r}")


def __dir__() -> list[str]:
    import importlib

    names = set(globals()) | set(_PACKAGES) | set(_LOWRANK)
    for module in _OPERATORS:
        names |= set(getattr(importlib.import_module(module), "__all__", ()))
    return sorted(names)
