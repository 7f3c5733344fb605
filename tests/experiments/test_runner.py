"""reproduce(): run order, atomic results after each experiment, resume, errors."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

import attnlab.experiments.runner as runner
from attnlab.errors import ConfigError, RunDirError, UnknownNameError
from attnlab.experiments.registry import Experiment
from attnlab.reports.figures import line_figure, series


@dataclass(frozen=True)
class _Cfg:
    scale: str = "quick"
    seed: int = 0


CALLS: list[str] = []


def _ok(name):
    def run(cfg, run_dir):
        import torch

        CALLS.append(name)
        run_dir.append_metric({"experiment": name})
        x = torch.rand(1).item()  # seeded by the runner: same in every experiment
        fig = line_figure(f"{name}.png", "c", xlabel="x", ylabel="y", series=[series("s", [0, 1], [x, 1])])
        return {"summary": [{"quantity": "x", "paper_value": None, "measured": x, "expected": "-",
                             "status": "info"}], "figures": [fig], "data": {"x": x, "scale": cfg.scale}}
    return run


def _interrupt(cfg, run_dir):
    CALLS.append("b")
    raise KeyboardInterrupt


def _boom(cfg, run_dir):
    CALLS.append("b")
    raise RuntimeError("boom")


@pytest.fixture()
def fake(monkeypatch):
    """Two fake transformer-math experiments, no claims."""
    CALLS.clear()
    exps = {"a": Experiment("transformer-math.a", "A", _Cfg, _ok("a")),
            "b": Experiment("transformer-math.b", "B", _Cfg, _ok("b"))}
    monkeypatch.setattr(runner, "all_experiments", lambda: sorted(exps.values(), key=lambda e: e.id))
    monkeypatch.setattr(runner, "_run_claims", lambda papers, seed: [])
    return exps


def test_reproduce_writes_a_full_run(fake, tmp_path):
    seen = []
    out = runner.reproduce("transformer-math", out=tmp_path / "r", seed=5, argv=["attnlab", "x"],
                           progress=lambda what, done, total: seen.append((what, done, total)))
    assert CALLS == ["a", "b"]
    assert seen == [("transformer-math.a", 0, 3), ("transformer-math.b", 1, 3), ("claims", 2, 3), ("report", 3, 3)]
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["argv"] == ["attnlab", "x"] and cfg["seed"] == 5 and cfg["scale"] == "quick"
    assert cfg["experiments"]["transformer-math.a"] == {"scale": "quick", "seed": 5}
    res = json.loads((out / "results.json").read_text())
    a, b = res["experiments"]["transformer-math.a"], res["experiments"]["transformer-math.b"]
    assert a["status"] == b["status"] == "ok"
    assert a["results"]["data"]["x"] == b["results"]["data"]["x"]  # reseeded before each
    assert json.loads((out / "env.json").read_text())["seed"] == 5
    assert {p.name for p in (out / "figures").iterdir()} == {"a.png", "b.png"}
    assert (out / "report.html").is_file() and (out / "report.md").is_file()


def test_interrupted_run_keeps_finished_work_and_resumes(fake, tmp_path):
    fake["b"] = Experiment("transformer-math.b", "B", _Cfg, _interrupt)
    with pytest.raises(KeyboardInterrupt):
        runner.reproduce("transformer-math", out=tmp_path / "r")
    res = json.loads((tmp_path / "r" / "results.json").read_text())
    assert list(res["experiments"]) == ["transformer-math.a"]
    assert not [p for p in (tmp_path / "r").iterdir() if p.name.endswith(".tmp")]
    with pytest.raises(RunDirError, match="pass --resume"):
        runner.reproduce("transformer-math", out=tmp_path / "r")
    fake["b"] = Experiment("transformer-math.b", "B", _Cfg, _ok("b"))
    CALLS.clear()
    runner.reproduce("transformer-math", out=tmp_path / "r", resume=True, argv=["again"])
    assert CALLS == ["b"]  # a was finished
    cfg = json.loads((tmp_path / "r" / "config.json").read_text())
    assert cfg["resumed"][0]["argv"] == ["again"]


def test_failing_experiment_is_recorded_and_rerun_on_resume(fake, tmp_path):
    fake["b"] = Experiment("transformer-math.b", "B", _Cfg, _boom)
    out = runner.reproduce("transformer-math", out=tmp_path / "r")
    entry = json.loads((out / "results.json").read_text())["experiments"]["transformer-math.b"]
    assert entry["status"] == "error" and "RuntimeError: boom" in entry["error"]
    assert "RuntimeError: boom" in (out / "report.html").read_text()
    fake["b"] = Experiment("transformer-math.b", "B", _Cfg, _ok("b"))
    CALLS.clear()
    runner.reproduce("transformer-math", out=out, resume=True)
    assert CALLS == ["b"]


def test_resume_with_other_options_is_refused(fake, tmp_path):
    runner.reproduce("transformer-math", out=tmp_path / "r", seed=1)
    with pytest.raises(ConfigError, match="different seed"):
        runner.reproduce("transformer-math", out=tmp_path / "r", seed=2, resume=True)


def test_default_out_is_under_runs(fake, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = runner.reproduce("transformer-math")
    assert out.parent.name == "runs" and out.name.startswith("transformer-math-20")


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(paper="nope"), UnknownNameError, "unknown paper 'nope'"),
    (dict(paper="logic"), ConfigError, "'logic' has no experiments yet; papers with experiments: transformer-math"),
    (dict(paper="transformer-math", scale="huge"), ConfigError, "--scale must be one of quick, paper"),
    (dict(paper="transformer-math", device="tpu"), ConfigError, "use --device cpu or --device cuda"),
    (dict(paper="transformer-math", seed=-1), ConfigError, "--seed must be a non-negative integer"),
    (dict(paper=[]), ConfigError, "name at least one paper"),
])
def test_bad_input_fails_before_writing(fake, tmp_path, kwargs, error, message):
    with pytest.raises(error, match=message):
        runner.reproduce(out=tmp_path / "r", **kwargs)
    assert not (tmp_path / "r").exists()


def test_cuda_without_cuda(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ConfigError, match="^CUDA is not available on this machine; use --device cpu$"):
        runner.resolve_device("cuda")
