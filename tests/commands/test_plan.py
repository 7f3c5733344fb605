"""`reproduce --dry-run` and `sweep --dry-run`: every config built as the run builds it, the
estimates printed, nothing run or written (attnlab.commands.plan)."""

from __future__ import annotations

import json

import pytest

from attnlab.commands.plan import plan_reproduce, plan_sweep
from attnlab.errors import AttnlabError
from attnlab.registry import get_experiment
from attnlab.sweeps.spec import SweepSpec, expand


def test_reproduce_dry_run_prints_every_experiment_and_writes_nothing(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(["reproduce", "invertibility", "--dry-run", "--json"])
    assert code == 0, err
    d = json.loads(out)
    assert [e["experiment"] for e in d["experiments"]] == ["invertibility.conditioning",
                                                           "invertibility.embedding-kinds",
                                                           "invertibility.proof-notes", "invertibility.recovery"]
    assert d["fits"] is True and d["time_complete"] is True and d["seconds"] > 0
    assert d["peak_bytes"] == max(e["estimate"]["peak_bytes"] for e in d["experiments"])
    assert list(tmp_path.iterdir()) == []  # no runs/ directory
    code, out, _ = cli(["reproduce", "invertibility", "--dry-run"])
    assert code == 0 and "invertibility.recovery" in out and "fits: peak " in out


def test_a_dry_run_refuses_what_the_run_would_refuse(cli_error):
    line = cli_error(["reproduce", "logic", "--set", "batch=100000000", "--dry-run"])
    assert "logic.learning with --set batch=100000000: the run needs about" in line


def test_json_without_dry_run_is_refused(cli_error, tmp_path):
    assert "--json goes with --dry-run" in cli_error(["reproduce", "logic", "--json", "--out", str(tmp_path / "r")])
    assert not (tmp_path / "r").exists()


def test_an_experiment_without_time_counts_makes_the_total_a_lower_bound():
    plan = plan_reproduce("transformer-math")
    missing = [p.id for p in plan.experiments if not p.timed]
    assert "transformer-math.parameter-counts" in missing and not plan.complete
    assert plan.seconds == pytest.approx(sum(p.estimate.seconds for p in plan.experiments if p.timed))
    assert "not counted" in plan.summary() or "at least" in plan.summary()


def test_a_sweeps_peak_is_its_largest_run_times_the_workers():
    exp = get_experiment("transformer-math.scaling")
    spec = SweepSpec(exp.id, base={}, grid={"d_head": ["8", "64"]}, seeds=2)
    one, two = plan_sweep(exp, spec, workers=1), plan_sweep(exp, spec, workers=2)
    (p1,), (p2,) = one.experiments, two.experiments
    assert p1.runs == p2.runs == 4
    largest = max(r.config.estimate().peak_bytes for r in expand(exp, spec))
    assert p1.estimate.peak_bytes == largest and p2.estimate.peak_bytes == 2 * largest


def test_sweep_dry_run_from_the_command_line(cli):
    code, out, err = cli(["sweep", "transformer-math.scaling", "--grid", "d_head=8,16", "--seeds", "2",
                          "--dry-run", "--json"])
    assert code == 0, err
    (e,) = json.loads(out)["experiments"]
    assert e["experiment"] == "transformer-math.scaling" and e["runs"] == 4


def test_a_bad_grid_value_is_refused_by_the_dry_run_too(cli_error):
    line = cli_error(["sweep", "transformer-math.scaling", "--grid", "d_head=0", "--dry-run"])
    assert "d_head" in line


def test_plan_reproduce_refuses_an_unknown_paper():
    with pytest.raises(AttnlabError, match="unknown paper 'nope'"):
        plan_reproduce("nope")


def test_times_counted_to_a_step_budget_are_printed_as_bounds(cli):
    plan = plan_reproduce("memorization")
    bounded = {p.id for p in plan.experiments if p.timed and p.estimate.time_bound}
    assert {"memorization.saturation", "memorization.capacity-vs-heads"} <= bounded
    assert "memorization.construction" not in bounded and plan.bounded and "at most" in plan.summary()
    code, out, _ = cli(["reproduce", "memorization", "--dry-run"])
    assert code == 0 and "<= " in out


def test_a_parallel_sweeps_summed_time_is_printed_as_a_bound():
    exp = get_experiment("transformer-math.scaling")
    spec = SweepSpec(exp.id, base={}, grid={"d_head": ["8", "64"]}, seeds=2)
    (one,) = plan_sweep(exp, spec, workers=1).experiments
    (two,) = plan_sweep(exp, spec, workers=2).experiments
    assert "workers run side by side" not in one.estimate.time_bound
    assert "the sum over 4 runs that 2 workers run side by side" in two.estimate.time_bound
    assert two.estimate.seconds == pytest.approx(one.estimate.seconds)


def test_only_limits_the_run_to_the_named_experiments(cli):
    code, out, err = cli(["reproduce", "memorization", "--scale", "paper", "--only", "construction",
                          "--only", "memorization.fcn-vs-attention", "--dry-run", "--json"])
    assert code == 0, err
    assert [e["experiment"] for e in json.loads(out)["experiments"]] == ["memorization.construction",
                                                                         "memorization.fcn-vs-attention"]


def test_only_with_an_unknown_name_lists_the_papers_experiments(cli_error):
    line = cli_error(["reproduce", "invertibility", "--only", "nope", "--dry-run"])
    assert line.startswith("attnlab: error: --only nope: not an experiment of invertibility; choose from conditioning, ")


def test_the_plan_gives_a_rated_gpu_time_and_the_cpus_for_cpu_only_experiments(cli):
    from attnlab.estimates import gpu_seconds

    plan = plan_reproduce("memorization", scale="paper", only=["construction", "capacity-vs-heads"])
    by_id = {p.id: p for p in plan.experiments}
    construction, heads = by_id["memorization.construction"], by_id["memorization.capacity-vs-heads"]
    assert construction.cpu_only and construction.gpu_seconds == construction.estimate.seconds
    assert not heads.cpu_only and heads.gpu_seconds == gpu_seconds(heads.estimate) < heads.estimate.seconds
    assert construction.to_dict()["seconds_one_gpu_rated"] == construction.gpu_seconds
    code, out, _ = cli(["reproduce", "memorization", "--scale", "paper", "--only", "construction", "--dry-run"])
    assert code == 0 and "GPU" in out and "rated" in out  # the header breaks between words on a narrow console
