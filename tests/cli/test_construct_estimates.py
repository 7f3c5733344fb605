"""`attnlab construct`'s estimate: refused before building when it exceeds the machine, said on
stderr when it is long, printed by --dry-run without building; and experiment sizes that exceed
the machine refused by `attnlab reproduce` before anything is written."""

from __future__ import annotations

import dataclasses
import json

import pytest

from attnlab import estimates
from attnlab.errors import ConfigError
from attnlab.registry import all_constructions

HUGE = {"memorization": ["--set", "H=100000"],
        "logic": ["--set", "N=20", "--set", "M=8", "--set", "samples=10000000000"],
        "invertibility": ["--set", "N=2", "--set", "L=12", "--set", "d=12", "--set", "P=10000000"]}
SMALL = {"memorization": ["--set", "H=2", "--set", "n=5", "--set", "d=13", "--set", "d_h=5"],
         "logic": ["--set", "N=3", "--set", "M=3"],
         "invertibility": ["--set", "N=2", "--set", "L=3", "--set", "d=2"]}


@pytest.fixture
def no_build(monkeypatch):
    """Every construction registered with a build that fails the test if it is called."""
    from attnlab import registry

    def refuse(params):
        raise AssertionError("built")

    for c in all_constructions():
        monkeypatch.setitem(registry._STATE.constructions, c.name, dataclasses.replace(c, build=refuse))


def test_every_construction_has_an_estimate():
    assert sorted(c.name for c in all_constructions()) == ["invertibility", "logic", "memorization"]
    assert all(c.estimate is not None for c in all_constructions())


@pytest.mark.parametrize("name", sorted(HUGE))
def test_too_large_for_the_machine_is_refused_in_one_line_before_building(cli_error, tmp_path, no_build, name):
    out = tmp_path / "w.npz"
    line = cli_error(["construct", name, *HUGE[name], "--out", str(out)])
    assert f"attnlab: error: construct {name} " in line and " needs about " in line and " GiB of memory (" in line
    assert "; cpu has " in line and " fits)" in line  # what the machine has, and the largest value that fits
    assert not out.exists()


def test_the_refusal_names_the_largest_value_that_fits(monkeypatch, cli_error):
    """With 1 GiB, the largest H whose estimate fits is the one the message names, and H + 1 does not fit."""
    from attnlab.papers.memorization.construction import MemorizationParams, estimate_memorization
    from attnlab.commands import construct as runs

    monkeypatch.setattr(runs, "device_memory", lambda device="cpu": 2 ** 30)
    line = cli_error(["construct", "memorization", "--set", "H=1000"])
    H = int(line.rsplit("H <= ", 1)[1].split(" ")[0])
    assert estimate_memorization(MemorizationParams(H=H)).peak_bytes <= 2 ** 30
    assert estimate_memorization(MemorizationParams(H=H + 1)).peak_bytes > 2 ** 30
    assert line.endswith(f"cpu has 1.0 GiB: lower H (H <= {H} fits)") and 60 < H < 200


def test_the_python_function_refuses_too(no_build):
    from attnlab.commands.construct import construct

    with pytest.raises(ConfigError, match=r"construct memorization H=100000 needs about 1,182,558 GiB of memory"):
        construct("memorization", {"H": "100000"})


def test_the_library_function_refuses_before_allocating():
    """construct_memorization called directly checks its own estimate (nothing is drawn)."""
    from attnlab.papers.memorization.construction import MemorizationParams, construct_memorization

    with pytest.raises(ConfigError, match=r"construct_memorization H=100000 needs about 1,182,558 GiB .*lower H"):
        construct_memorization(MemorizationParams(H=100000))


