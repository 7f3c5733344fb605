"""The seven attentions of rank-collapse.masks-variants in a network's blocks, and Wu et al.'s residual."""

import math

import pytest
import torch

from attnlab.nn.block import BlockParts
from attnlab.papers.rank_collapse.attention_variants import (forward, frobenius_residual, softmax_variant, variants,
                                                             window_mask)
from attnlab.papers.rank_collapse.stacks import VARIANTS, build_model, long_texts, run_model, text_batch
from tolerances import FLOAT64


def test_forward_with_softmax_is_the_model():
    batch = text_batch(long_texts(1, 12, 0), 12)
    model = build_model("pretrained", 0)
    for full, parts in ((True, BlockParts()), (False, VARIANTS["SAN"])):
        mine = forward(model, batch.X0, softmax_variant, full)
        ref = run_model("pretrained", model, batch, parts).hidden_states
        assert max(float((a - b).abs().max()) for a, b in zip(mine, ref)) <= FLOAT64


def test_window_mask_by_hand():
    m = window_mask(5, 2, causal=False)  # |i - j| <= 1
    assert m.tolist()[2] == [False, True, True, True, False]
    c = window_mask(5, 2, causal=True)  # 0 <= i - j <= 1
    assert c.tolist()[2] == [False, True, True, False, False] and bool(torch.equal(c, c.tril()))


def test_variants_are_named_and_each_maps_equal_rows_to_equal_rows():
    n, d = 6, 4
    g = torch.Generator().manual_seed(0)
    fns = variants(2, 8, 3, n, g, "cpu").named()
    assert list(fns) == ["softmax", "causal", "window w=2", "causal window w=2", "linear elu+1", "FAVOR+ m=8",
                         "Linformer k'=3"]
    q, k = (torch.randn(1, n, d, generator=g, dtype=torch.float64) for _ in range(2))
    v = torch.ones(1, n, d, dtype=torch.float64)  # equal rows: any row-stochastic average keeps them
    for name, fn in fns.items():
        out = fn(q, k, v).output
        assert out.shape == (1, n, d)
        if not name.startswith("Linformer"):  # F V mixes the rows by a Gaussian projection: not an average
            assert torch.allclose(out, v, atol=1e-10), name


def test_frobenius_residual_by_hand():
    X = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)  # X - 1 mean^T = [[.5, -.5], [-.5, .5]]
    assert frobenius_residual(X).item() == pytest.approx(1.0 / math.sqrt(2), rel=FLOAT64)
    assert frobenius_residual(torch.ones(3, 2, dtype=torch.float64)).item() == 0.0
