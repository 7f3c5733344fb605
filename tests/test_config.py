"""The one validation path: checks, RunConfig (presets, seed, device), text conversion."""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import FrozenInstanceError, dataclass
from typing import Any, Literal

import pytest
import torch

from attnlab.config import (
    Config,
    RunConfig,
    build_config,
    check_choice,
    check_device,
    check_int,
    check_ints,
    check_number,
    check_seed,
    coerce,
    coerce_field,
    describe_fields,
    field_types,
    format_value,
    param,
)
from attnlab.errors import ConfigError


@dataclass(frozen=True)
class _Toy(RunConfig):
    PRESETS = {"quick": {"n": 3, "widths": (2, 5)}, "paper": {"n": 7, "widths": (2, 5, 11)}}

    n: int | None = param(None, "samples")
    widths: tuple[int, ...] | None = param(None, "softmax widths")
    rate: float = param(0.5, "a rate in (0, 1)")

    @classmethod
    def normal_form(cls, values: dict[str, Any]) -> dict[str, Any]:
        v = super().normal_form(values)
        v["widths"] = check_ints("widths", v["widths"], minimum=2)
        return v

    def validate(self) -> None:
        check_int("n", self.n, minimum=1)
        check_number("rate", self.rate, 0, 1, open_min=True, open_max=True)


def test_presets_fill_fields_left_none_per_scale_and_explicit_values_win():
    assert (_Toy().n, _Toy().widths) == (3, (2, 5))
    assert (_Toy(scale="paper").n, _Toy(scale="paper").widths) == (7, (2, 5, 11))
    assert _Toy(scale="paper", n=4).n == 4
    assert _Toy(widths=[3, 4]).widths == (3, 4)  # lists become tuples


def test_configs_are_frozen_and_replace_validates_again():
    cfg = _Toy()
    with pytest.raises(FrozenInstanceError):
        cfg.n = 5
    assert cfg.replace(n=9).n == 9
    with pytest.raises(ConfigError, match="n must be an integer >= 1, got 0"):
        cfg.replace(n=0)


def test_a_list_builds_the_config_its_tuple_builds_and_replace_normalises_too():
    assert _Toy(widths=[3, 4]) == _Toy(widths=(3, 4))
    assert hash(_Toy(widths=[3, 4])) == hash(_Toy(widths=(3, 4)))  # a list stored would not hash
    replaced = dataclasses.replace(_Toy(), widths=[6, 7])
    assert type(replaced.widths) is tuple and replaced == _Toy(widths=(6, 7)) == _Toy().replace(widths=[6, 7])
    assert _Toy("paper", 3) == _Toy(scale="paper", seed=3)  # positional arguments bind as the dataclass's


def test_normal_form_returns_a_new_dict_and_leaves_its_input_alone():
    given = {"scale": "paper", "seed": 0, "device": "cpu", "n": None, "widths": [3, 4], "rate": 0.5}
    before = dict(given)
    out = _Toy.normal_form(given)
    assert given == before and out is not given
    assert out == {**before, "n": 7, "widths": (3, 4)}  # the preset's n, the list's tuple
    assert _Toy.normal_form(out) == out


def test_a_call_that_does_not_fit_the_fields_is_the_dataclass_own_type_error():
    with pytest.raises(TypeError, match=r"__init__\(\) got an unexpected keyword argument 'm'"):
        _Toy(m=1)
    with pytest.raises(TypeError, match=r"__init__\(\) takes from 1 to 7 positional arguments but 8 were given"):
        _Toy(*range(7))


@pytest.mark.parametrize("kwargs, message", [
    (dict(scale="huge"), "scale must be one of quick, paper, got 'huge'"),
    (dict(seed=-1), r"seed must be an integer in \[0, 4294967295\], got -1"),
    (dict(seed=2**32), r"seed must be an integer in \[0, 4294967295\]"),
    (dict(seed=1.5), "seed must be an integer"),
    (dict(seed=True), "seed must be an integer"),
    (dict(device="gpu"), "unknown device 'gpu'; use cpu, cuda or cuda:N"),
    (dict(device="cuda:x"), "unknown device 'cuda:x'"),
    (dict(n=0), "n must be an integer >= 1, got 0"),
    (dict(widths=(2, 1)), "widths must be a non-empty list of integers >= 2"),
    (dict(widths=()), "widths must be a non-empty list"),
    (dict(rate=1.0), r"rate must be a finite number in \(0, 1\), got 1.0"),
    (dict(rate=float("nan")), "rate must be a finite number"),
])
def test_every_bad_value_is_one_config_error_naming_the_field(kwargs, message):
    with pytest.raises(ConfigError, match=message) as e:
        _Toy(**kwargs)
    assert "\n" not in str(e.value)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a machine without CUDA")
