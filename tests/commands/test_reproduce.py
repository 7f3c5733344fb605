"""reproduce(): run order, atomic results after each experiment, resume, errors."""

from __future__ import annotations

import dataclasses
import html
import json
import re
from dataclasses import dataclass

import pytest

import attnlab.commands.reproduce as runner
from attnlab import registry
from attnlab.config import RunConfig
from attnlab.errata import TextError
from attnlab.errors import ConfigError, RunDirError, UnknownNameError
from attnlab.checks import Bound, anchored, at_most, compare, equals, info
from attnlab.registry import Experiment
from attnlab.results import ExperimentResult, line_figure, series
from attnlab.commands.reproduce import RunPath
from helpers import tally_of


@dataclass(frozen=True)
class _Cfg(RunConfig):
    pass


CALLS: list[str] = []


def _ok(name):
    def run(cfg, run_dir):
        import torch

        CALLS.append(name)
        run_dir.append_metric({"experiment": name})
        x = torch.rand(1).item()  # seeded by the runner: same in every experiment
        fig = line_figure(f"{name}.png", "c", xlabel="x", ylabel="y", series=[series("s", [0, 1], [x, 1])])
        return ExperimentResult(summary=[info("x", x)], figures=[fig],
                                data={"x": x, "scale": cfg.scale})
    return run


def _interrupt(cfg, run_dir):
    CALLS.append("b")
    raise KeyboardInterrupt


def _boom(cfg, run_dir):
    CALLS.append("b")
    raise RuntimeError("boom")


class _Experiments(dict):
    """name -> Experiment of a scratch registry; assigning replaces the registered one."""

    def __init__(self, state):
        super().__init__()
        self.state = state

    def __setitem__(self, key, exp):
        super().__setitem__(key, exp)
        self.state.experiments[exp.id] = exp


@pytest.fixture()
def fake():
    """A scratch registry: papers toy (two experiments, no claims) and logic (nothing)."""
    CALLS.clear()
    with registry.scratch() as state:
        registry.register_paper("toy", "A toy paper", "toy.md", package="tests.toy")
        registry.register_paper("logic", "Logic", "logic.md", package="tests.logic")
        exps = _Experiments(state)
        exps["a"] = Experiment("toy.a", "A", _Cfg, _ok("a"))
        exps["b"] = Experiment("toy.b", "B", _Cfg, _ok("b"))
        yield exps


def test_reproduce_writes_a_full_run(fake, tmp_path):
    seen = []
    out = runner.reproduce("toy", out=tmp_path / "r", seed=5, argv=["attnlab", "x"],
                           progress=lambda what, done, total: seen.append((what, done, total)))
    assert CALLS == ["a", "b"]
    assert seen == [("toy.a", 0, 3), ("toy.b", 1, 3), ("claims", 2, 3), ("report", 3, 3)]
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["argv"] == ["attnlab", "x"] and cfg["seed"] == 5 and cfg["scale"] == "quick"
    assert cfg["experiments"]["toy.a"] == {"scale": "quick", "seed": 5, "device": "cpu"}
    res = json.loads((out / "results.json").read_text())
    a, b = res["experiments"]["toy.a"], res["experiments"]["toy.b"]
    assert a["status"] == b["status"] == "ok"
    assert a["results"]["data"]["x"] == b["results"]["data"]["x"]  # reseeded before each
    assert json.loads((out / "env.json").read_text())["seed"] == 5
    assert {p.name for p in (out / "figures").iterdir()} == {"a.png", "b.png"}
    assert (out / "report.html").is_file() and (out / "report.md").is_file()
    # in a notebook the returned path shows its report, the page whole inside the frame's srcdoc
    frame = out._repr_html_()
    assert isinstance(out, RunPath) and frame.startswith("<iframe srcdoc=")
    assert html.unescape(re.search(r'srcdoc="([^"]*)"', frame).group(1)) == (out / "report.html").read_text()


