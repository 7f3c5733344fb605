"""The checkpoint sizes estimates count, against a loaded checkpoint (SmolLM2's: test_llama.py)."""

import pytest

from attnlab.pretrained import load_pretrained
from attnlab.pretrained.sizes import MINILM, ModelSize


def test_minilm_sizes_are_the_loaded_checkpoints():
    pm = load_pretrained("minilm", dtype="float32")
    assert ModelSize.of(pm.architecture) == MINILM
    loaded = sum(p.numel() for p in pm.model.parameters())  # 22,565,376
    # the counted matrices: 30522 x 384 tokens + 6 x (4 x 384^2 + 2 x 384 x 1536)
    assert MINILM.parameters == 22_337_280
    # what is left out: 512 positions + 2 token types (x 384), per block the biases b_Q, b_K, b_V, b_O, b_1, b_2
    # (4 x 384 + 1536 + 384), and 13 LayerNorms' gain and shift (2 x 384): 228,096 entries, 1.0% of the model
    assert loaded - MINILM.parameters == 514 * 384 + 6 * (5 * 384 + 1536) + 13 * 2 * 384


def test_block_flops_count_the_matrices_and_the_two_attention_products():
    # n = 10 tokens: 2 n per matrix entry, plus 4 n^2 H d_h for Q K^T and P V
    assert MINILM.block_flops(10) == pytest.approx(2 * 10 * 1_769_472 + 4 * 100 * 12 * 32, rel=0)
