"""Sweep specs: value parsing by annotation, grid expansion, validation, run ids."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Literal

import pytest

from attnlab.errors import ConfigError
from attnlab.registry import get_experiment
from attnlab.sweeps import SweepSpec, expand, run_id
from attnlab.sweeps.spec import coerce, field_types, format_value

SELFTEST = "transformer-math.sweep-selftest"


@pytest.mark.parametrize("text, tp, expected", [
    ("3", int, 3), (" -7 ", int, -7), ("0.5", float, 0.5), ("1e-3", float, 1e-3), ("4", float, 4.0),
    ("true", bool, True), ("False", bool, False), ("1", bool, True), ("0", bool, False), ("YES", bool, True),
    ("abc", str, "abc"), ("3;11;64", tuple[int, ...], (3, 11, 64)), ("", tuple[int, ...], ()),
    ("7", tuple[int, ...], (7,)), ("none", tuple[int, ...] | None, None), ("2;3", tuple[int, ...] | None, (2, 3)),
    ("1.5;x", tuple[float, str], (1.5, "x")), ("0.5;0.25", list[float], [0.5, 0.25]),
    ("paper", Literal["quick", "paper"], "paper"), ("null", int | None, None), ("5", int | None, 5),
])
def test_text_is_converted_by_annotation(text, tp, expected):
    got = coerce(text, tp)
    assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize("text, tp", [
    ("1.5", int), ("abc", int), ("x", float), ("maybe", bool), ("2", bool), ("1;a", tuple[int, ...]),
    ("1;2;3", tuple[int, int]), ("huge", Literal["quick", "paper"]), ("abc", int | None),
])
def test_text_that_does_not_fit_raises(text, tp):
    with pytest.raises(ValueError):
        coerce(text, tp)


def test_python_values_are_checked_too():
    assert coerce(2, float) == 2.0 and type(coerce(2, float)) is float
    assert coerce([3, 4], tuple[int, ...]) == (3, 4)
    for value, tp in ((True, int), (1.5, int), ("x", bool), (3, str), (1, bool)):
        with pytest.raises(ValueError):
            coerce(value, tp)


def test_format_value_writes_sequences_in_set_syntax():
    assert format_value((3, 11, 64)) == "3;11;64"
    assert coerce(format_value((3, 11, 64)), tuple[int, ...]) == (3, 11, 64)  # round trip
    assert format_value(float("inf")) == "inf" and format_value(2.5) == 2.5


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


def test_field_types_resolve_string_annotations():
    types_ = field_types(get_experiment(SELFTEST).config_cls)
    assert types_["x"] is float and types_["n"] is int and types_["fail"] is bool and types_["scale"] is str


@pytest.mark.parametrize("kwargs, needles", [
    (dict(base={"bogus": "1"}), ["--set bogus", "no config field 'bogus'", "fields: scale, x, n, fail, sleep"]),
    (dict(grid={"n": ["3", "abc"]}), ["--grid n=abc", "expected an integer", "(int)"]),
    (dict(grid={"n": ["3", "0"]}), ["n=0", "n must be an integer >= 1"]),
    (dict(base={"sleep": "-1"}), ["sleep=-1.0", "sleep must be a number of seconds"]),
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
    (dict(seed0=-1), "--seed must be a non-negative integer"),
    (dict(grid={"n": []}), "--grid n needs a non-empty list"),
    (dict(grid={"n": "3"}), "--grid n needs a non-empty list"),
    (dict(base={"n": "3"}, grid={"n": ["5"]}), "n given in both --set and --grid"),
])
def test_bad_specs_are_config_errors(kwargs, needle):
    with pytest.raises(ConfigError, match=needle):
        SweepSpec(SELFTEST, **kwargs)