def test_cuda_is_refused_where_it_is_not_available():
    for device in ("cuda", "cuda:0"):
        with pytest.raises(ConfigError, match="CUDA is not available on this machine; use cpu"):
            check_device(device)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_devices_are_accepted_by_index_where_they_exist():
    assert check_device("cuda") == "cuda" and check_device("cuda:0") == "cuda:0"
    with pytest.raises(ConfigError, match="numbered from 0"):
        check_device(f"cuda:{torch.cuda.device_count()}")


def test_check_helpers_decide_at_their_bounds():
    assert check_int("k", 3, 3, 3) == 3 and check_seed(2**32 - 1) == 2**32 - 1
    assert check_number("x", 0, 0) == 0.0 and check_choice("c", "b", ("a", "b")) == "b"
    for bad in (lambda: check_int("k", 4, 1, 3), lambda: check_number("x", 0, 0, open_min=True),
                lambda: check_choice("c", "z", ("a", "b")), lambda: check_ints("l", 5)):
        with pytest.raises(ConfigError):
            bad()


def test_plain_config_runs_validate_and_param_documents_fields():
    @dataclass(frozen=True)
    class P(Config):
        H: int = param(4, "number of heads H")

        def validate(self) -> None:
            check_int("H", self.H, minimum=1)

    with pytest.raises(ConfigError, match="H must be an integer >= 1"):
        P(H=0)
    assert describe_fields(P) == [{"name": "H", "type": "int", "default": 4, "help": "number of heads H"}]
    with pytest.raises(TypeError, match="immutable"):
        param([1], "a list")


def test_text_values_name_the_flag_the_field_and_the_type():
    assert coerce_field("toy", _Toy, "n", "5") == 5
    with pytest.raises(ConfigError, match=r"^--set n=abc: expected an integer or none for n$"):
        coerce_field("toy", _Toy, "n", "abc")
    with pytest.raises(ConfigError, match=r"^--set widths=3,x: expected integers separated by commas \(e\.g\. "
                                          r"3,11,64\) or none for widths$"):
        coerce_field("toy", _Toy, "widths", "3,x")
    with pytest.raises(ConfigError, match="toy has no config field 'm'; fields: scale, seed, device, n, widths, rate"):
        coerce_field("toy", _Toy, "m", "1")
    with pytest.raises(ConfigError, match="seed is set by --seed"):
        coerce_field("toy", _Toy, "seed", "1", reserved={"seed": "--seed"})
    with pytest.raises(ConfigError, match="^construct toy: n must be an integer >= 1, got 0$"):
        build_config(_Toy, {"n": 0}, what="construct toy")


@pytest.mark.parametrize("tp, words", [
    (int, "an integer"), (float, "a number"), (bool, "true or false"), (str, "text"),
    (int | None, "an integer or none"), (tuple[int, ...], "integers separated by commas (e.g. 3,11,64)"),
    (tuple[int, ...] | None, "integers separated by commas (e.g. 3,11,64) or none"),
    (tuple[str, ...], "names separated by commas (e.g. a,b)"),
    (list[float], "numbers separated by commas (e.g. 0.5,0.25)"),
    (tuple[float, str], "2 values separated by commas (a number, text)"),
    (Literal["quick", "paper"], "one of quick, paper"),
])
def test_types_are_named_in_words(tp, words):
    from attnlab.config import plain_type

    assert plain_type(tp) == words
    assert not any(c in plain_type(tp) for c in "[]|")


