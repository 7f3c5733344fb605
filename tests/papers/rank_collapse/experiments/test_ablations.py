"""rank-collapse.ablations at a tiny config: the collapse, the repairs, the three residuals."""

import pytest

from attnlab.errors import ConfigError
from attnlab.papers.rank_collapse.experiments.ablations import EXPERIMENT_ID, AblationsConfig, run
from attnlab.registry import get_experiment

TINY = dict(texts=2, tokens=12, models=("pretrained", "random"), composite_texts=1, composite_tokens=4,
            composite_models=("pretrained",), composite_variants=("SAN",))


def test_registered():
    assert get_experiment(EXPERIMENT_ID).config_cls is AblationsConfig


@pytest.mark.slow
def test_ablations_tiny(storable):
    res = run(AblationsConfig(**TINY))
    storable(res)
    C = res.data["curves"]
    for m in ("pretrained", "random"):
        san, skip, full = (C[m][v]["mean"]["mean"] for v in ("SAN", "SAN+skip", "transformer"))
        assert len(san) == 7
        assert san[0] == pytest.approx(skip[0], abs=1e-12)  # same embedding output
        assert san[-1] < 1e-8 < 0.1 < skip[-1] and full[-1] > 0.1  # pure attention collapses, skips do not
        assert all(a <= b for a, b in zip(san[2:], skip[2:]))  # the SAN decays faster than with skips
    assert C["random"]["SAN"]["mean"]["mean"][1] < 0.1  # one near-uniform layer already averages
    comp = res.data["composite"]["pretrained"]["SAN"]
    assert all(c <= m + 1e-8 for c, m in zip(comp["composite"], comp["mean"]))  # exact argmin <= row mean
    assert res.data["composite_minus_mean"] <= 1e-8
    assert res.check("max over networks of the SAN+MLP").status == "pass"
    assert {f.file for f in res.figures} >= {"ablation-pretrained-mean.png", "ablation-random-svd.png",
                                             "ablation-three-residuals.png"}
    assert all("residual" in f.caption for f in res.figures)
    again = run(AblationsConfig(**TINY))
    assert again.data["curves"] == C  # deterministic


def test_presets_fill_the_config():
    assert AblationsConfig().tokens == 32 and AblationsConfig(scale="paper").texts == 32


@pytest.mark.parametrize("changes, message", [
    (dict(tokens=2), "tokens must be an integer in"),
    (dict(models=("bert",)), "models must list some of"),
    (dict(models=("random",), composite_models=("pretrained",)), "composite_models .* are not in models"),
    (dict(composite_variants=("SAN+attention",)), "composite_variants must list"),
    (dict(texts=2, composite_texts=3), "composite_texts must be"),
])
def test_config_errors(changes, message):
    with pytest.raises(ConfigError, match=message):
        AblationsConfig(**changes)