def test_interrupted_run_keeps_finished_work_and_resumes(fake, tmp_path):
    fake["b"] = Experiment("toy.b", "B", _Cfg, _interrupt)
    with pytest.raises(runner.RunInterrupted) as stop:
        runner.reproduce("toy", out=tmp_path / "r")
    assert (stop.value.finished, stop.value.running) == (["toy.a"], "toy.b")
    assert stop.value.resume == f"attnlab reproduce toy --out {tmp_path / 'r'} --resume"
    res = json.loads((tmp_path / "r" / "results.json").read_text())
    assert list(res["experiments"]) == ["toy.a"]
    assert not [p for p in (tmp_path / "r").iterdir() if p.name.endswith(".tmp")]
    with pytest.raises(RunDirError, match="pass --resume"):
        runner.reproduce("toy", out=tmp_path / "r")
    fake["b"] = Experiment("toy.b", "B", _Cfg, _ok("b"))
    CALLS.clear()
    runner.reproduce("toy", out=tmp_path / "r", resume=True, argv=["again"])
    assert CALLS == ["b"]  # a was finished
    cfg = json.loads((tmp_path / "r" / "config.json").read_text())
    assert cfg["resumed"][0]["argv"] == ["again"]


def test_ctrl_c_says_what_is_kept_and_the_command_that_resumes(fake, tmp_path, cli):
    """Ctrl-C inside an experiment: exit status 130, three lines on stderr (that the run stopped, what is kept,
    the command that resumes it), nothing on stdout; the printed command, run as given, finishes the run."""
    import shlex

    out = tmp_path / "my run"
    fake["b"] = Experiment("toy.b", "B", _Cfg, _interrupt)
    code, stdout, err = cli(["reproduce", "toy", "--out", str(out), "--seed", "3"])
    resume = f"attnlab reproduce toy --out '{out}' --resume --seed 3"
    assert code == 130 and stdout == "" and err.splitlines() == [
        "attnlab: reproduce stopped (Ctrl-C) during toy.b",
        f"kept: {out}, with 1 of 2 experiments finished (toy.a); resuming runs toy.b, the claims, the report",
        f"resume: {resume}"], err
    assert list(json.loads((out / "results.json").read_text())["experiments"]) == ["toy.a"]
    fake["b"] = Experiment("toy.b", "B", _Cfg, _ok("b"))
    CALLS.clear()
    code, stdout, err = cli(shlex.split(resume)[1:])
    assert code == 0 and CALLS == ["b"] and f"run directory: {out}" in " ".join(stdout.split()), err
    assert (out / "report.html").is_file()


def test_an_interrupted_sweep_keeps_its_runs_and_a_stop_in_the_report_reruns_the_report_only(tmp_path):
    (tmp_path / "sweeps" / "toy.b").mkdir(parents=True)
    stop = runner.RunInterrupted(tmp_path, ["toy.a"], ["toy.a", "toy.b"], "toy.b", "attnlab reproduce toy ...")
    assert isinstance(stop, KeyboardInterrupt) and stop.lines()[1] == (
        f"kept: {tmp_path}, with 1 of 2 experiments finished (toy.a) and the finished runs of toy.b's sweep "
        "(sweeps/toy.b/); resuming runs toy.b, the claims, the report")
    stop = runner.RunInterrupted(tmp_path, ["toy.a"], ["toy.a"], "report", "x")
    assert stop.lines()[:2] == ["attnlab: reproduce stopped (Ctrl-C) during report",
                                f"kept: {tmp_path}, with 1 of 1 experiment finished (toy.a); resuming runs the report"]


def test_the_resume_command_repeats_every_option_a_resumed_run_must_match(tmp_path):
    cmd = runner.resume_command(["logic", "toy"], tmp_path / "a b", scale="paper", seed=7, device="cuda:1",
                                settings={"smollm2": "true", "cases": "2;3"}, only=["logic.learning"])
    assert cmd == (f"attnlab reproduce logic toy --out '{tmp_path / 'a b'}' --resume --scale paper --seed 7 "
                   "--device cuda:1 --set smollm2=true --set 'cases=2;3' --only logic.learning")


def test_failing_experiment_is_recorded_and_rerun_on_resume(fake, tmp_path):
    fake["b"] = Experiment("toy.b", "B", _Cfg, _boom)
    out = runner.reproduce("toy", out=tmp_path / "r")
    entry = json.loads((out / "results.json").read_text())["experiments"]["toy.b"]
    assert entry["status"] == "error" and "RuntimeError: boom" in entry["error"]
    assert "RuntimeError: boom" in (out / "report.html").read_text()
    fake["b"] = Experiment("toy.b", "B", _Cfg, _ok("b"))
    CALLS.clear()
    runner.reproduce("toy", out=out, resume=True)
    assert CALLS == ["b"]


def test_resume_with_other_options_is_refused(fake, tmp_path):
    runner.reproduce("toy", out=tmp_path / "r", seed=1)
    with pytest.raises(ConfigError, match="different seed"):
        runner.reproduce("toy", out=tmp_path / "r", seed=2, resume=True)


