"""CONTRIBUTING.md's examples, run as the guide says.

Every fenced ``python`` or ``toml`` block of the guide whose first line is a comment naming a
file (``# src/attnlab/papers/toy/__init__.py``, ``# src/attnlab/papers/toy/ledger.toml``) is
written to that path in a scratch tree.
The scratch ``src/attnlab/papers`` joins the real package's ``__path__``, so the toy
paper is found by the same discovery as the papers of the tree, into a scratch registry
(:func:`attnlab.registry.scratch`). Then every ``attnlab ...`` command line of the
guide's ``bash`` blocks that names the toy paper runs through :func:`attnlab.cli.main`,
and the example tests of the guide run too.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
from pathlib import Path

import numpy as np
import pytest

import attnlab.papers
from attnlab import registry
from tolerances import ROW_SUM_TOL_FLOAT64

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "CONTRIBUTING.md"
FILE_BLOCK = re.compile(r"^```(?:python|toml)\n# (?P<path>[\w/.-]+\.(?:py|toml))\n(?P<body>.*?)^```$", re.M | re.S)
BASH_BLOCK = re.compile(r"^```bash\n(?P<body>.*?)^```$", re.M | re.S)
TOY_NAMES = ("toy", "previous-token")


def guide_files() -> dict[str, str]:
    """Path -> source of every file the guide shows (the comment line stays in the file)."""
    text = GUIDE.read_text()
    files = {m["path"]: f"# {m['path']}\n{m['body']}" for m in FILE_BLOCK.finditer(text)}
    assert len(files) == len(FILE_BLOCK.findall(text)), "two blocks of the guide name the same file"
    return files


def guide_commands() -> list[list[str]]:
    """The guide's ``attnlab`` command lines that use the toy paper, as argument lists."""
    commands = []
    for block in BASH_BLOCK.finditer(GUIDE.read_text()):
        for line in block["body"].splitlines():
            line = line.split("  #", 1)[0].strip()
            if line.startswith("attnlab ") and any(name in shlex.split(line) or
                                                   any(a.startswith(name + ".") for a in shlex.split(line))
                                                   for name in TOY_NAMES):
                commands.append(shlex.split(line)[1:])
    return commands


def cli(argv: list[str]) -> int:
    """``attnlab ARGV`` in this process; its exit status."""
    from attnlab.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(argv)
    return exit_.value.code


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """The guide's files written under tmp_path and discovered into a scratch registry."""
    for path, source in guide_files().items():
        target = tmp_path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(source)
    for folder in (tmp_path / "src" / "attnlab" / "papers").rglob("*"):
        if folder.is_dir() and folder.name != "__pycache__":
            assert (folder / "__init__.py").is_file(), f"the guide gives no __init__.py for {folder}"
    monkeypatch.setattr(attnlab.papers, "__path__", [*attnlab.papers.__path__, str(tmp_path / "src/attnlab/papers")])
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "160")
    _forget_toy_modules()  # each test imports (and so registers) the toy paper afresh
    try:
        with registry.scratch() as state:
            names = registry.import_recursively("attnlab.papers.toy")
            yield tmp_path, state, names
    finally:
        _forget_toy_modules()


def _forget_toy_modules() -> None:
    import sys

    for name in [m for m in sys.modules if m == "attnlab.papers.toy" or m.startswith("attnlab.papers.toy.")]:
        del sys.modules[name]


def test_the_guide_shows_a_paper_a_claim_an_experiment_a_construction_and_their_tests():
    files = guide_files()
    assert "src/attnlab/papers/toy/__init__.py" in files
    assert any(p.startswith("src/attnlab/papers/toy/claims/") and not p.endswith("__init__.py") for p in files)
    assert "src/attnlab/papers/toy/experiments/softmax_entropy.py" in files
    assert any(p.startswith("tests/papers/toy/") for p in files)
    verbs = {c[0] for c in guide_commands()}
    assert {"verify", "reproduce", "construct"} <= verbs


def test_discovery_finds_the_guides_paper_claim_experiment_and_construction(toy):
    _, state, names = toy
    assert "attnlab.papers.toy.experiments.softmax_entropy" in names
    assert state.papers["toy"].package == "attnlab.papers.toy"
    assert list(state.claims) == ["toy.rows-sum-to-one"]
    assert list(state.experiments) == ["toy.softmax-entropy"]
    assert list(state.constructions) == ["previous-token"]
    # the conventions tests/test_registry.py holds every paper of the tree to
    (c,) = state.claims.values()
    assert c.check.__module__.startswith("attnlab.papers.toy.claims.") and c.check.__name__.startswith("_")
    (e,) = state.experiments.values()
    assert e.run.__module__ == "attnlab.papers.toy.experiments." + e.id.split(".", 1)[1].replace("-", "_")


