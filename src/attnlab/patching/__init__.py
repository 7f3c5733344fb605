"""Activation patching on attnlab's hook points, batched: a grid is a few forward passes, not hundreds.

    pm = load_pretrained("smollm2", dtype="float32")
    clean = pm.to_tokens(" When Mary and John went to the store, John gave a drink to")
    corrupted = pm.to_tokens(" When Mary and John went to the store, Mary gave a drink to")
    metric = LogitDiff.from_text(pm, " Mary", " John")         # at the last position
    res = patch_resid_pre(pm, clean, corrupted, metric)         # grid (layer, position)
    res.recovered                                               # (patched - corrupted) / (clean - corrupted)

- :mod:`~attnlab.patching.grids`: ``patch_resid_pre``, ``patch_attn_out``, ``patch_mlp_out`` (layer x
  position), ``patch_heads`` (z, q, k, v, attn_scores, pattern; per head, or per head and position: a
  query row for the scores and the pattern; k and v per key/value head) returning a :class:`PatchingResult`
- :mod:`~attnlab.patching.runner`: ``patch`` for any set of :class:`Site` per run, and how runs are batched
- :mod:`~attnlab.patching.metrics`: ``LogitDiff``, ``recovered_fraction``
- :mod:`~attnlab.patching.components`: ``stack_head_results`` (z_h W_O,h per head), ``decompose_resid``

Speed (benchmarks/bench_patching.py): the 31 x 15 residual grid above on SmolLM2-135M, float32, takes
about 10 s on one CPU thread, against about 60 s for one whole pass per cell. On a loaded machine a
second torch thread can make it several times slower (``torch.set_num_threads(1)``).
"""

from attnlab.patching.components import Components, decompose_resid, stack_head_results
from attnlab.patching.grids import (HEAD_POINTS, PatchingResult, patch_attn_out, patch_heads, patch_mlp_out,
                                    patch_resid_pre)
from attnlab.patching.metrics import LogitDiff, Metric, recovered_fraction
from attnlab.patching.runner import Baseline, PatchedValues, baseline, patch, patched_values
from attnlab.patching.sites import Site

__all__ = ["Baseline", "Components", "HEAD_POINTS", "LogitDiff", "Metric", "PatchedValues", "PatchingResult", "Site",
           "baseline", "decompose_resid", "patch", "patch_attn_out", "patch_heads", "patch_mlp_out", "patch_resid_pre",
           "patched_values", "recovered_fraction", "stack_head_results"]