@pytest.mark.parametrize("name", sorted(HUGE))
def test_dry_run_prints_the_estimate_and_builds_nothing(cli, tmp_path, no_build, name):
    out = tmp_path / "w.npz"
    code, stdout, _ = cli(["construct", name, *HUGE[name], "--dry-run", "--json", "--out", str(out)])
    assert code == 0 and not out.exists()
    d = json.loads(stdout)
    assert d["construction"] == name and d["fits"] is False and d["change"].startswith("lower ")
    assert d["estimate"]["peak_bytes"] > d["memory_available"] > 2 ** 30
    assert d["estimate"]["seconds"] > 0
    code, stdout, _ = cli(["construct", name, *SMALL[name], "--dry-run"])
    assert code == 0
    for words in ("peak memory", "on one core of this machine", "dominated by", "machine memory", "fits", "yes"):
        assert words in stdout


def test_dry_run_numbers_are_the_estimate(cli):
    from attnlab.papers.memorization.construction import MemorizationParams, estimate_memorization

    code, stdout, _ = cli(["construct", "memorization", "--H", "30", "--dry-run", "--json"])
    e = estimate_memorization(MemorizationParams(H=30))
    d = json.loads(stdout)
    assert code == 0 and d["fits"] is True and "change" not in d
    assert d["params"]["H"] == 30 and d["estimate"]["peak_bytes"] == int(e.peak_bytes)
    assert d["estimate"]["what"] == "Z (931 x 1920 float64) and its QR"


def test_a_long_estimate_is_said_on_stderr_before_the_build(cli, monkeypatch):
    monkeypatch.setenv("ATTNLAB_PROGRESS", "1")  # the tests run with it off (tests/conftest.py)
    monkeypatch.setattr(estimates, "ANNOUNCE_SECONDS", 0.0)  # every build counts as long
    code, stdout, err = cli(["construct", "memorization", *SMALL["memorization"]])
    assert code == 0 and "verdict" in stdout
    assert err.startswith("estimated: ") and err.strip().endswith(" on one core of this machine") and len(err.splitlines()) == 1
    monkeypatch.setattr(estimates, "ANNOUNCE_SECONDS", 1e9)  # nothing is that long
    code, _, err = cli(["construct", "memorization", *SMALL["memorization"]])
    assert code == 0 and err == ""


@pytest.mark.parametrize("paper, settings, size", [
    ("memorization", ["H_shared=100000"], "memorization.construction with --set H_shared=100000: the run needs about "
                                          "1,182,558 GiB of memory"),
    ("memorization", ["T_factors=100000"], "memorization.capacity-vs-context with --set T_factors=100000: the run needs "
                                         "about "),
    ("transformer-math", ["n_values=1000000"], "transformer-math.efficient-attention-error with --set "
                                               "n_values=1000000: the run needs about 89,408 GiB of memory"),
    # one translator at a time (workers=1): the peak is one model's, whatever the machine's cores
    ("transformer-math", ["vocab_size=100000000", "workers=1"], "transformer-math.head-structure with --set "
                                                   "vocab_size=100000000 workers=1: the run needs about 1,073 GiB of memory"),
    ("memorization", ["gp_trials=1000000"], "memorization.assumptions with --set gp_trials=1000000: the run needs "
                                            "about "),
    ("transformer-math", ["n=1000000"], "transformer-math.scaling with --set n=1000000: the run needs about "),
    ("logic", ["batch=100000000"], "logic.learning with --set batch=100000000: the run needs about "),
    ("rank-collapse", ["d_model=1000000"], "rank-collapse.bound with --set d_model=1000000: the run needs about "
                                           "59,605 GiB of memory"),
])
def test_reproduce_refuses_sizes_beyond_the_machine_before_writing(cli_error, tmp_path, paper, settings, size):
    out = tmp_path / "run"
    argv = ["reproduce", paper, "--out", str(out)]
    for s in settings:
        argv += ["--set", s]
    line = cli_error(argv)
    assert line.startswith("attnlab: error: " + size) and " GiB of memory (" in line and "; cpu has " in line
    assert not out.exists()