def test_default_out_is_under_runs(fake, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = runner.reproduce("toy")
    assert out.parent.name == "runs" and out.name.startswith("toy-20")


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(paper="nope"), UnknownNameError, "unknown paper 'nope'"),
    (dict(paper="logic"), ConfigError, "'logic' has no experiments yet; papers with experiments: toy"),
    (dict(paper="toy", scale="huge"), ConfigError, "--scale must be one of quick, paper"),
    (dict(paper="toy", device="tpu"), ConfigError, "--device: unknown device 'tpu'; use cpu, cuda or cuda:N"),
    (dict(paper="toy", seed=-1), ConfigError, r"--seed must be an integer in \[0, 4294967295\]"),
    (dict(paper=[]), ConfigError, "name at least one paper"),
])
def test_bad_input_fails_before_writing(fake, tmp_path, kwargs, error, message):
    with pytest.raises(error, match=message):
        runner.reproduce(out=tmp_path / "r", **kwargs)
    assert not (tmp_path / "r").exists()


@dataclass(frozen=True)
class _CfgN(RunConfig):
    n: int = 1
    flag: bool = False


def test_set_reaches_every_experiment_with_the_field_and_only_those(fake, tmp_path):
    fake["c"] = Experiment("toy.c", "C", _CfgN, _ok("c"))
    out = runner.reproduce("toy", out=tmp_path / "r", settings={"n": "3", "flag": "true"})
    cfg = json.loads((out / "config.json").read_text())["experiments"]
    assert cfg["toy.c"] == {"scale": "quick", "seed": 0, "device": "cpu", "n": 3, "flag": True}
    assert cfg["toy.a"] == {"scale": "quick", "seed": 0, "device": "cpu"}


@pytest.mark.parametrize("settings, message", [
    ({"zzz": "1"}, "--set zzz: no experiment of this run has a config field 'zzz'"),
    ({"seed": "3"}, "--set seed: seed is set by --seed"),
    ({"scale": "paper"}, "--set scale: scale is set by --scale"),
    ({"n": "many"}, "--set n=many"),
])
def test_bad_set_fails_before_writing(fake, tmp_path, settings, message):
    fake["c"] = Experiment("toy.c", "C", _CfgN, _ok("c"))
    with pytest.raises(ConfigError, match=message):
        runner.reproduce("toy", out=tmp_path / "r", settings=settings)
    assert not (tmp_path / "r").exists()


def test_cuda_without_cuda(fake, tmp_path, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ConfigError, match="^--device: device cuda: CUDA is not available on this machine; use cpu$"):
        runner.reproduce("toy", out=tmp_path / "r", device="cuda")


# ---- experiments outside reproduce, and experiments that reproduce runs as sweeps -----------
def test_in_reproduce_false_is_skipped(fake, tmp_path):
    fake["c"] = Experiment("toy.c", "C", _Cfg, _ok("c"), in_reproduce=False)
    out = runner.reproduce("toy", out=tmp_path / "r")
    assert CALLS == ["a", "b"]
    res = json.loads((out / "results.json").read_text())
    assert set(res["experiments"]) == {"toy.a", "toy.b"}
    assert "toy.c" not in json.loads((out / "config.json").read_text())["experiments"]


def test_a_paper_with_only_skipped_experiments_has_none(fake, tmp_path):
    for k in list(fake):
        fake[k] = dataclasses.replace(fake[k], in_reproduce=False)
    with pytest.raises(ConfigError, match="'toy' has no experiments yet"):
        runner.reproduce("toy", out=tmp_path / "r")


def _selftest_sweep(rows_seen):
    from attnlab.registry import SweepPlan

    selftest = _SELFTEST  # the plugin's experiment (tests/fixtures/selftest_paper.py)

    def aggregate(rows):
        rows_seen.append(rows)
        xs = [r["x_n"] for r in rows]
        fig = line_figure("selftest-sweep.png", "c", xlabel="n", ylabel="x n",
                          series=[series("x n", [r["n"] for r in rows], xs)])
        return ExperimentResult(summary=[equals(len(rows), 4, quantity="runs", role="sanity")], figures=[fig],
                                data={"x_n": xs})

    return Experiment("toy.sweep", "sweep", selftest.config_cls, selftest.run,
                      reproduce_sweep=lambda scale: SweepPlan(grid={"n": [3, 5]}, seeds=2, base={"x": 2.0}),
                      aggregate=aggregate)


_SELFTEST = registry.get_experiment("selftest.sweep")


