"""A sixth paper is one folder plus its line in ``EXPECTED``.

tests/fixtures/sixth/papers/sixth_paper/ is a whole paper (one claim, one experiment with its
ledger anchors, one construction); tests/fixtures/sixth/tests/ holds its experiment's test. The
``sixth`` fixture copies both into a temporary directory and joins it to
``attnlab.papers.__path__``, so discovery walks it as it walks a folder of src/attnlab/papers/:
its modules are ``attnlab.papers.sixth_paper.*``, registered on top of the five papers in a
scratch copy of the registry. Then the registry-driven tests of the suite run on it, as
written: they are imported afresh (so what they compute from the registry at import includes
the sixth paper) and called with its paper, claim and experiment. Only ``EXPECTED`` learns its
counts; a test that listed the papers by hand would fail here.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib.util
import inspect
import json
import shutil
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Iterator

import pytest

import attnlab.papers
from attnlab import registry
from helpers import paper_folders

TESTS = Path(__file__).parent
FIXTURE = TESTS / "fixtures" / "sixth"
NAME, PACKAGE = "sixth-paper", "attnlab.papers.sixth_paper"
COUNTS = (1, 1, 1)  # its line of EXPECTED: claims, experiments, constructions


def load_tests(path: Path) -> ModuleType:
    """The test module at ``path``, imported afresh under a name of its own (pytest's copy untouched)."""
    spec = importlib.util.spec_from_file_location(f"sixth_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cases(fn: Callable[..., Any]) -> list[dict[str, Any]]:
    """The keyword arguments of every case of ``fn``'s ``@pytest.mark.parametrize`` marks (their product)."""
    out: list[dict[str, Any]] = [{}]
    for mark in getattr(fn, "pytestmark", []):
        if mark.name != "parametrize":
            continue
        names = mark.args[0] if not isinstance(mark.args[0], str) else [n.strip() for n in mark.args[0].split(",")]
        values = [v if len(names) > 1 else (v,) for v in mark.args[1]]
        out = [{**case, **dict(zip(names, v))} for case in out for v in values]
    return out


def _forget_sixth() -> None:
    """Drop the sixth paper's modules, so the next import registers it afresh."""
    for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
        del sys.modules[name]


@pytest.fixture
def sixth(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The registry as it is plus the sixth paper, discovered from a temporary folder; yields that folder."""
    root = tmp_path / "sixth"
    shutil.copytree(FIXTURE, root)
    registry.discover()
    before = dataclasses.replace(registry._STATE)
    monkeypatch.setattr(attnlab.papers, "__path__", [*attnlab.papers.__path__, str(root / "papers")])
    _forget_sixth()
    try:
        with registry.scratch() as state:
            for f in dataclasses.fields(state):
                setattr(state, f.name, copy.copy(getattr(before, f.name)))
            registry.import_recursively(PACKAGE)
            yield root
    finally:
        _forget_sixth()


def test_discovery_finds_the_folder_as_a_paper_of_the_tree(sixth):
    p = registry.get_paper(NAME)
    assert p.package == PACKAGE and registry.paper_ledger(NAME).get(f"{NAME}.uniform-entropy").where == "§2"
    assert [c.id for c in registry.all_claims() if c.paper == NAME] == [f"{NAME}.rows-sum-to-one"]
    assert [e.id for e in registry.all_experiments() if e.paper == NAME] == [f"{NAME}.uniform-entropy"]
    assert [c.name for c in registry.all_constructions() if c.paper == NAME] == ["sixth-uniform"]
    assert set(registry.papers()) == set(paper_folders()) | {"selftest"}  # the tree's six and the plugin paper


def test_the_registry_tests_hold_for_it_once_expected_has_its_counts(sixth, monkeypatch):
    reg = load_tests(TESTS / "test_registry.py")
    with pytest.raises(AssertionError, match=rf"add the new paper's counts to EXPECTED: \['{NAME}'\]"):
        reg.test_every_paper_folder_is_registered_by_its_own_package_and_counted()
    monkeypatch.setitem(reg.EXPECTED, NAME, COUNTS)
    reg.test_discovery_finds_every_claim_experiment_and_construction_of_each_paper(NAME)
    reg.test_every_paper_folder_is_registered_by_its_own_package_and_counted()
    reg.test_every_object_lives_in_its_papers_package_and_experiment_files_are_named_by_id()
    reg.test_unknown_selector_and_a_paper_without_claims_say_what_to_use()  # lists it among papers with claims
    reg.test_the_registry_module_names_no_paper()
    ran = 0
    for c in registry.all_claims():
        if c.paper == NAME:
            reg.test_every_registered_claim_gives_the_same_verdict_for_two_seeds_and_none_fails(c)
            ran += 1
    assert ran == COUNTS[0]
    monkeypatch.setitem(reg.EXPECTED, NAME, (2, 1, 1))  # a count that does not match fails
    with pytest.raises(AssertionError):
        reg.test_discovery_finds_every_claim_experiment_and_construction_of_each_paper(NAME)


def test_every_per_experiment_conformance_test_holds_for_its_experiment(sixth, monkeypatch):
    """Every test of tests/test_experiment_conformance.py that takes an experiment, at every case."""
    conformance = load_tests(TESTS / "test_experiment_conformance.py")
    monkeypatch.setattr(conformance, "TESTS", sixth / "tests")  # its experiment's test lives beside it
    (exp,) = [e for e in conformance.EXPERIMENTS if e.paper == NAME]
    ran = []
    for name, fn in vars(conformance).items():
        if name.startswith("test_") and "exp" in inspect.signature(fn).parameters:
            for case in cases(fn):
                fn(exp=exp, **case)
                ran.append(name)
    assert len(set(ran)) >= 8 and len(ran) >= 12, ran  # 8 tests, 12 cases when written
    own = load_tests(sixth / "tests" / "papers" / "sixth_paper" / "experiments" / "test_uniform_entropy.py")
    own.test_the_entropy_of_uniform_attention_is_log_n()


def test_verify_list_and_construct_show_it(sixth, cli):
    code, out, err = cli(["verify", NAME, "--json"])
    assert code == 0, err
    (row,) = json.loads(out)
    assert (row["id"], row["verdict"], row["anchor"], row["threshold"]) == (
        f"{NAME}.rows-sum-to-one", "reproduced", f"{NAME}.rows-sum-to-one", 1e-12)
    assert row["measured"] <= 1e-12 and row["values"]["n"] == 13
    verify = load_tests(TESTS / "cli" / "test_verify_cli.py")
    assert NAME in verify.tree_papers()
    verify.test_list_json_has_papers_claims_experiments(cli)  # its papers and constructions, from the tree
    code, out, err = cli(["construct", "sixth-uniform", "--set", "n=5"])
    assert code == 0 and "reproduced" in out, (out, err)
