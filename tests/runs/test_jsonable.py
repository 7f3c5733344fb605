"""The one JSON encoder (attnlab.runs.jsonable): what run directories, sweeps and constructions store."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from attnlab.runs.jsonable import json_float, to_jsonable


class _Typed:
    def to_dict(self):
        return {"x": (1, float("nan"))}


def test_plain_json_from_every_kind_of_value():
    value = {1: (1.5, math.inf, -math.inf, float("nan")), "t": torch.tensor([[1.0, 2.0]]), "s": torch.tensor(3),
             "a": np.arange(3), "f": np.float64(0.25), "b": np.bool_(True), "p": Path("a/b"), "r": _Typed(),
             "n": None, "flag": False}
    out = to_jsonable(value)
    assert out == {"1": [1.5, "inf", "-inf", "nan"], "t": [[1.0, 2.0]], "s": 3, "a": [0, 1, 2], "f": 0.25,
                   "b": True, "p": "a/b", "r": {"x": [1, "nan"]}, "n": None, "flag": False}
    assert type(out["f"]) is float
    json.dumps(out, allow_nan=False)


def test_a_value_with_no_json_form_is_a_type_error():
    with pytest.raises(TypeError, match="object is not JSON-able"):
        to_jsonable({"x": object()})


def test_json_float():
    assert json_float(np.float32(0.5)) == 0.5 and json_float(float("nan")) == "nan"


def test_a_construction_result_stores_its_values_with_it():
    from attnlab.checks import info
    from attnlab.registry import ConstructionResult

    r = ConstructionResult({"A": np.eye(2)}, {"rank": torch.tensor(2), "gap": float("inf"), "v": np.array([1.0])},
                           info("rank", 2.0))
    d = r.to_dict()
    assert d["rank"] == 2 and d["gap"] == "inf" and d["v"] == [1.0]
