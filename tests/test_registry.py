"""The registry: papers, claims, experiments and constructions, and their discovery."""

from __future__ import annotations

import importlib
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from attnlab import registry
from attnlab.checks import NO_ERROR
from attnlab.config import Config, RunConfig
from attnlab.errors import ConfigError, UnknownNameError
from attnlab.registry import (
    Claim,
    Construction,
    Experiment,
    all_claims,
    all_constructions,
    all_experiments,
    at_most,
    claim,
    papers,
    select_claims,
)
from helpers import paper_folders

# What every paper registers: (claims, experiments, constructions). A file moved out of
# reach of discovery, or a claim dropped, changes these numbers.
EXPECTED = {
    "invertibility": (8, 4, 1),
    "logic": (17, 1, 1),
    "memorization": (8, 11, 1),
    "rank-collapse": (17, 5, 0),
    "transformer-math": (29, 8, 0),
}


def _counts(paper: str) -> tuple[int, int, int]:
    return (sum(c.paper == paper for c in all_claims()), sum(e.paper == paper for e in all_experiments()),
            sum(c.paper == paper for c in all_constructions()))


@pytest.mark.parametrize("paper", sorted(EXPECTED))
def test_discovery_finds_every_claim_experiment_and_construction_of_each_paper(paper):
    assert _counts(paper) == EXPECTED[paper]


def test_every_paper_folder_is_registered_by_its_own_package_and_counted():
    ps = {p.name: p for p in papers().values() if p.package.startswith("attnlab.papers.")}
    folders = paper_folders()
    assert set(ps) == set(folders), "every folder of src/attnlab/papers registers one paper of its name"
    assert set(EXPECTED) == set(folders), f"add the new paper's counts to EXPECTED: {sorted(set(folders) - set(EXPECTED))}"
    for name, p in ps.items():
        assert p.package == "attnlab.papers." + folders[name].name


def test_every_object_lives_in_its_papers_package_and_experiment_files_are_named_by_id():
    """Every experiment's entry point is ``run`` in ``<paper>/experiments/<name>.py``."""
    for c in all_claims():
        home = papers()[c.paper].package
        if home.startswith("attnlab.papers."):
            assert c.check.__module__.startswith(home + ".claims."), c.id
    for e in all_experiments():
        home = papers()[e.paper].package
        if home.startswith("attnlab.papers."):
            assert e.run.__module__ == f"{home}.experiments.{e.id.split('.', 1)[1].replace('-', '_')}", e.id
            assert e.run.__name__ == "run", f"{e.id}: the entry point is named {e.run.__name__}, not run"
            assert issubclass(e.config_cls, RunConfig)
    for c in all_constructions():
        assert c.build.__module__.startswith(papers()[c.paper].package + "."), c.name
        assert issubclass(c.params_cls, Config)