@pytest.mark.parametrize("text, tp, expected", [
    ("3", int, 3), (" -7 ", int, -7), ("0.5", float, 0.5), ("1e-3", float, 1e-3), ("4", float, 4.0),
    ("true", bool, True), ("False", bool, False), ("1", bool, True), ("0", bool, False), ("YES", bool, True),
    ("abc", str, "abc"), ("3;11;64", tuple[int, ...], (3, 11, 64)), ("3,11,64", tuple[int, ...], (3, 11, 64)),
    (" 3, 11 ", tuple[int, ...], (3, 11)), ("", tuple[int, ...], ()), ("1,2", tuple[int, ...] | None, (1, 2)),
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


def test_field_types_resolve_string_annotations():
    types_ = field_types(_Toy)
    assert types_["rate"] is float and types_["n"] == (int | None) and types_["scale"] is str


def test_check_fits_refuses_what_the_device_cannot_hold_in_one_line():
    from attnlab.config import check_fits, device_memory

    check_fits("a small thing", 2**20, available=2**30, change="never said")
    with pytest.raises(ConfigError, match=r"^a big thing needs at least 2.0 GiB on cpu; it has 1.0 GiB: lower n$"):
        check_fits("a big thing", 2 * 2**30, available=2**30, change="lower n")
    assert device_memory("cpu") > 2**30  # this machine's physical memory, read from the OS


# ---- no config writes a field after construction ------------------------------------------
def _attnlab_config_classes() -> list[type]:
    """Every config class attnlab defines (every subclass of Config once all are imported: bench's,
    training's, the capacity search's, the bases), and every one the registry holds (plugins' too)."""
    import attnlab.bench.run  # noqa: F401 (BenchConfig)
    import attnlab.training.settings  # noqa: F401 (TrainConfig)
    from attnlab.registry import all_constructions, all_experiments

    registered = {e.config_cls for e in all_experiments()} | {c.params_cls for c in all_constructions()}
    found, todo = set(), [Config]
    while todo:
        cls = todo.pop()
        found.add(cls)
        todo.extend(cls.__subclasses__())
    return sorted({c for c in found if c.__module__.startswith("attnlab.")} | registered,
                  key=lambda c: (c.__module__, c.__qualname__))


def test_no_config_class_defines_or_calls_a_setter():
    from attnlab.registry import all_constructions, all_experiments

    classes = _attnlab_config_classes()
    assert {e.config_cls for e in all_experiments()} | {c.params_cls for c in all_constructions()} <= set(classes)
    names = {c.__name__ for c in classes}
    assert {"RunConfig", "BenchConfig", "TrainConfig", "SearchConfig", "CapacitySettings"} <= names
    assert not hasattr(Config, "normalise")
    for cls in classes:
        source = inspect.getsource(cls)
        for setter in ("setattr", "normalise(", "__dict__"):
            assert setter not in source, f"{cls.__module__}.{cls.__qualname__} uses {setter}"


def _registry_values() -> list[tuple[type, dict[str, Any]]]:
    """(config class, its fields' values as a call without arguments gives them) for every experiment at
    each scale, every construction, and bench's, training's and the capacity search's configs."""
    from attnlab.bench.run import BenchConfig
    from attnlab.papers.memorization.capacity_search import SearchConfig
    from attnlab.registry import all_constructions, all_experiments
    from attnlab.training.settings import TrainConfig

    def given(cls: type, **kw: Any) -> dict[str, Any]:
        return {f.name: kw.get(f.name, f.default) for f in dataclasses.fields(cls)}

    out = [(e.config_cls, given(e.config_cls, scale=s)) for e in all_experiments() for s in ("quick", "paper")]
    out += [(c.params_cls, given(c.params_cls)) for c in all_constructions()]
    return out + [(BenchConfig, given(BenchConfig)), (TrainConfig, given(TrainConfig, steps=3, optimizer="adamw")),
                  (SearchConfig, given(SearchConfig))]


def test_every_normal_form_is_pure_idempotent_and_takes_a_list_for_its_tuple():
    checked = 0
    for cls, given in _registry_values():
        before = dict(given)
        normal = cls.normal_form(given)
        assert given == before, f"{cls.__name__}.normal_form changed its input"
        assert cls.normal_form(normal) == normal, f"{cls.__name__}: the normal form of a normal config differs"
        for name, value in normal.items():
            if isinstance(value, tuple):
                assert cls.normal_form({**normal, name: list(value)}) == normal, f"{cls.__name__}.{name} as a list"
                checked += 1
    assert checked >= 100


def test_a_real_config_from_a_list_equals_the_one_from_its_tuple_and_replace_normalises():
    from attnlab.bench.run import BenchConfig

    cfg = BenchConfig(n=[64, 16, 64], variants=["softmax", "sdpa", "softmax"])
    assert cfg == BenchConfig(n=(16, 64), variants=("softmax", "sdpa"))
    assert (cfg.n, cfg.variants) == ((16, 64), ("softmax", "sdpa"))
    assert dataclasses.replace(cfg, n=[8, 4]).n == (4, 8) and cfg.replace(variants=["sdpa"]).variants == ("sdpa",)
