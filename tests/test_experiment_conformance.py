"""Every registered experiment against the contract of ``attnlab.config.RunConfig`` and
``attnlab.registry.Experiment``, as one suite (one test per experiment and property), so a new
experiment is held to it without a test of its own restating its constants:

- its config is defined in the module of its ``run`` (and that module's EXPERIMENT_ID is its id);
- its config is a frozen RunConfig whose every field has a help text (``param``);
- its presets are "quick" and "paper", name fields only, and fill every field left ``None``;
- each preset's config survives the JSON round trip a sweep worker makes;
- a bad seed, device or field name is a ConfigError naming it;
- its estimate, where it gives one, is an Estimate that fits this machine at the quick scale;
- it is run at a tiny size by its own test module, and what it returns is storable (an
  ExperimentResult refuses, where it is built, anything results.json could not hold).

What each experiment computes is tested beside it, under tests/papers/<paper>/experiments/.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from attnlab.config import RunConfig, build_config, field_types
from attnlab.errors import ConfigError
from attnlab.estimates import Estimate
from attnlab.registry import all_experiments
from attnlab.runs.rundir import to_jsonable
from attnlab.sweeps.worker import rebuild_config

EXPERIMENTS = [e for e in all_experiments() if e.paper != "selftest"]
SCALES = ("quick", "paper")
TESTS = Path(__file__).parent  # the tests of papers/<paper>/experiments/<name>.py: TESTS/papers/<paper>/...


@pytest.fixture(params=EXPERIMENTS, ids=lambda e: e.id)
def exp(request):
    return request.param


def test_every_paper_has_experiments_here():
    assert len(EXPERIMENTS) >= 28 and {e.paper for e in EXPERIMENTS} >= {"invertibility", "logic"}


def test_config_class_is_defined_beside_run_in_the_experiments_own_module(exp):
    """What a per-experiment "registered" test would restate: the registry holds this module's config."""
    assert exp.config_cls.__module__ == exp.run.__module__, exp.id
    module = __import__(exp.run.__module__, fromlist=["EXPERIMENT_ID"])
    assert getattr(module, "EXPERIMENT_ID", exp.id) == exp.id


def test_config_is_a_frozen_run_config_with_help_on_every_field(exp):
    cls = exp.config_cls
    assert issubclass(cls, RunConfig) and cls.__dataclass_params__.frozen
    missing = [f.name for f in dataclasses.fields(cls) if not f.metadata.get("help")
               and f.name not in ("scale", "seed", "device")]
    assert not missing, f"{exp.id}: fields without help: {missing}"
    assert set(field_types(cls)) == {f.name for f in dataclasses.fields(cls)}


def test_presets_name_fields_and_fill_every_field_left_none(exp):
    """A field whose default is None is filled at both scales, set to None by the preset on
    purpose, or says in its help what None means (e.g. "None: full batch")."""
    cls = exp.config_cls
    assert set(cls.PRESETS) <= set(SCALES), exp.id
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for scale, preset in cls.PRESETS.items():
        assert set(preset) <= set(fields), f"{exp.id} {scale}: not fields: {set(preset) - set(fields)}"
    for scale in SCALES:
        cfg = cls(scale=scale)
        preset = cls.PRESETS.get(scale, {})
        unfilled = [k for k, f in fields.items() if getattr(cfg, k) is None and k not in preset
                    and "None" not in f.metadata.get("help", "")]
        assert not unfilled, f"{exp.id} at {scale}: left None without a preset or a meaning: {unfilled}"


@pytest.mark.parametrize("scale", SCALES)
def test_each_preset_survives_the_json_round_trip(exp, scale):
    cfg = exp.config_cls(scale=scale)
    stored = to_jsonable(dataclasses.asdict(cfg))
    assert rebuild_config(exp.config_cls, stored) == cfg


@pytest.mark.parametrize("values, needle", [
    ({"seed": -1}, "seed"),
    ({"device": "tpu"}, "unknown device 'tpu'"),
    ({"scale": "huge"}, "scale"),
    ({"no_such_field": 1}, "no_such_field"),
])
def test_a_bad_value_is_a_config_error_naming_it(exp, values, needle):
    with pytest.raises(ConfigError, match=needle):
        build_config(exp.config_cls, values)


def test_the_estimate_is_none_or_fits_at_the_quick_scale(exp):
    """Where an experiment estimates its run, the quick scale fits this machine and the refusal
    a larger size would get can say what to lower."""
    est = exp.config_cls(scale="quick").estimate()
    if est is None:
        return
    assert isinstance(est, Estimate) and est.peak_bytes > 0 and est.fits("cpu"), (exp.id, est)
    assert est.what and (est.lower or est.change), (exp.id, est)


# Experiments without Config.estimate, and why: nothing else may join this list unnoticed.
NOT_ESTIMATED = {
    "transformer-math.attention-speed": "its config refuses through the benchmark's own memory check (bench.check_memory)",
    "transformer-math.parameter-counts": "no parameter scales: it counts Table 1's models by formula",
}


def test_every_experiment_that_scales_estimates_its_run(exp):
    from attnlab.config import Config

    estimates = exp.config_cls.estimate is not Config.estimate
    assert estimates != (exp.id in NOT_ESTIMATED), (exp.id, NOT_ESTIMATED.get(exp.id, "give it estimate()"))


def test_a_huge_attention_speed_length_is_refused_by_the_benchmark_check():
    from attnlab.registry import get_experiment

    with pytest.raises(ConfigError, match="GiB"):
        get_experiment("transformer-math.attention-speed").config_cls(n=(10_000_000,))


def test_a_result_that_cannot_be_stored_is_refused_when_built():
    """Every run of every experiment, in these tests or a user's, returns a storable result: an
    ExperimentResult whose stored form is not JSON fails where it is made, not when results.json is written."""
    from attnlab.results import ExperimentResult

    assert to_jsonable(ExperimentResult(data={"x": (1.5, float("nan"))}).to_dict()) == {"data": {"x": [1.5, "nan"]}}
    with pytest.raises(TypeError, match=r"cannot be stored as JSON \(object is not JSON-able\)"):
        ExperimentResult(data={"x": object()})


def test_every_experiment_is_run_at_a_tiny_size_by_its_own_test_module(exp):
    """tests/papers mirrors the package: experiments/<name>.py's run function is called, at a small
    config, in experiments/test_<name>.py."""
    parts = exp.run.__module__.split(".")
    path = TESTS.joinpath(*parts[1:-1], f"test_{parts[-1]}.py")
    assert path.is_file(), f"{exp.id}: no {path.relative_to(TESTS)}"
    tree = ast.parse(path.read_text())
    called = {n.func.id if isinstance(n.func, ast.Name) else getattr(n.func, "attr", None)
              for n in ast.walk(tree) if isinstance(n, ast.Call)}
    names = {exp.run.__name__} | {a.asname for n in ast.walk(tree)  # `from <module> import run as run_x`
                                  if isinstance(n, ast.ImportFrom) and n.module == exp.run.__module__
                                  for a in n.names if a.name == exp.run.__name__ and a.asname}
    assert names & called, f"{exp.id}: {path.name} never calls {exp.run.__name__}"