def test_discovery_descends_into_subfolders(tmp_path, monkeypatch):
    deep = tmp_path / "toy_papers_pkg" / "toy" / "claims" / "deep"
    deep.mkdir(parents=True)
    for d in (deep.parents[2], deep.parents[1], deep.parent, deep):
        (d / "__init__.py").write_text("")
    (deep.parents[1] / "__init__.py").write_text(
        "from attnlab.registry import register_paper\n"
        "register_paper('toy', 'Toy', 'toy.md', package=__name__)\n")
    (deep / "nested.py").write_text(
        "from attnlab.registry import at_most, claim\n"
        "@claim('toy.nested', where='-', statement='found two folders down')\n"
        "def _c(seed):\n    return at_most(0.0, 1.0)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with registry.scratch() as state:
        names = registry.import_recursively("toy_papers_pkg")
        assert "toy_papers_pkg.toy.claims.deep.nested" in names
        assert list(state.claims) == ["toy.nested"]
    assert "toy.nested" not in {c.id for c in all_claims()}  # the scratch registry is gone


def test_an_object_defined_in_another_papers_package_is_refused():
    with registry.scratch():
        registry.register_paper("alpha", "A", "a.md", package="attnlab.papers.alpha")

        def check(seed):
            return at_most(0, 1)

        check.__module__ = "attnlab.papers.beta.claims.x"
        with pytest.raises(ConfigError, match="belongs to paper 'alpha'.*move it into attnlab/papers/alpha/"):
            claim("alpha.x", where="-", statement="-")(check)


def test_registration_rejects_untyped_configs_and_repeats():
    @dataclass(frozen=True)
    class NotARunConfig:
        seed: int = 0

    @dataclass(frozen=True)
    class Cfg(RunConfig):
        pass

    with registry.scratch():
        registry.register_paper("toy", "Toy", "toy.md", package="tests.toy")
        with pytest.raises(ConfigError, match="must extend attnlab.config.RunConfig"):
            registry.register_experiment(Experiment("toy.a", "A", NotARunConfig, lambda cfg, rd: None))
        registry.register_experiment(Experiment("toy.a", "A", Cfg, lambda cfg, rd: None))
        with pytest.raises(ConfigError, match="registered twice"):
            registry.register_experiment(Experiment("toy.a", "A", Cfg, lambda cfg, rd: None))
        with pytest.raises(ConfigError, match="must be '<paper>.<name>'"):
            registry.register_experiment(Experiment("nopaper.a", "A", Cfg, lambda cfg, rd: None))
        with pytest.raises(ConfigError, match="must extend attnlab.config.Config"):
            registry.register_construction(Construction("c", "toy", "-", NotARunConfig, lambda p: None))
        with pytest.raises(UnknownNameError, match="unknown construction 'zzz': choose one of none"):
            registry.get_construction("zzz")


def test_plugins_register_from_a_file_outside_the_tree():
    # tests/conftest.py names tests/fixtures/selftest_paper.py in ATTNLAB_PLUGINS
    assert "selftest" in papers() and registry.get_experiment("selftest.sweep").in_reproduce is False
    with pytest.raises(ConfigError, match="is not a file"):
        registry.load_plugin("/no/such/plugin.py")
    with pytest.raises(ConfigError, match="cannot import 'no_such_module_xyz'"):
        registry.load_plugin("no_such_module_xyz")


def test_a_plugin_that_fails_to_load_is_one_line_naming_the_file_and_the_line(tmp_path):
    bad = tmp_path / "bad_plugin.py"
    bad.write_text("x = 1\ny = (\n")
    with pytest.raises(ConfigError, match=rf"ATTNLAB_PLUGINS: {bad} failed to load: SyntaxError: .*\(line 2\); "
                                          "fix that file"):
        registry.load_plugin(str(bad))
    boom = tmp_path / "boom_plugin.py"
    boom.write_text("import math\n\nraise RuntimeError('boom')\n")
    with pytest.raises(ConfigError, match=r"failed to load: RuntimeError: boom \(line 3\)"):
        registry.load_plugin(str(boom))


def test_a_claim_fills_the_checks_quantity_where_and_paper_value():
    with registry.scratch():
        registry.register_paper("toy", "Toy", "toy.md", package="tests")

        @claim("toy.bound", where="Eq. 3", statement="the error is tiny", paper_value="1e-12")
        def _bound(seed: int):  # no ledger for the toy text: an unanchored row, attnlab's own statement
            return at_most(3e-13, 1e-12, "float64", values={"n": 7, "err": float("inf")}, role="own")

        r = registry.all_claims()[0].run(0)
    assert (r.check.quantity, r.check.where, r.check.paper_value) == ("the error is tiny", "Eq. 3", "1e-12")
    d = r.to_dict()
    assert (d["verdict"], d["relation"], d["threshold"], d["criterion"]) == ("holds", "<=", 1e-12, "<= 1e-12")
    assert d["values"] == {"n": 7, "err": "inf"} and d["where"] == "Eq. 3" and d["paper_value"] == "1e-12"


def test_selection_by_any_prefix_and_by_glob():
    by_prefix = [c.id for c in select_claims(["memorization.proposition3"])]
    assert by_prefix and all(i.startswith("memorization.proposition3") for i in by_prefix)
    assert "memorization.proposition3-reduction" in by_prefix  # not only whole dotted parts
    by_glob = [c.id for c in select_claims(["*.theorem1*"])]
    assert by_glob and all(".theorem1" in i for i in by_glob) and {i.split(".")[0] for i in by_glob} >= {
        "invertibility", "memorization"}
    assert [c.id for c in select_claims(["logic.solution-1"])] == ["logic.solution-1"]  # not solution-1-linear
    assert "logic.solution-1-linear" in [c.id for c in select_claims(["logic.solution-1*"])]
    with pytest.raises(UnknownNameError, match=r"unknown paper or claim 'nothing\*'"):
        select_claims(["nothing*"])


def test_selection_by_paper_id_and_prefix():
    by_paper = select_claims(["transformer-math"])
    assert by_paper and all(c.paper == "transformer-math" for c in by_paper)
    one = select_claims(["rank-collapse.softmax-shift-invariance"])
    assert [c.id for c in one] == ["rank-collapse.softmax-shift-invariance"]
    assert select_claims(None) == all_claims()


def test_unknown_selector_and_a_paper_without_claims_say_what_to_use():
    with pytest.raises(UnknownNameError, match="unknown paper or claim 'nope'.*attnlab list"):
        select_claims(["nope"])
    with_claims = ", ".join(p for p, (claims, _, _) in sorted(EXPECTED.items()) if claims)
    with pytest.raises(ConfigError, match=f"paper 'selftest' has no executable claims yet; papers with claims: "
                                          f"{re.escape(with_claims)}$"):
        select_claims(["selftest"])


def test_bad_claim_id_is_rejected():
    with pytest.raises(ConfigError, match="must be '<paper>.<name>'"):
        claim("not-a-paper.x", where="-", statement="-")


def test_an_anchor_must_name_an_entry_of_its_own_papers_ledger(tmp_path, monkeypatch):
    pkg = tmp_path / "toyledger"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "ledger.toml").write_text("[[statement]]\nid = 'eq-1'\nwhere = 'eq. 1'\nkind = 'equation'\n"
                                     "quote = '1 + 1 = 2'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with registry.scratch():
        registry.register_paper("toy", "Toy", "toy.md", package="toyledger")
        registry.register_paper("other", "Other", "o.md", package="tests")
        claim("toy.sum", where="eq. 1", statement="1 + 1 = 2", anchor="toy.eq-1", falsifier="a sum other than 2")(
            lambda seed: at_most(0.0, 1e-12))
        r = registry.all_claims()[0].run(0)
        assert (r.verdict, r.check.anchor, r.check.falsifier) == ("reproduced", "toy.eq-1", "a sum other than 2")
        with pytest.raises(ConfigError, match="'toy.eq-2' is not in the ledger of 'toy'"):
            claim("toy.x", where="-", statement="-", anchor="toy.eq-2", falsifier="f")(lambda seed: None)
        with pytest.raises(ConfigError, match="must name an entry of its own paper's ledger"):
            claim("other.x", where="-", statement="-", anchor="toy.eq-1", falsifier="f")(lambda seed: None)
        with pytest.raises(ConfigError, match="says its falsifier"):
            claim("toy.y", where="-", statement="-", anchor="toy.eq-1")(lambda seed: None)
        with pytest.raises(ConfigError, match="'toy.eq-9' is not in the ledger"):
            registry.register_experiment(Experiment("toy.e", "E", _Cfg, lambda cfg, rd: None, anchors=("toy.eq-9",)))
        # an unanchored claim whose check states the text fails loudly, as an error row
        claim("toy.bare", where="-", statement="-")(lambda seed: at_most(0.0, 1.0))
        bare = [c for c in registry.all_claims() if c.id == "toy.bare"][0].run(0)
        assert bare.verdict == "error" and "needs an anchor" in bare.error


@dataclass(frozen=True)
class _Cfg(RunConfig):
    pass


def test_a_check_that_raises_is_reported_as_error_not_hidden():
    def broken(seed: int):
        raise RuntimeError("boom")

    r = Claim("logic.broken", "-", "-", broken).run(0)
    assert r.verdict == "error" and "boom" in r.error
    assert r.to_dict()["verdict"] == "error"


@pytest.mark.parametrize("c", all_claims(), ids=lambda c: c.id)
def test_every_registered_claim_gives_the_same_verdict_for_two_seeds_and_none_fails(c):
    """A verdict that flips with the random inputs is not one a reader can trust; fail and
    error are attnlab's bugs."""
    r0, r1 = c.run(0), c.run(1)
    assert r0.verdict not in ("fail", "error"), (c.id, r0.error or r0.check)
    assert r0.verdict == r1.verdict, (c.id, r0.check, r1.check)
    # what `attnlab verify --json` prints for it (tests/cli/test_verify_cli.py runs the command on a few)
    d = json.loads(json.dumps(r0.to_dict()))
    assert d["where"] and "paper_value" in d and d["role"] in ("text", "own", "construction", "sanity", "info")
    # only an anchored claim speaks for its text; a differs names what it evidences
    assert (d["group"] == "text") == bool(c.anchor) == bool(d["anchor"]), (c.id, d["group"], c.anchor)
    if d["verdict"] == "differs":
        assert d["erratum"] == NO_ERROR or d["erratum"] in {e.id for e in registry.all_errata([c.paper])}, c.id
    if d["verdict"] != "info":
        assert d["relation"] in ("<=", "<", ">=", ">", "==", "±")
        assert isinstance(d["threshold"], (int, float, bool)) and d["criterion"]
    if d["verdict"] == "inconclusive":
        assert d["reason"]


def test_the_registry_module_names_no_paper():
    text = Path(importlib.import_module("attnlab.registry").__file__).read_text()
    for p in EXPECTED:
        assert f"attnlab.papers.{p.replace('-', '_')}" not in text
    assert sys.modules["attnlab.registry"].PAPERS_PACKAGE == "attnlab.papers"
