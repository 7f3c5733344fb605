"""Every patching grid against a loop of single unbatched passes, cell by cell, on small random attnlab
stacks (float64): a Llama-style one (RoPE, grouped-query attention: 2 key/value heads for 6 query heads)
and a GPT-2-style one (learned positions, nonzero biases). One site per single pass, the whole stack run
with the clean value written there; the batched cell must agree within FLOAT64_LONG (1e-10, a whole
model's chain of float64 rounding)."""

from __future__ import annotations

import pytest
import torch

from attnlab.nn import Encoder
from attnlab.patching import (LogitDiff, PatchingResult, Site, patch_attn_out, patch_heads, patch_mlp_out,
                              patch_resid_pre)
from small_stacks import H, H_KV, L, N, STACKS, V, llama, single_pass
from tolerances import FLOAT64_LONG

CORRUPTED_AT = 2  # the one position where the prompts differ
METRIC = LogitDiff(3, 11)

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module", params=["llama", "gpt2"])
def stack(request):
    m = STACKS[request.param]()
    clean = torch.randint(0, V, (1, N), generator=torch.Generator().manual_seed(3))
    corrupted = clean.clone()
    corrupted[0, CORRUPTED_AT] = (clean[0, CORRUPTED_AT] + 5) % V
    return m, clean, corrupted


def _every_cell_equals_a_single_pass(model: Encoder, clean, corrupted, res: PatchingResult) -> None:
    """Each cell of the grid against its own single pass (the grid's dims say which site a cell is)."""
    with torch.no_grad():
        _, cache = model.run_with_cache(clean)
    worst = 0.0
    for idx in torch.cartesian_prod(*(torch.arange(s) for s in res.grid.shape)).reshape(-1, res.grid.ndim).tolist():
        at = dict(zip(res.dims, idx))
        site = Site(res.hook_names[at["layer"]], at.get("position"), at.get("head"))
        worst = max(worst, abs(res.grid[tuple(idx)].item() - single_pass(model, cache, corrupted, METRIC, site)))
    assert worst <= FLOAT64_LONG


@pytest.mark.parametrize("grid", [patch_resid_pre, patch_attn_out, patch_mlp_out])
def test_layer_by_position_grids_equal_a_loop(stack, grid):
    model, clean, corrupted = stack
    res = grid(model, clean, corrupted, METRIC, chunk_size=5)  # chunks that straddle layers
    assert res.grid.shape == (L, N) and res.dims == ("layer", "position") and res.grid.dtype == torch.float64
    _every_cell_equals_a_single_pass(model, clean, corrupted, res)
    # before the corrupted position both runs agree (causal): those cells are the corrupted value exactly
    assert res.grid[:, :CORRUPTED_AT].sub(res.corrupted).abs().max().item() <= FLOAT64_LONG
    assert res.recovered.abs().max().item() > 0.01  # and some cell moved the metric


def test_the_mlp_output_grid_patches_hook_mlp_out():
    model = llama()
    clean = torch.randint(0, V, (1, N), generator=torch.Generator().manual_seed(3))
    corrupted = clean.clone()
    corrupted[0, CORRUPTED_AT] = (clean[0, CORRUPTED_AT] + 5) % V
    res = patch_mlp_out(model, clean, corrupted, METRIC, layers=[2, 0])
    assert res.hook_names == ("blocks.2.hook_mlp_out", "blocks.0.hook_mlp_out") and res.grid.shape == (2, N)


@pytest.mark.parametrize("activation", ["z", "q", "k", "v", "attn_scores", "pattern"])
@pytest.mark.parametrize("by_position", [False, True])
def test_head_grids_equal_a_loop(stack, activation, by_position):
    """Per head (all positions / all query rows) and per head and position (one query row of the scores
    and the pattern); k and v per key/value head."""
    model, clean, corrupted = stack
    res = patch_heads(model, clean, corrupted, METRIC, activation=activation, by_position=by_position,
                      layers=[0, 2], chunk_size=16)
    n_heads = H_KV if activation in ("k", "v") and model.qkv_transform is not None else H
    assert res.grid.shape == ((2, n_heads, N) if by_position else (2, n_heads))
    assert res.hook_names == (f"blocks.0.attn.hook_{activation}", f"blocks.2.attn.hook_{activation}")
    _every_cell_equals_a_single_pass(model, clean, corrupted, res)
    if by_position:  # before the corrupted position both runs agree (causal): patching there changes nothing
        assert res.grid[..., :CORRUPTED_AT].sub(res.corrupted).abs().max().item() <= FLOAT64_LONG


def test_the_whole_scores_of_a_head_patch_as_its_pattern(stack):
    """softmax of the clean scores is the clean pattern: patching either for a whole head gives one value."""
    model, clean, corrupted = stack
    scores = patch_heads(model, clean, corrupted, METRIC, activation="attn_scores", layers=[1])
    pattern = patch_heads(model, clean, corrupted, METRIC, activation="pattern", layers=[1])
    assert (scores.grid - pattern.grid).abs().max().item() <= FLOAT64_LONG
    assert pattern.recovered.abs().max().item() > 1e-3
