"""train_batched (training/batched.py): M models trained together == each trained alone.

The reference trains one model at a time with autograd and torch.optim.Adam/AdamW,
drawing its minibatches as documented: torch.randperm(N, generator=G_m) per epoch,
consecutive slices, last incomplete slice dropped. Tolerances (tests/tolerances.py):
float64 1e-12, float32 1e-5.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.func import stack_module_state

from tolerances import FLOAT64, assert_close

from attnlab.errors import ConfigError
from attnlab.training import WarmupCosine, module_loss, train_batched
from attnlab.papers.memorization.losses import classifier_loss, classifier_metrics
from attnlab.papers.memorization.model import init_attention_classifier

# distinct primes: models, d, n, heads, d_h, classes; N = 22 examples, batch 5 (4 per epoch,
# 2 dropped) so 11 steps cross two epoch boundaries
M, d, n, H, d_h, C, N, B, STEPS = 3, 7, 5, 2, 3, 11, 22, 5, 11
SCHED = WarmupCosine(base_lr=0.02, warmup_steps=3, total_steps=STEPS, min_lr=0.002)
SEEDS = [11, 12, 13]


def _setup(dtype, shared: bool = False):
    gen = torch.Generator().manual_seed(7)
    params = init_attention_classifier(M, d, n, H, d_h, C, gen, dtype=dtype)
    lead = () if shared else (M,)
    E = torch.rand(*lead, N, n, d, generator=gen, dtype=dtype)
    e = torch.rand(*lead, N, d, generator=gen, dtype=dtype)
    y = torch.randint(0, C, (*lead, N), generator=gen)
    return params, (E, e, y)


def _alone(params, data, m, steps, *, shared=False, context=None, torch_cls=torch.optim.Adam,
           **opt_kw):
    """Model m trained by itself: autograd + torch.optim, its own generator.

    context: (M, n, d) one shared context E per model (then data = (e, y))."""
    theta = {k: p[m].clone().requires_grad_(True) for k, p in params.items()}
    opt = torch_cls(theta.values(), lr=SCHED(0), **opt_kw)
    if context is not None:
        e, y = (x[m] for x in data)
    else:
        E, e, y = data if shared else (x[m] for x in data)
    g = torch.Generator().manual_seed(SEEDS[m])
    per_epoch, perm = N // B, None
    for s in range(steps):
        if s % per_epoch == 0:
            perm = torch.randperm(N, generator=g)
        idx = perm[(s % per_epoch) * B : (s % per_epoch + 1) * B]
        opt.param_groups[0]["lr"] = SCHED(s)
        opt.zero_grad()
        E_batch = context[m] if context is not None else E[idx]
        classifier_loss(theta, E_batch, e[idx], y[idx]).backward()
        opt.step()
    return {k: p.detach() for k, p in theta.items()}


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("shared", [False, True])
def test_batched_equals_each_model_alone(dtype, shared):
    params, data = _setup(dtype, shared)
    result = train_batched(classifier_loss, params, data, seeds=SEEDS, shared_data=shared,
                           steps=STEPS, batch_size=B, lr=SCHED, eval_every=4)
    for m in range(M):
        alone = _alone(params, data, m, STEPS, shared=shared)
        for k in params:
            assert_close(result.params[k][m], alone[k])  # float64 1e-12 / float32 1e-5
    assert result.eval_steps == [4, 8, 11]
    assert result.history["loss"].shape == (3, M)
    assert not result.stopped.any() and result.steps_to_stop.tolist() == [-1] * M


def test_model_data_shared_context_equals_each_model_alone():
    """The memorization paper's setting: one context E per data set (model_data)."""
    params, (E, e, y) = _setup(torch.float64)
    context = E[:, 0]  # (M, n, d)
    result = train_batched(classifier_loss, params, (e, y), seeds=SEEDS, model_data=(context,),
                           steps=STEPS, batch_size=B, lr=SCHED, metrics_fn=classifier_metrics)
    for m in range(M):
        alone = _alone(params, (e, y), m, STEPS, context=context)
        for k in params:
            assert_close(result.params[k][m], alone[k])
    with pytest.raises(ConfigError, match="model_data"):
        train_batched(classifier_loss, params, (e, y), model_data=(context[:2],), steps=2)


def test_adamw_equals_torch_adamw():
    params, data = _setup(torch.float64)
    result = train_batched(classifier_loss, params, data, seeds=SEEDS, steps=6, batch_size=B,
                           optimizer="adamw", lr=SCHED, weight_decay=0.05)
    for m in range(M):
        alone = _alone(params, data, m, 6, torch_cls=torch.optim.AdamW, weight_decay=0.05)
        for k in params:
            assert_close(result.params[k][m], alone[k])


def test_early_stopped_model_freezes_while_others_go_on():
    params, data = _setup(torch.float64)
    # model 1 meets its rule at the first evaluation (after 4 updates), the others never
    threshold = torch.tensor([-1.0, float("inf"), -1.0], dtype=torch.float64)
    result = train_batched(classifier_loss, params, data, seeds=SEEDS, steps=STEPS,
                           batch_size=B, lr=SCHED, eval_every=4, metrics_fn=classifier_metrics,
                           stop_when=lambda mt: mt["loss"] <= threshold)
    assert result.steps_to_stop.tolist() == [-1, 4, -1]
    assert result.stopped.tolist() == [False, True, False]
    for m, steps in [(0, STEPS), (1, 4), (2, STEPS)]:
        alone = _alone(params, data, m, steps)
        for k in params:
            assert_close(result.params[k][m], alone[k])
    # the stopped model's metrics stay put; the others' loss keeps changing
    hist = result.history["loss"]
    assert torch.equal(hist[0, 1], hist[-1, 1])
    assert (hist[0, [0, 2]] - hist[-1, [0, 2]]).abs().min() > 1e-3
    assert set(result.history) == {"loss", "accuracy"}
    # history["loss"] is the full-data loss of the returned parameters
    final = classifier_loss({k: p[0] for k, p in result.params.items()}, *(x[0] for x in data))
    assert hist[-1, 0].item() == pytest.approx(final.item(), rel=FLOAT64)