def test_every_command_of_the_guide_runs(toy, capsys):
    tmp_path, _, _ = toy
    for argv in guide_commands():
        if argv[0] == "sweep":
            argv = [*argv, "--executor", "inline"]  # worker processes would not see the scratch registry
        status = cli(argv)
        assert status == 0, (argv, capsys.readouterr())
    capsys.readouterr()
    # attnlab verify toy: the claim is reproduced, measured in float64
    assert cli(["verify", "toy", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert (row["id"], row["verdict"], row["relation"], row["threshold"]) == ("toy.rows-sum-to-one", "reproduced",
                                                                             "<=", 1e-12)
    assert row["measured"] <= ROW_SUM_TOL_FLOAT64 and row["values"]["n"] == 31
    # attnlab reproduce toy --out runs/toy: a report with the experiment's figure
    run = tmp_path / "runs" / "toy"
    assert (run / "report.html").is_file() and (run / "figures" / "softmax-entropy.png").stat().st_size > 1000
    assert "figures/softmax-entropy.png" in (run / "report.md").read_text()
    results = json.loads((run / "results.json").read_text())
    assert "toy.softmax-entropy" in json.dumps(results) and "toy.rows-sum-to-one" in json.dumps(results)
    (row,) = results["experiments"]["toy.softmax-entropy"]["results"]["summary"]
    assert (row["verdict"], row["measured"], row["criterion"]) == ("reproduced", 0, "== 0")
    # attnlab construct previous-token --set n=8 --set eps=1e-9 --out previous-token.npz
    z = np.load(tmp_path / "previous-token.npz")
    assert set(z.files) == {"P", "W_QK", "X", "A"} and z["A"].shape == (8, 8)
    copied = z["A"] @ z["X"]  # re-checked here with NumPy: row i of A X is X_{i-1}
    assert np.abs(copied[1:] - z["X"][:-1]).max() <= 1e-9
    assert np.allclose(np.triu(z["A"], 1), 0.0)  # causal


def test_list_json_shows_the_guides_paper_and_everything_it_registers(toy, capsys):
    assert cli(["list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [p["name"] for p in listed["papers"]] == ["toy"]
    assert [c["id"] for c in listed["claims"]] == ["toy.rows-sum-to-one"]
    assert [e["id"] for e in listed["experiments"]] == ["toy.softmax-entropy"]
    (con,) = listed["constructions"]
    assert con["name"] == "previous-token"
    assert [p["name"] for p in con["parameters"]] == ["n", "eps", "seed"]


def test_bad_input_to_the_construction_is_a_one_line_error(toy, capsys):
    assert cli(["construct", "previous-token", "--set", "eps=2"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "eps must be a finite number in (0, 1), got 2" in err


def test_the_guides_example_tests_pass(toy):
    tmp_path, _, _ = toy
    tests = sorted(p for p in guide_files() if p.startswith("tests/"))
    assert tests
    ran = 0
    for path in tests:
        spec = importlib.util.spec_from_file_location(f"guide_{Path(path).stem}", tmp_path / path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for name, fn in vars(module).items():
            if name.startswith("test_") and callable(fn):
                for kwargs in _parametrizations(fn):
                    fn(**kwargs)
                    ran += 1
    assert ran >= 3


def _parametrizations(fn) -> list[dict]:
    """The keyword arguments of each case of ``@pytest.mark.parametrize`` (one name)."""
    for mark in getattr(fn, "pytestmark", []):
        if mark.name == "parametrize":
            names, values = mark.args[0], mark.args[1]
            assert "," not in names, "the guide's tests parametrize one argument"
            return [{names: v} for v in values]
    return [{}]


def test_a_new_paper_changes_no_test_but_the_registry_counts():
    """The guide says adding a paper touches ``EXPECTED`` only: no other test may list the papers
    of the tree (a literal holding four or more of their names would fail for a sixth)."""
    import ast

    tree_papers = {f.name.replace("_", "-") for f in (ROOT / "src" / "attnlab" / "papers").iterdir()
                   if (f / "__init__.py").is_file()}
    listed = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        module = ast.parse(path.read_text())
        counts = {id(a.value) for a in ast.walk(module) if isinstance(a, ast.Assign)
                  and [getattr(t, "id", None) for t in a.targets] == ["EXPECTED"]}
        for node in ast.walk(module):
            if isinstance(node, (ast.Set, ast.List, ast.Tuple, ast.Dict)) and id(node) not in counts:
                elts = node.keys if isinstance(node, ast.Dict) else node.elts
                names = {e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
                if len(names & tree_papers) >= 4:
                    listed.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert listed == [], f"derive these lists from the tree (src/attnlab/papers/*/): {listed}"
