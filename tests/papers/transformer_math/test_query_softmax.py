"""§1.2.3 query by query (attnlab.papers.transformer_math.query_softmax): the per-query statistics are the
library's means taken apart, the ratio's summary, and the control distribution's moments."""

import math

import pytest
import torch

from attnlab.analysis.logit_scaling import attention_logit_sweep
from attnlab.analysis.logit_scaling import dot_product_variance as library_variance
from attnlab.errors import ConfigError
from attnlab.papers.transformer_math.query_softmax import (
    draw,
    dot_product_variance,
    query_statistics,
    ratio_summary,
    variance_relative_standard_error,
)


@pytest.mark.parametrize("d", [4, 256])
def test_gaussian_draws_are_the_librarys(d):
    """Same generator, same numbers: the per-query statistics average to attention_logit_sweep's means, and the
    variances are dot_product_variance's (so the paper-scale report's means did not move)."""
    g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    assert library_variance([d], 300, generator=g1) == dot_product_variance([d], 300, generator=g2)
    sweep = attention_logit_sweep([d], 9, 50, generator=g1)
    per = query_statistics(d, 9, 50, generator=g2)
    for k, v in per.items():
        assert v.shape == (50,) and float(v.mean()) == pytest.approx(sweep[k][0], rel=1e-12, abs=1e-15), k


def test_uniform_control_has_the_same_two_moments_and_its_own_standard_error():
    x = draw((200_000,), "uniform", generator=torch.Generator().manual_seed(0))
    assert x.abs().max() <= math.sqrt(3)
    assert float(x.mean()) == pytest.approx(0.0, abs=0.01) and float(x.var()) == pytest.approx(1.0, abs=0.01)
    assert float((x ** 4).mean()) == pytest.approx(1.8, abs=0.02)  # kurtosis 9/5, against 3 for N(0, 1)
    # relative SE of the sample variance of q.k: sqrt((2 + (kappa^2 - 3)/d) / N)
    assert variance_relative_standard_error(4, 100) == pytest.approx(math.sqrt((2 + 6 / 4) / 100))
    assert variance_relative_standard_error(4, 100, "uniform") == pytest.approx(math.sqrt((2 + 0.24 / 4) / 100))
    with pytest.raises(ConfigError, match="distribution must be one of gaussian, uniform"):
        draw((2,), "cauchy", generator=torch.Generator())


def test_ratio_summary_keeps_the_median_apart_from_the_ratio_of_means():
    # one near-tied query (a 2-way split, ||J|| = 1/2) among nine saturated ones: the mean follows the one
    raw = torch.tensor([0.6] + [1e-6] * 9, dtype=torch.float64)
    scaled = torch.full((10,), 0.05, dtype=torch.float64)
    r = ratio_summary(raw, scaled)
    assert r["ratio_of_means"] == pytest.approx((0.6 + 9e-6) / 10 / 0.05) and r["ratio_of_means"] > 1.19
    assert r["q50"] == pytest.approx(2e-5) and r["share_below_1"] == pytest.approx(0.9)
    assert r["top_tenth_share_of_raw_mean"] == pytest.approx(0.6 / (0.6 + 9e-6))
    assert r["q10"] <= r["q25"] <= r["q50"] <= r["q75"] <= r["q90"] and r["queries"] == 10


@pytest.mark.slow
def test_at_512_keys_the_mean_and_the_median_disagree():
    """Measured (d = 1024, 512 keys, 128 queries, seed 0): ratio of the mean ||J|| 1.48, but the median per-query
    ratio 0.083 and 67% of the queries with the smaller Jacobian unscaled: the mean follows the near ties."""
    s = query_statistics(1024, 512, 128, generator=torch.Generator().manual_seed(0))
    r = ratio_summary(s["jacobian_norm_raw"], s["jacobian_norm_scaled"])
    assert r["ratio_of_means"] == pytest.approx(1.48, abs=0.01) and r["q50"] == pytest.approx(0.083, abs=0.001)
    assert r["share_below_1"] == pytest.approx(86 / 128)
