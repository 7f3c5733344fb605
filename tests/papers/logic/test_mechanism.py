"""Structure fractions modulo the gauge, path ablations and the centred fit of Fig. 1."""

import dataclasses

import numpy as np
import pytest
import torch

from attnlab.papers.logic import mechanism as mech
from attnlab.papers.logic.encoding import all_sequences, targets
from attnlab.papers.logic.model import hand_built_params, hidden_width, predict
from attnlab.papers.logic.solutions import build
from tolerances import FLOAT64, FLOAT64_LONG

N, M = 3, 5


def _fractions(solution, q_true):
    w = build(solution, q_true, M)
    B = np.zeros((hidden_width(N, M), N + M))
    B[: (w.B.shape[0] if w.B is not None else N + M)] = w.B if w.B is not None else np.eye(N + M)
    return mech.structure_fractions(w.k.T @ w.q, w.v, B, N, M)


@pytest.mark.parametrize("solution, own", [
    ("1", lambda f: {"A_PP": f.A_PP, "A_D": f.A_D, "v_CC": f.v_CC, "v_I": f.v_I}),
    ("2", lambda f: {"A_CC": f.A_CC, "v_PP": f.v_PP, "v_S": f.v_S, "B_diag": f.B_diag}),
    ("3", lambda f: {"A_PP": f.A_PP, "A_D": f.A_D, "v_CC": f.v_CC, "B_diag": f.B_diag}),
])
def test_hand_built_solutions_have_fraction_one_in_their_structures(solution, own):
    q_true = np.random.default_rng(0).standard_normal((N, N))
    fr = _fractions(solution, q_true)
    for k, x in own(fr).items():
        assert abs(x - 1) <= FLOAT64_LONG, (k, x)
    other = fr.A_CC if solution != "2" else fr.A_D
    assert other <= 0.1


def test_stored_fractions_are_named_by_structure():
    fr = _fractions("1", np.random.default_rng(0).standard_normal((N, N)))
    names = [f"{which}: {s.name}" for which, ss in mech.structures(N, M).items() for s in ss]
    assert list(fr.to_dict()) == names + ["B: diagonal (sol. 2, 3: no B)"]
    assert list(fr.to_dict().values()) == list(dataclasses.astuple(fr))


def test_fractions_are_gauge_invariant():
    rng = np.random.default_rng(1)
    d = N + M
    A, v, B = rng.standard_normal((d, d)), rng.standard_normal((d, d)), rng.standard_normal((hidden_width(N, M), d))
    g = np.concatenate([np.ones(N), -np.ones(M)])
    A2 = A + np.outer(g, rng.standard_normal(d)) + np.outer(rng.standard_normal(d), g)
    v2 = v + np.outer(rng.standard_normal(d), g) + np.outer(np.ones(d), rng.standard_normal(d))
    f1, f2 = mech.structure_fractions(A, v, B, N, M), mech.structure_fractions(A2, v2, B, N, M)
    assert max(abs(x1 - x2) for x1, x2 in zip(dataclasses.astuple(f1), dataclasses.astuple(f2))) <= FLOAT64_LONG


def test_path_ablation_keeps_solution_2_and_kills_it_on_the_other_path():
    q_true = np.random.default_rng(2).standard_normal((N, N))
    p = hand_built_params(build("2", q_true, M))
    tok = torch.as_tensor(all_sequences(N, M))
    Y = torch.as_tensor(targets(all_sequences(N, M), q_true))
    A, v = (p["k"].T @ p["q"]).numpy(), p["v"].numpy()
    for path, expect_exact in (("2", True), ("13", False)):
        Za, Zv = mech.path_weights(A, v, N, M, path, layernorm=False)
        e = dict(p, q=torch.as_tensor(Za), k=torch.eye(N + M, dtype=torch.float64), v=torch.as_tensor(Zv))
        r2 = mech.r2(predict(e, tok, N, norm="none"), Y)
        assert (abs(r2 - 1) <= FLOAT64) if expect_exact else (r2 < 0.5)


def test_centred_fit_ignores_row_and_column_effects():
    rng = np.random.default_rng(3)
    q = rng.standard_normal((4, 4))
    A = -2.5 * q + rng.standard_normal(4)[:, None] + rng.standard_normal(4)[None, :]
    corr, scale = mech.centred_fit(A, q)
    assert abs(corr + 1) <= FLOAT64 and abs(scale + 2.5) <= FLOAT64


def test_ablated_predict_full_is_the_model_and_ablations_act_where_they_should():
    """On the hand-built solutions (no normalisation): the full variant is the model; position-only logits keep
    solution 3 exact (its logits are the positions' D_-1) and break solution 2 (its logits are q_true of the
    categories); zeroing or mean-ablating the attention breaks both; a linear feed-forward breaks both."""
    q_true = np.random.default_rng(4).standard_normal((N, N))
    tok = torch.as_tensor(all_sequences(N, M))
    Y = torch.as_tensor(targets(all_sequences(N, M), q_true))
    for s in ("2", "3"):
        p = hand_built_params(build(s, q_true, M))
        assert torch.allclose(mech.ablated_predict(p, tok, N, "full", norm="none"), predict(p, tok, N, norm="none"),
                              atol=FLOAT64, rtol=0)
        rel = {k: mech.relative_mse(mech.ablated_predict(p, tok, N, k, norm="none"), Y) for k in mech.ABLATIONS}
        assert rel["full"] <= 1e-20
        assert (rel["position-only logits"] <= 1e-20) == (s == "3")
        for k in ("attention zero", "attention mean", "linear feed-forward"):
            assert rel[k] > 0.1, (s, k, rel[k])
    with pytest.raises(ValueError, match="variant must be one of"):
        mech.ablated_predict(p, tok, N, "nothing")


def test_layernorm_frozen_is_the_model_when_every_scale_is_equal_and_differs_otherwise():
    from attnlab.papers.logic.model import init_params
    p = init_params(N, M, torch.Generator().manual_seed(0))
    tok = torch.as_tensor(all_sequences(N, M)[:50])
    full = mech.ablated_predict(p, tok, N, "full")
    assert torch.allclose(full, predict(p, tok, N), atol=FLOAT64, rtol=0)
    assert float((mech.ablated_predict(p, tok, N, "LayerNorm scale frozen") - full).abs().max()) > 1e-6
    one = tok[:1].expand(7, M)  # one sequence repeated: the batch mean of each scale is the scale itself
    assert torch.allclose(mech.ablated_predict(p, one, N, "LayerNorm scale frozen"), predict(p, one, N),
                          atol=FLOAT64, rtol=0)


def test_value_map_fit_finds_solution_3_and_solution_1():
    q_true = np.random.default_rng(5).standard_normal((N, N))
    f3 = mech.value_map_fit(build("3", q_true, M).v, q_true, N)
    f1 = mech.value_map_fit(build("1", q_true, M).v, q_true, N)
    assert f3.corr_A2t == pytest.approx(1.0, abs=FLOAT64) and f1.corr_identity == pytest.approx(1.0, abs=FLOAT64)
