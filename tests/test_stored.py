"""attnlab.stored.Stored: a record stored as its fields, by name, in declaration order."""

from __future__ import annotations

import json
from dataclasses import dataclass

import torch

from attnlab.papers.rank_collapse.path_shares import LinearisedMiniLM, ProductResiduals
from attnlab.papers.transformer_math.scaling_training import History
from attnlab.stored import Stored, stored_value


@dataclass(frozen=True)
class _Flat:
    """A nested record whose stored form is not its fields."""

    a: int

    def to_dict(self) -> dict:
        """Renamed on purpose: the nesting record must keep it."""
        return {"renamed": self.a}


@dataclass(frozen=True)
class _Plain:
    x: float
    pair: tuple[int, int]


@dataclass(frozen=True)
class _Record(Stored):
    z: int
    a: tuple[float, ...]
    flat: _Flat
    plain: _Plain
    by_key: dict[int, tuple[str, ...]]
    missing: float | None = None


def test_fields_in_declaration_order_tuples_as_lists_nested_records_by_their_own_form():
    r = _Record(3, (0.5, 1.5), _Flat(7), _Plain(2.5, (1, 2)), {5: ("p", "q")})
    d = r.to_dict()
    assert list(d) == ["z", "a", "flat", "plain", "by_key", "missing"]
    assert d == {"z": 3, "a": [0.5, 1.5], "flat": {"renamed": 7}, "plain": {"x": 2.5, "pair": [1, 2]},
                 "by_key": {5: ["p", "q"]}, "missing": None}
    assert json.loads(json.dumps(d)) == {**d, "by_key": {"5": ["p", "q"]}}  # only JSON's own key rule differs


def test_a_leaf_is_stored_as_itself():
    t = torch.arange(3)
    assert stored_value(t) is t and stored_value("s") == "s" and stored_value(None) is None


def test_the_stored_forms_of_records_that_replaced_their_own_to_dict():
    """Values as the hand-written to_dict methods stored them: History's tuples as lists, a
    network's products nested by depth."""
    h = History(step=(0, 5), loss=(2.0, 1.0), accuracy=(0.1, 0.9), entropy=(1.5, 0.5), grad_norm=(3.0, 2.0))
    assert h.to_dict() == {"step": [0, 5], "loss": [2.0, 1.0], "accuracy": [0.1, 0.9], "entropy": [1.5, 0.5],
                           "grad_norm": [3.0, 2.0]}
    p = ProductResiduals(median=0.5, q25=0.25, q75=0.75, min=0.0, max=1.0)
    net = LinearisedMiniLM(L=3, H=5, norm_share=[1.0], signed_share=[1.0], count_share=[1.0],
                           residual_by_length=[0.0], linear_vs_paths=1e-6, products={2: p})
    assert net.to_dict()["products"] == {2: {"median": 0.5, "q25": 0.25, "q75": 0.75, "min": 0.0, "max": 1.0}}
    assert list(net.to_dict()) == ["L", "H", "norm_share", "signed_share", "count_share", "residual_by_length",
                                   "linear_vs_paths", "products"]