def test_sweep_experiment_runs_its_plan_and_stores_the_aggregate(fake, tmp_path):
    seen: list = []
    fake["s"] = _selftest_sweep(seen)
    progress = []
    out = runner.reproduce("toy", out=tmp_path / "r", seed=7, sweep_executor="inline",
                           progress=lambda what, done, total: progress.append(what))
    sid = "toy.sweep"
    rows = seen[0]
    assert [(r["n"], r["seed"], r["status"]) for r in rows] == [(3, 7, "ok"), (3, 8, "ok"), (5, 7, "ok"), (5, 8, "ok")]
    assert [r["x_n"] for r in rows] == [6.0, 6.0, 10.0, 10.0]
    entry = json.loads((out / "results.json").read_text())["experiments"][sid]
    assert entry["status"] == "ok" and entry["results"]["data"]["x_n"] == [6.0, 6.0, 10.0, 10.0]
    assert entry["sweep"] == {"table": f"sweeps/{sid}/results.csv", "ok": 4, "failed": 0, "skipped": 0}
    assert (out / "sweeps" / sid / "results.csv").is_file()
    assert len(list((out / "sweeps" / sid / "runs").iterdir())) == 4
    assert (out / "figures" / "selftest-sweep.png").is_file()
    assert f"{sid} (4/4 runs)" in progress
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["sweeps"][sid]["grid"] == {"n": [3, 5]} and cfg["sweeps"][sid]["seed0"] == 7


def test_failed_sweep_runs_are_an_error_and_resume_reruns_only_them(fake, tmp_path, monkeypatch):
    sid = "toy.sweep"
    fake["s"] = real = _selftest_sweep([])

    def fails_at_5(cfg, run_dir):
        if cfg.n == 5:
            raise RuntimeError("n=5 breaks")
        return real.run(cfg, run_dir)

    fake["s"] = dataclasses.replace(real, run=fails_at_5)
    out = runner.reproduce("toy", out=tmp_path / "r", sweep_executor="inline")
    entry = json.loads((out / "results.json").read_text())["experiments"][sid]
    assert entry["status"] == "error" and "2 of 4 sweep runs failed" in entry["error"]
    assert entry["sweep"] == {"table": f"sweeps/{sid}/results.csv", "ok": 2, "failed": 2, "skipped": 0}
    fake["s"] = real
    CALLS.clear()
    runner.reproduce("toy", out=out, resume=True, sweep_executor="inline")
    entry = json.loads((out / "results.json").read_text())["experiments"][sid]
    assert CALLS == [] and entry["status"] == "ok"  # a and b were finished
    assert entry["sweep"]["skipped"] == 2 and entry["sweep"]["ok"] == 4  # the n=3 runs were kept


@pytest.mark.slow
def test_reproduce_quick_runs_the_scaling_sweep_into_the_report(tmp_path, monkeypatch):
    """`attnlab reproduce transformer-math --scale quick` end to end for the scaling experiment,
    on two of its five d_head values and one seed (quick configs, 2 processes). The full quick
    plan (5 d_head x 3 seeds) runs in tests/cli/test_reproduce_cli.py with the other experiments."""
    from attnlab.cli import main
    from attnlab.registry import SweepPlan, get_experiment

    sid = "transformer-math.scaling"
    scaling = get_experiment(sid)
    assert scaling.reproduce_sweep("quick").grid["d_head"] == [8, 16, 32, 64, 128]
    smaller = dataclasses.replace(scaling, reproduce_sweep=lambda scale: SweepPlan(grid={"d_head": [16, 64]}))
    monkeypatch.setattr(runner, "all_experiments", lambda: [smaller])
    monkeypatch.setattr(runner, "_run_claims", lambda papers, seed: [])
    out = tmp_path / "run"
    try:
        main(["reproduce", "transformer-math", "--scale", "quick", "--out", str(out)])
    except SystemExit as e:
        assert e.code == 0
    entry = json.loads((out / "results.json").read_text())["experiments"][sid]
    assert entry["status"] == "ok" and entry["sweep"]["ok"] == 2 and entry["sweep"]["failed"] == 0
    res = entry["results"]
    assert res["data"]["d_head"] == [16, 64] and res["data"]["seeds"] == {"16": 1, "64": 1}
    # measured: see the test module of the experiment (that the scaled runs train is a check of attnlab's setup)
    # the steps to learn are measured on the copy task, a deviation with no control: inconclusive
    steps = [r for r in res["summary"] if r["quantity"].startswith("mean steps to loss")]
    assert len(steps) == 1 and steps[0]["verdict"] == "inconclusive" and "copy-task" in steps[0]["reason"]
    assert {r["verdict"] for r in res["summary"] if r not in steps} == {"reproduced", "sanity"}
    assert res["data"]["reached"]["scaled"] == [1, 1]
    figures = {"scaling-steps-to-threshold.png", "scaling-initial-gradient.png", "scaling-initial-entropy.png"}
    assert {p.name for p in (out / "figures").iterdir()} == figures
    md = (out / "report.md").read_text()
    assert all(f"figures/{f}" in md for f in figures)
    rows = (out / "sweeps" / sid / "results.csv").read_text().splitlines()
    assert len(rows) == 3 and "scaled_steps_to_threshold" in rows[0]


