"""capacity_search: the folded forward/backward against attention_classifier, the trainer, the search."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from attnlab.errors import ConfigError
from attnlab.papers.memorization.authors_model import authors_attention, authors_model, init_authors_model
from attnlab.papers.memorization.capacity_search import (
    SearchConfig,
    SearchResult,
    _next_candidates,
    attention_coefficients,
    authors_coefficients,
    authors_logits,
    autograd_loss_and_grads,
    folded_logits,
    loss_and_grads,
    memorized_in_float64,
    search_capacity,
    train_candidates,
)
from attnlab.papers.memorization.data import draw_nested_dataset
from attnlab.papers.memorization.model import attention_classifier, init_attention_classifier
from tolerances import FLOAT64_LONG, ROW_SUM_TOL_FLOAT64

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py: tiny matrices, a shared machine

# Relative errors within FLOAT64_LONG: the folded products reorder sums of O(10)-sized terms;
# 1e-10 relative leaves ~1e5 ulps of room, and a wrong gradient (axis mix-up, missing term) is off by O(1).
# distinct primes so an axis mix-up fails: T=11, n=5, d=7, H=3, d_h=4, d_v=2, C=13
SIZES = dict(T=11, n=5, d=7, H=3, d_h=4, d_v=2, C=13)


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).abs().max() / b.abs().max())


def _problem(M=3):
    s = SIZES
    E, e, y = draw_nested_dataset(s["T"], s["n"], s["d"], s["C"], seed=3, dtype=torch.float64)
    gen = torch.Generator().manual_seed(5)
    params = init_attention_classifier(M, s["d"], s["n"], s["H"], s["d_h"], s["C"], gen,
                                       d_v=s["d_v"], dtype=torch.float64)
    params = {k: 3.0 * v for k, v in params.items()}  # logits O(1-10): softmax far from uniform
    return params, E, e, y


def test_folded_logits_and_theta_match_attention_classifier():
    params, E, e, _ = _problem()
    logits = folded_logits(params, E, e)
    theta = attention_coefficients(params, E, e)
    assert logits.shape == (3, SIZES["T"], SIZES["C"]) and theta.shape == (3, SIZES["T"], SIZES["H"], SIZES["n"])
    assert float((theta.sum(-1) - 1).abs().max()) < ROW_SUM_TOL_FLOAT64
    for m in range(3):
        one = {k: v[m] for k, v in params.items()}
        assert _rel(logits[m], attention_classifier(one, E, e)) < FLOAT64_LONG
        # eq. (1)-(2) by hand for head 1, example 2: Softmax(E W_K W_Q^T e)
        alpha = E @ one["W_K"][1] @ one["W_Q"][1].T @ e[2]
        assert _rel(theta[m, 2, 1], torch.softmax(alpha, 0)) < FLOAT64_LONG


def test_loss_and_gradients_match_autograd_with_masks():
    params, E, e, y = _problem()
    T_m = torch.tensor([11, 6, 9])  # nested prefixes of one draw
    loss, grads, correct = loss_and_grads(params, E, e, y, T_m)
    for m, T in enumerate(T_m.tolist()):
        one = {k: v[m].clone().requires_grad_() for k, v in params.items()}
        logits = attention_classifier(one, E, e[:T])
        ref = F.cross_entropy(logits, y[:T])
        ref_grads = torch.autograd.grad(ref, list(one.values()))
        assert abs(float(loss[m]) - ref.item()) < FLOAT64_LONG * ref.item()
        for k, g in zip(one, ref_grads):
            assert _rel(grads[k][m], g) < FLOAT64_LONG, k
        assert int(correct[m]) == int((logits.argmax(-1) == y[:T]).sum())


TINY = dict(H=2, d=8, n=4, n_classes=10, max_steps=300, lr=3e-2, warmup=10, T_start=8, resolution=0.0,
            T_limit=400)


def test_train_candidates_memorizes_small_T_and_keeps_the_memorizing_weights():
    cfg = SearchConfig(**TINY)
    E, e, y = draw_nested_dataset(cfg.T_limit, cfg.n, cfg.d, cfg.n_classes, cfg.seed)
    run = train_candidates([5, 8], E, e, y, cfg)
    small, large = run.attempts
    assert large.outcome == "memorized" and large.accuracy == 1.0 and 1 <= large.steps < cfg.max_steps
    assert small.outcome in ("memorized", "superseded") and small.steps <= large.steps
    assert memorized_in_float64({k: v[1] for k, v in run.params.items()}, E, e[:8], y[:8])


def test_search_brackets_the_largest_memorized_T():
    cfg = SearchConfig(**TINY)
    res = search_capacity(cfg)
    lo, hi = res.largest_success, res.smallest_failure
    assert 8 <= lo and hi is not None and lo < hi and hi - lo == 1  # resolution 0: exact bracket
    assert res.verified_float64 is True
    # every failure is a failure within the step budget: T* is a lower bound, printed as one
    assert (res.capacity.lower, res.capacity.upper) == (lo, float("inf")) and str(res.capacity) == f">= {lo}"
    assert f"T={hi} was not memorized within the 300-step budget" in res.capacity.reason
    by_T = {a.T: a for a in res.attempts}
    assert by_T[lo].memorized and by_T[hi].outcome == "budget" and by_T[hi].steps == cfg.max_steps
    assert by_T[hi].accuracy < 1.0
    # the returned weights memorize exactly the first lo examples of the draw
    E, e, y = draw_nested_dataset(lo, cfg.n, cfg.d, cfg.n_classes, cfg.seed)
    assert memorized_in_float64(res.params, E, e, y)
    assert sum(r["seconds"] for r in res.rounds) <= res.seconds + 1e-6


def test_next_candidates():
    assert _next_candidates(100, None, 2, 2.0, 10_000) == [200, 400]  # bracketing by growth
    assert _next_candidates(100, 400, 2, 2.0, 10_000) == [200, 300]  # thirds of the bracket
    assert _next_candidates(10, 12, 2, 2.0, 10_000) == [11]
    assert _next_candidates(5000, None, 2, 2.0, 8000) == [8000]  # capped at T_limit


@pytest.mark.parametrize("bad, message", [
    (dict(H=0), "H must be an integer >= 1"),
    (dict(max_steps=10, warmup=10), "warmup (10) must be smaller than max_steps (10)"),
    (dict(lr=-1.0), "lr must be a finite number in (0, inf), got -1.0"),
    (dict(growth=1.0), "growth must be a finite number in (1, inf), got 1.0"),
    (dict(resolution=1.5), "resolution must be a finite number in [0, 1), got 1.5"),
    (dict(T_start=20_000), "T_start must be an integer in [1, 19999], got 20000"),
    (dict(device="tpu"), "unknown device 'tpu'; use cpu, cuda or cuda:N"),
    (dict(diverged_below=2.0), "diverged_below must be a finite number in [0, 1], got 2.0"),
    (dict(dtype=torch.float16), "dtype must be one of torch.float32, torch.float64"),
    (dict(seed=-1), "seed must be an integer in [0, 4294967295]"),
    (dict(model="released"), "model must be one of plain, authors"),
    (dict(model="authors", d=7), "the authors' model needs an even d"),
    (dict(d_v=0), "d_v must be an integer >= 1"),
])
def test_bad_search_config(bad, message):
    import re

    with pytest.raises(ConfigError, match=re.escape(message)):
        SearchConfig(**bad)


def test_min_steps_outside_the_budget():
    cfg = SearchConfig(**TINY)
    E, e, y = draw_nested_dataset(8, cfg.n, cfg.d, cfg.n_classes, cfg.seed)
    with pytest.raises(ConfigError, match="min_steps must be in"):
        train_candidates([8], E, e, y, cfg, min_steps=301)


def test_a_diverged_attempt_is_retried_at_half_the_rate():
    # lr 30: Adam leaves the basin; the search retries T_start at 15 before counting a failure
    cfg = SearchConfig(H=2, d=8, n=4, n_classes=10, max_steps=40, lr=30.0, warmup=1, T_start=6,
                       resolution=0.0, T_limit=50)
    res = search_capacity(cfg)
    first, retry = res.attempts[:2]
    assert (first.T, first.outcome, first.lr) == (6, "diverged", 30.0) and first.accuracy < 0.5
    assert (retry.T, retry.outcome, retry.lr) == (6, "budget", 15.0)
    assert res.rounds[1]["lr"] == 15.0
    assert res.largest_success < res.smallest_failure <= 6
    assert all(a.outcome != "diverged" or a.lr == 30.0 for a in res.attempts)


def _authors_problem(M=2, keys="context"):
    s = SIZES
    d = 8  # the authors' model needs an even d (sinusoidal positions)
    E, e, y = draw_nested_dataset(s["T"], s["n"], d, s["C"], seed=3, dtype=torch.float64)
    gen = torch.Generator().manual_seed(5)
    params = init_authors_model(M, d, d, s["n"], s["H"], s["d_h"], s["C"], gen, d_v=1, dtype=torch.float64)
    return {k: 3.0 * v for k, v in params.items()}, E, e, y


@pytest.mark.parametrize("keys", ["context", "all"])
def test_authors_logits_theta_and_gradients_match_one_model_at_a_time(keys):
    params, E, e, y = _authors_problem(keys=keys)
    logits = authors_logits(params, E, e, keys)
    theta = authors_coefficients(params, E, e, keys)
    n_keys = SIZES["n"] + (keys == "all")
    assert logits.shape == (2, SIZES["T"], SIZES["C"]) and theta.shape == (2, SIZES["T"], SIZES["H"], n_keys)
    assert float((theta.sum(-1) - 1).abs().max()) < ROW_SUM_TOL_FLOAT64
    T_m = torch.tensor([11, 6])
    loss, grads, correct = autograd_loss_and_grads(params, E, e, y, T_m, keys)
    for m, T in enumerate(T_m.tolist()):
        one = {k: v[m].clone().requires_grad_() for k, v in params.items()}
        out = authors_model(one, E, e[:T], keys=keys)
        assert _rel(logits[m, :T], out.detach()) < FLOAT64_LONG
        assert _rel(theta[m, :T], authors_attention(one, E, e[:T], keys=keys).detach()) < FLOAT64_LONG
        ref = F.cross_entropy(out, y[:T])
        assert abs(float(loss[m]) - ref.item()) < FLOAT64_LONG * ref.item()
        for k, g in zip(one, torch.autograd.grad(ref, list(one.values()))):
            assert _rel(grads[k][m], g) < FLOAT64_LONG, k
        assert int(correct[m]) == int((out.argmax(-1) == y[:T]).sum())


def test_the_released_authors_model_trains_in_the_search():
    cfg = SearchConfig(**{**TINY, "d": 8}, model="authors", d_v=1, keys="context")
    assert (cfg.model, cfg.d_v, cfg.keys) == ("authors", 1, "context")
    E, e, y = draw_nested_dataset(cfg.T_limit, cfg.n, cfg.d, cfg.n_classes, cfg.seed)
    run = train_candidates([8], E, e, y, cfg)
    (a,) = run.attempts
    assert a.outcome == "memorized" and a.accuracy == 1.0
    assert run.params["W_V"].shape == (1, 2, 8, 1) and run.params["W_O"].shape == (1, 2, 8)  # d_v = 1 per head
    assert memorized_in_float64({k: v[0] for k, v in run.params.items()}, E, e[:8], y[:8], model="authors",
                                keys="context")


def test_capacity_without_any_failure_is_still_a_lower_bound():
    cfg = SearchConfig(**TINY)
    res = SearchResult(cfg, 400, None)
    assert res.capacity.lower == 400 and res.capacity.upper == float("inf")
    assert "no T up to T_limit=400 failed" in res.capacity.reason
