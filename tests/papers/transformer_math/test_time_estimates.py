"""The transformer-math estimates count time, and their work grows as their formulas say.

Quick preset, measured in one process right after attnlab.estimates.rates() (2 shared cores):

    experiment                              measured s   estimated s
    transformer-math.softmax-saturation           0.44          0.44  (paper preset: 207 s measured, 193-207 s estimated)
    transformer-math.dot-product-scaling           0.91          0.97  (paper preset: 214.6 s measured, 225 s estimated)
    transformer-math.scaling (d_head 64)          18.2          24.6   (step budget: an upper bound)

No timing is asserted here: only that time is counted and how the counted work scales.
"""

import pytest

from attnlab.registry import get_experiment

CASES = [  # experiment, field, its doubled value, kind of work that must double
    ("transformer-math.softmax-saturation", "n_samples", 512, None),  # the control run's draws stay 256
    ("transformer-math.softmax-saturation", "n_scales", 52, "traffic"),
    ("transformer-math.dot-product-scaling", "n_samples_softmax", 384, None),
    ("transformer-math.scaling", "batch", 128, None),
]


@pytest.mark.parametrize("experiment, field, doubled, kind", CASES)
def test_counts_time(experiment, field, doubled, kind):
    assert get_experiment(experiment).config_cls().estimate().seconds > 0


@pytest.mark.parametrize("experiment, field, doubled, kind", CASES)
def test_work_grows_as_the_formula_says(experiment, field, doubled, kind):
    cls = get_experiment(experiment).config_cls
    assert getattr(cls(), field) * 2 == doubled
    one, two = cls().estimate(), cls(**{field: doubled}).estimate()
    if kind is not None:
        assert getattr(two, kind) / getattr(one, kind) == pytest.approx(2.0, rel=0.05)
    assert two.seconds > one.seconds


def test_scaling_steps_double_the_work():
    cls = get_experiment("transformer-math.scaling").config_cls
    one, two = cls().estimate(), cls(steps=800).estimate()
    for kind in ("gemm", "traffic", "calls"):  # the held-out evaluations double with the steps too
        assert getattr(two, kind) / getattr(one, kind) == pytest.approx(2.0, rel=0.05)


def test_dot_product_gemm_as_the_formula_says():
    # gemm = 2 sum_d (N d + 2 S K d) for the main run plus the same for the control run (N_c = min(4000, N),
    # S_c = min(192, S)): doubling S moves it by (N + 4 S K + G) / (N + 2 S K + G), G = N_c + 2 S_c K
    cls = get_experiment("transformer-math.dot-product-scaling").config_cls
    c = cls()
    N, S, K = c.n_samples_variance, c.n_samples_softmax, c.n_keys
    G = min(c.control_samples_variance, N) + 2 * min(c.control_samples_softmax, S) * K
    ratio = cls(n_samples_softmax=2 * S).estimate().gemm / c.estimate().gemm
    assert ratio == pytest.approx((N + 4 * S * K + G) / (N + 2 * S * K + G), rel=1e-9)


def test_saturation_counts_the_control_run():
    # calls TORCH_OP ROW_OPS (n_samples + min(control_samples, n_samples)) S |n_values|: the control's 256 draws
    cls = get_experiment("transformer-math.softmax-saturation").config_cls
    one, two = cls().estimate(), cls(n_samples=512).estimate()
    assert two.calls / one.calls == pytest.approx((512 + 256) / (256 + 256), rel=1e-9)