def test_an_experiment_better_on_the_cpu_runs_there_inside_a_cuda_run_and_says_so(fake, tmp_path, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # no GPU is touched: the runs record devices
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "a test GPU")
    seen = {}

    def record(name):
        def run(cfg, run_dir):
            seen[name] = cfg.device
            return ExperimentResult(notes=["its own note"])
        return run

    fake["a"] = Experiment("toy.a", "A", _Cfg, record("a"))
    fake["b"] = Experiment("toy.b", "B", _Cfg, record("b"), cpu_only="small float64 problems")
    out = runner.reproduce("toy", out=tmp_path / "r", device="cuda")
    assert seen == {"a": "cuda", "b": "cpu"}
    res = json.loads((out / "results.json").read_text())["experiments"]
    assert res["toy.b"]["config"]["device"] == "cpu"
    assert res["toy.b"]["results"]["notes"] == ["Ran on the CPU inside a cuda run: small float64 problems.",
                                                 "its own note"]
    assert res["toy.a"]["results"]["notes"] == ["its own note"]
    assert "Ran on the CPU inside a cuda run" in (out / "report.md").read_text()
    seen.clear()
    runner.reproduce("toy", out=tmp_path / "cpu-run")
    assert seen == {"a": "cpu", "b": "cpu"}
    cpu = json.loads((tmp_path / "cpu-run" / "results.json").read_text())["experiments"]
    assert cpu["toy.b"]["results"]["notes"] == ["its own note"]  # nothing to say on a CPU run


def _rows(*checks):
    def run(cfg, run_dir):
        return ExperimentResult(summary=list(checks))
    return run


with anchored("toy.eq1", "1 + 1 measured as something else than 2", "toy.eq1"):  # the toy text's statement
    EXITS = [
        ((at_most(0.1, 0.2),), 0, 0),                                             # reproduced
        ((at_most(0.3, 0.2), compare("s", 0.0, "<=", 1e-9, role="sanity")), 0, 1),  # differs
        ((at_most(Bound.at_least(5), 10),), 0, 1),                                # inconclusive (censored)
        ((at_most(0.3, 0.2, role="construction"),), 1, 1),                        # fail: a bug
        ((at_most(0.3, 0.2, role="own", anchor="", falsifier="", erratum=""),), 0, 1),  # refuted
    ]


@pytest.mark.parametrize("checks, plain, strict", EXITS)
def test_reproduce_exits_1_only_on_fail_or_error_and_strict_also_on_differs_and_inconclusive(
        fake, tmp_path, capsys, checks, plain, strict):
    from attnlab.cli import main

    fake["a"] = Experiment("toy.a", "A", _Cfg, _rows(*checks))
    fake["b"] = Experiment("toy.b", "B", _Cfg, _rows(info("n", 3)))
    if not registry.all_errata(["toy"]):
        registry.register_errata([TextError("toy.eq1", "§1, eq. 1", "1 + 1 = 3", "1 + 1 = 2", "the text", "typo",
                                            "count two fingers", "yes")])
    for flag, expected in (([], plain), (["--strict"], strict)):
        out = tmp_path / f"r{len(flag)}"
        with pytest.raises(SystemExit) as exit_:
            main(["reproduce", "toy", "--out", str(out), *flag])
        assert (exit_.value.code or 0) == expected, flag
        last = tally_of(capsys.readouterr().out)
        n = len(checks) + 1
        assert last.startswith(f"{n} checks · the texts: ") and last.endswith(" 1 info"), last
    md = (out / "report.md").read_text()
    assert md.index("Where the measurements differ from the text") < md.index("## toy.a")
    assert "## Errors in the text" in md and "count two fingers" in md
    assert json.loads((out / "results.json").read_text())["errata"][0]["id"] == "toy.eq1"
