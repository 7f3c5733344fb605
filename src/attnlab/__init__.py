"""attnlab: the mathematics of attention, executable.

A paper-agnostic library at the bottom and one package per paper on top:

- ``ops``, ``nn``: attention operators (a float64 reference among them) and modules
- ``analysis``, ``training``, ``data``, ``tasks``, ``pretrained``: measurements, batched
  training, text that ships offline, synthetic tasks, real checkpoints
- ``patching``: activation patching on the hook points, batched, with its metrics
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
# Each name maps to the one module that defines it, so a name outside these tables raises
# AttributeError at once and imports nothing (``from attnlab import estimates`` then imports
# the submodule, and ``import attnlab.cli`` stays free of torch); tests/test_package.py checks
# the tables against the modules' ``__all__``.
_PACKAGES = ("ops", "nn", "analysis", "training", "data", "tasks", "pretrained", "patching", "registry", "config", "results",
             "checks", "errata", "deviations", "estimates", "ledger", "terminal", "runs", "sweeps", "reports",
             "bench", "papers", "commands", "cli", "errors")
_OPERATORS = {
    "attnlab.ops": (
        "AttentionOutput", "AttentionVariant", "CATALOGUE", "Exactness", "SIMILARITIES", "attention_logits",
        "attention_lse", "attention_pooling", "attention_rows", "causal_mask", "combine_masks",
        "get_attention_variant", "key_padding_mask_from_attention_mask", "masked_softmax", "multi_head_attention",
        "ov_circuit", "qk_circuit", "reference_attention", "resolve_scale", "select_variants", "softmax_attention",
        "unnormalized_attention"),
    "attnlab.ops.linear": (
        "FEATURE_MAPS", "FORMS", "FeatureMap", "favor_features", "feature_map", "gaussian_features",
        "linear_attention", "recurrent_linear_attention", "taylor_as_printed", "taylor_closed_form"),
    "attnlab.ops.sparse": (
        "SparsePattern", "bigbird_attention", "bigbird_pattern", "longformer_attention", "longformer_pattern",
        "pattern_attention", "pattern_from_mask", "bigbird_graph", "graph_attention", "graph_to_mask",
        "longformer_graph", "mask_to_graph", "max_hops", "sliding_window_attention", "sliding_window_graph"),
    "attnlab.ops.lowrank": ("linformer_attention", "gaussian_projection", "random_projection_weights", "best_rank_k"),
}
_MODULE_OF = {name: module for module, names in _OPERATORS.items() for name in names}
"""Operator name -> the module it is read from."""


def __getattr__(name: str):
    import importlib

    if name in _PACKAGES:
        return importlib.import_module(f"attnlab.{name}")
    if name in _MODULE_OF:
        return getattr(importlib.import_module(_MODULE_OF[name]), name)
    raise AttributeError(f"module 'attnlab' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PACKAGES) | set(_MODULE_OF))
