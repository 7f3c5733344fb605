"""Sweep specs: grid expansion, validation, run ids (value parsing: tests/test_config.py)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import pytest

from attnlab.errors import ConfigError
from attnlab.registry import get_experiment
from attnlab.sweeps import SweepSpec, expand, run_id

SELFTEST = "selftest.sweep"


def test_expand_is_the_product_in_grid_order_with_seeds_innermost():
    exp = get_experiment(SELFTEST)
    spec = SweepSpec(SELFTEST, base={"x": "2.5"}, grid={"n": ["3", "5", "7"], "fail": ["false", "true"]},
                     seeds=2, seed0=4)
    plans = expand(exp, spec)
    assert len(plans) == 3 * 2 * 2
    got = [(p.config.n, p.config.fail, p.seed) for p in plans]
    assert got == [(n, f, s) for n in (3, 5, 7) for f in (False, True) for s in (4, 5)]
    assert all(p.config.x == 2.5 and p.config.seed == p.seed and p.config.device == "cpu" for p in plans)
    assert plans[0].point == {"n": 3, "fail": False}
    assert len({p.run_id for p in plans}) == len(plans)


def test_run_id_is_sha256_of_sorted_json_and_stable():
    exp = get_experiment(SELFTEST)
    [plan] = expand(exp, SweepSpec(SELFTEST, base={"x": "2", "n": "4"}, seed0=3))
    cfg = dataclasses.asdict(plan.config)
    text = json.dumps({"experiment": SELFTEST, "config": cfg, "seed": 3}, sort_keys=True, separators=(",", ":"))
    assert plan.run_id == hashlib.sha256(text.encode()).hexdigest()[:12]
    # the same config written differently (int for a float, Python values, other order): same id
    [same] = expand(exp, SweepSpec(SELFTEST, base={"n": 4, "x": 2}, seed0=3))
    assert same.run_id == plan.run_id
    assert run_id(SELFTEST, dict(reversed(list(cfg.items()))), 3) == plan.run_id
    # any change of config, seed or experiment changes it
    assert run_id(SELFTEST, {**cfg, "x": 2.0000001}, 3) != plan.run_id
    assert run_id(SELFTEST, cfg, 4) != plan.run_id
    assert run_id("transformer-math.other", cfg, 3) != plan.run_id


@pytest.mark.parametrize("kwargs, needles", [
    (dict(base={"bogus": "1"}), ["--set bogus", "no config field 'bogus'", "fields: scale, x, n, fail, sleep"]),
    (dict(grid={"n": ["3", "abc"]}), ["--grid n=abc: expected an integer for n"]),
    (dict(grid={"n": ["3", "0"]}), ["n=0", "n must be an integer >= 1"]),
    (dict(base={"sleep": "-1"}), ["sleep=-1.0", "sleep must be a finite number in [0, 60]"]),
    (dict(base={"fail": "perhaps"}), ["--set fail=perhaps", "true or false"]),
    (dict(base={"seed": "3"}), ["seed is set by --seed/--seeds"]),
    (dict(grid={"device": ["cpu"]}), ["device is set by --device"]),
    (dict(grid={"n": ["3", "3"]}), ["same config", "remove the repeated value"]),
])
def test_bad_keys_and_values_name_the_key(kwargs, needles):
    with pytest.raises(ConfigError) as e:
        expand(get_experiment(SELFTEST), SweepSpec(SELFTEST, **kwargs))
    for needle in needles:
        assert needle in str(e.value)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("kwargs, needle", [
    (dict(seeds=0), "--seeds must be an integer >= 1"),
    (dict(seed0=-1), "--seed must be an integer in \\[0, 4294967295\\]"),
    (dict(grid={"n": []}), "--grid n needs a non-empty list"),
    (dict(grid={"n": "3"}), "--grid n needs a non-empty list"),
    (dict(base={"n": "3"}, grid={"n": ["5"]}), "n given in both --set and --grid"),
])
def test_bad_specs_are_config_errors(kwargs, needle):
    with pytest.raises(ConfigError, match=needle):
        SweepSpec(SELFTEST, **kwargs)