def test_all_models_stopped_ends_training():
    params, data = _setup(torch.float64)
    result = train_batched(classifier_loss, params, data, seeds=SEEDS, steps=STEPS,
                           batch_size=B, eval_every=2,
                           stop_when=lambda mt: torch.ones_like(mt["loss"], dtype=torch.bool))
    assert result.eval_steps == [2] and result.steps_to_stop.tolist() == [2, 2, 2]


def test_module_loss_full_batch_matches_torch():
    gen = torch.Generator().manual_seed(2)
    modules = [torch.nn.Linear(5, 3).double() for _ in range(M)]
    for mod in modules:
        for p in mod.parameters():
            p.data = torch.randn(p.shape, generator=gen, dtype=torch.float64)
    stacked, _ = stack_module_state(modules)
    x = torch.randn(M, 13, 5, generator=gen, dtype=torch.float64)
    y = torch.randn(M, 13, 3, generator=gen, dtype=torch.float64)
    loss_fn = module_loss(torch.nn.Linear(5, 3).double().to("meta"), F.mse_loss)
    result = train_batched(loss_fn, stacked, (x, y), steps=7, lr=0.1)  # full batch, no seeds
    for m, mod in enumerate(modules):
        opt = torch.optim.Adam(mod.parameters(), lr=0.1)
        for _ in range(7):
            opt.zero_grad()
            F.mse_loss(mod(x[m]), y[m]).backward()
            opt.step()
        for k, p in mod.named_parameters():
            assert_close(result.params[k][m], p.detach())


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        (dict(steps=5, batch_size=N + 1), "exceeds the dataset size"),
        (dict(steps=0, batch_size=B), "steps must be"),
        (dict(steps=-3, batch_size=B), "steps must be"),
        (dict(steps=5, batch_size=B, optimizer="sgd"), "optimizer must be one of adam, adamw, lbfgs, got .sgd."),
        (dict(steps=5, batch_size=0), "batch_size"),
        (dict(steps=5, batch_size=B, lr=-1.0), "lr must be"),
        (dict(steps=5, optimizer="lbfgs", lr=SCHED), "constant lr"),
        (dict(steps=5, batch_size=B, eval_every=0), "eval_every"),
        (dict(steps=5, batch_size=B, device="tpu"), "device"),
    ],
)
def test_bad_configs_raise_config_error(kwargs, fragment):
    params, data = _setup(torch.float64)
    with pytest.raises(ConfigError, match=fragment):
        train_batched(classifier_loss, params, data, seeds=SEEDS, **kwargs)


def test_bad_inputs_raise_config_error():
    params, (E, e, y) = _setup(torch.float64)
    with pytest.raises(ConfigError, match="needs seeds"):
        train_batched(classifier_loss, params, (E, e, y), steps=2, batch_size=B)
    with pytest.raises(ConfigError, match="per-model data"):
        train_batched(classifier_loss, params, (E[0], e[0], y[0]), steps=2)
    with pytest.raises(ConfigError, match="number of examples"):
        train_batched(classifier_loss, params, (E, e[:, :4], y), steps=2)
    with pytest.raises(ConfigError, match="same leading model axis"):
        train_batched(classifier_loss, {**params, "W_D": params["W_D"][:2]}, (E, e, y), steps=2)
    with pytest.raises(ConfigError, match="either cfg"):
        from attnlab.training import TrainConfig
        train_batched(classifier_loss, params, (E, e, y), TrainConfig(steps=2), steps=3)


def test_compiled_gradient_matches_eager_float32():
    params, data = _setup(torch.float32)
    kw = dict(seeds=SEEDS, steps=6, batch_size=B, lr=SCHED)
    eager = train_batched(classifier_loss, params, data, **kw)
    compiled = train_batched(classifier_loss, params, data, compile=True, **kw)
    for k in params:
        assert_close(compiled.params[k], eager.params[k])  # float32: 1e-5


def test_stop_at_full_train_accuracy():
    """The memorization experiments' rule: stop a model once it fits all its labels."""
    gen = torch.Generator().manual_seed(9)
    params = init_attention_classifier(M, d, n, H, d_h, C, gen, dtype=torch.float64)
    T = 6  # examples per model: few enough to memorize in a few dozen full-batch steps
    E = torch.rand(M, T, n, d, generator=gen, dtype=torch.float64)
    e = torch.rand(M, T, d, generator=gen, dtype=torch.float64)
    y = torch.randint(0, C, (M, T), generator=gen)
    kw = dict(steps=400, lr=0.05, eval_every=5)
    result = train_batched(classifier_loss, params, (E, e, y), metrics_fn=classifier_metrics,
                           stop_when=lambda mt: mt["accuracy"] >= 1.0, **kw)
    stops = result.steps_to_stop.tolist()
    assert result.stopped.all() and len(set(stops)) > 1, stops  # all fit, at different steps
    for m, k in enumerate(stops):
        i = result.eval_steps.index(k)
        assert result.history["accuracy"][i, m] == 1.0
        assert (result.history["accuracy"][:i, m] < 1.0).all()  # the first evaluation at 100%
        one = {name: p[m : m + 1] for name, p in params.items()}
        alone = train_batched(classifier_loss, one, (E[m : m + 1], e[m : m + 1], y[m : m + 1]),
                              **{**kw, "steps": k})
        for name in params:
            assert_close(result.params[name][m], alone.params[name][0])
