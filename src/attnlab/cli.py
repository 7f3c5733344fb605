"""The ``attnlab`` command line: dispatch only.

Every command prints one line on stderr and exits with status 2 on bad input
(an :class:`attnlab.errors.AttnlabError` or a usage error), never a traceback.
"""

from __future__ import annotations

import functools
import os
import sys
from typing import Any, Callable, Optional

import typer
from typer.core import TyperCommand

from attnlab.commands.console import console, err_console, print_json, progress_bar, say
from attnlab.commands.plain_help import PlainCommand, PlainGroup
from attnlab.config import check_device, check_int, check_seed, shorten_numbers
from attnlab.errors import AttnlabError, ConfigError

app = typer.Typer(
    name="attnlab",
    help="The mathematics of attention, executable: claims, constructions, experiments, benchmarks.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    cls=PlainGroup,
)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            v = version("attnlab")
        except PackageNotFoundError:  # run from a source tree that is not installed
            v = "unknown (not installed)"
        say(console, f"attnlab {v}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print attnlab's version and exit."),
) -> None:
    """The mathematics of attention, executable: claims, constructions, experiments, benchmarks."""


@app.command()
def verify(
    papers: Optional[list[str]] = typer.Argument(
        None, metavar="name or id",
        help="Paper short names, claim ids, id prefixes or globs such as '*.theorem1*' (default: all)."
    ),
    seed: int = typer.Option(0, help="Seed for the inputs every check draws (0 <= seed < 2**32)."),
    as_json: bool = typer.Option(False, "--json", help="Print results as JSON."),
    strict: bool = typer.Option(False, "--strict", help="Also exit 1 on differs, refuted and inconclusive "
                                                        "verdicts."),
) -> None:
    """Run the papers' executable claims and print measured against paper values.

    A claim anchored to its text's ledger (a quoted statement) is reproduced, differs (the
    text's statement does not hold) or inconclusive (the measurement cannot decide);
    attnlab's own statements beyond the texts hold, are refuted or are inconclusive, in a
    table of their own; sanity rows test attnlab's code; fail is a bug in attnlab; info
    compares with nothing. The last line counts the texts' rows (differs also as distinct
    findings), attnlab's own and the rest. Exit status 0 when no claim fails or raises;
    with --strict 1 also when a claim differs, is refuted or is inconclusive; 2 for an
    unknown name, a paper without claims yet, or a bad seed.
    """
    from attnlab.checks import exit_status
    from attnlab.registry import select_claims

    check_seed(seed, "--seed")
    claims = select_claims(papers)
    results = []
    with progress_bar(disable=as_json) as progress:
        for c in progress.track(claims, description="verifying claims"):
            results.append(c.run(seed))
    if as_json:
        print_json([r.to_dict() for r in results])
    else:
        from attnlab.commands.verify import print_claims

        print_claims(console, err_console, results, seed)
    if exit_status([r.verdict for r in results], strict=strict):
        raise typer.Exit(1)


@app.command()
def errata(
    papers: Optional[list[str]] = typer.Argument(None, metavar="name", help="Paper short names (default: all)."),
    as_json: bool = typer.Option(False, "--json", help="Print the records as JSON."),
) -> None:
    """List the errors found in the texts: where, what the text says, what is right, whose
    error it is (the text, or the source it copies), the kind, the witness, whether the
    conclusion survives, and the claim or experiment that measures it."""
    from attnlab.registry import all_errata, get_paper

    for p in papers or []:
        get_paper(p)
    records = all_errata(list(papers) if papers else None)
    if as_json:
        print_json([e.to_dict() for e in records])
        return
    from attnlab.commands.catalogue import print_errata

    print_errata(console, records)


@app.command()
def coverage(
    papers: Optional[list[str]] = typer.Argument(None, metavar="name", help="Paper short names (default: all)."),
    run: Optional[str] = typer.Option(None, "--run", metavar="folder",
                                      help="A run directory of `attnlab reproduce`: its experiments' rows and "
                                           "verdicts."),
    verdicts: bool = typer.Option(True, "--verdicts/--no-verdicts", help="Run the anchored claims (seconds) "
                                                                         "for their verdicts."),
    as_json: bool = typer.Option(False, "--json", help="Print the ledgers as JSON."),
) -> None:
    """Print each text's ledger: every statement of the text that can be checked or bears on a
    check, quoted, with the claims, experiments and constructions that check it and their
    verdicts, or the reason no row does (a definition, a citation, data not available offline)."""
    from attnlab.commands.coverage import coverage as run_coverage
    from attnlab.commands.coverage import print_coverage

    experiments = None
    if run is not None:
        from attnlab.runs.rundir import load_run

        experiments = dict(load_run(run).results.get("experiments") or {})
    with progress_bar(disable=as_json or not verdicts) as progress:
        task = progress.add_task("running the anchored claims", total=None)
        results = run_coverage(papers, claims=verdicts, run_experiments=experiments,
                               on_claim=lambda cid: progress.update(task, description=cid))
    if as_json:
        print_json([c.to_dict() for c in results])
    else:
        print_coverage(console, results, ran_claims=verdicts, run_dir=run)


@app.command("list")
def list_(
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """List papers, claims, experiments and constructions (with their parameters)."""
    from attnlab.commands.catalogue import catalogue, print_catalogue

    if as_json:
        print_json(catalogue())
    else:
        print_catalogue(console)


@app.command()
def reproduce(
    papers: list[str] = typer.Argument(..., metavar="name", help="Paper short names (`attnlab list` shows them)."),
    scale: str = typer.Option("quick", metavar="name",
                              help="quick (minutes on a laptop CPU) or paper (the paper's sizes)."),
    out: Optional[str] = typer.Option(None, metavar="folder",
                                      help="Run directory (default runs/<paper>-<UTC time>)."),
    seed: int = typer.Option(0, help="Seed for every random draw (0 <= seed < 2**32)."),
    device: str = typer.Option("cpu", metavar="name", help="cpu, cuda or cuda:N."),
    resume: bool = typer.Option(False, "--resume", help="Continue the run in --out, skipping finished experiments."),
    strict: bool = typer.Option(False, "--strict", help="Also exit 1 on differs, refuted and inconclusive "
                                                        "verdicts."),
    set_: Optional[list[str]] = typer.Option(
        None, "--set", metavar="key=value",
        help="A config value for every experiment with that field, replacing the scale's preset (repeatable), "
             "e.g. --set smollm2=true. Lists: 3,11,64 (or 3;11;64)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print each experiment's estimated memory and time; "
                                                          "run and write nothing."),
    as_json: bool = typer.Option(False, "--json", help="With --dry-run: the estimates as JSON."),
    only: Optional[list[str]] = typer.Option(
        None, "--only", metavar="name",
        help="Run only this experiment of the paper (repeatable), e.g. --only construction; the claims run as "
             "always."),
) -> None:
    """Run a paper's experiments into a run directory with an HTML and a Markdown report.

    The report opens with the count of each verdict and the rows where the measurements
    differ from the text. Exit status 1 if an experiment raised or a check failed (a bug
    in attnlab); with --strict also if any row differs from the text, refutes attnlab's own
    statement or is inconclusive; 130 on Ctrl-C, which prints the run directory, the
    experiments it keeps and the command that resumes the run (--out DIR --resume).
    --dry-run builds every config as the run would (sizes beyond the machine are refused,
    exit 2) and prints what each experiment is estimated to need, then exits 0.
    """
    from attnlab.checks import exit_status
    from attnlab.commands.reproduce import RunInterrupted, print_outcome
    from attnlab.commands.reproduce import reproduce as run_reproduce

    if as_json and not dry_run:
        raise ConfigError("--json goes with --dry-run (a run's results are in its run directory)")
    if dry_run:
        from attnlab.commands.plan import plan_reproduce

        _print_plan(plan_reproduce(papers, scale=scale, seed=seed, device=device,
                                   settings=_key_values(set_ or [], "--set", "smollm2=true"), only=only),
                    f"attnlab reproduce {' '.join(papers)} --scale {scale} --dry-run (nothing run)", as_json)
        return
    _check_out_path(out, "--out", default="runs")
    if resume:
        _check_resume(out, "config.json", "run")
    argv = ["attnlab", *sys.argv[1:]] if sys.argv and sys.argv[0] else []
    try:
        with progress_bar() as progress:
            task = progress.add_task("starting", total=None)

            def on_progress(what: str, done: int, total: int) -> None:
                progress.update(task, description=what, completed=done, total=total)

            path = run_reproduce(papers, scale=scale, out=out, seed=seed, device=device,
                                 argv=argv, resume=resume, progress=on_progress,
                                 settings=_key_values(set_ or [], "--set", "smollm2=true"), only=only)
    except RunInterrupted as e:  # what is kept and the command that resumes it
        for line in e.lines():
            err_console.print(line, highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(130)
    if exit_status(print_outcome(console, err_console, path), strict=strict):
        raise typer.Exit(1)


def _print_plan(plan: Any, title: str, as_json: bool) -> None:
    """A dry run's plan: as JSON, or as the table :func:`attnlab.commands.plan.print_plan` prints."""
    from attnlab.commands.plan import print_plan

    if as_json:
        print_json(plan.to_dict())
    else:
        print_plan(console, plan, title)


@app.command()
def report(
    run_dir: str = typer.Argument(..., metavar="folder", help="A run directory written by `attnlab reproduce`."),
) -> None:
    """Rebuild report.html and report.md of RUN_DIR from its stored results."""
    from pathlib import Path

    from attnlab.reports import build_report
    from attnlab.runs.rundir import CONFIG, check_writable

    if (Path(run_dir) / CONFIG).is_file():  # a run directory: its reports must be writable before rebuilding
        check_writable(run_dir, "RUN_DIR")

    html_path, md_path = build_report(run_dir)
    say(console, f"report: {html_path}")
    say(console, f"report: {md_path}")


def _key_values(options: list[str], flag: str, example: str) -> dict[str, str]:
    """'key=value' options as a dict; ConfigError for a missing '=' or a repeated key."""

    out: dict[str, str] = {}
    for opt in options:
        key, eq, value = opt.partition("=")
        key = key.strip()
        if not eq or not key:
            raise ConfigError(f"{flag} expects key=value, e.g. {flag} {example}, got {opt!r}")
        if key in out:
            raise ConfigError(f"{flag} {key} is given twice; give each key once")
        out[key] = value.strip()
    return out


@app.command()
def sweep(
    experiment: str = typer.Argument(..., metavar="id",
                                     help="A registered experiment id (`attnlab list` shows them)."),
    set_: Optional[list[str]] = typer.Option(
        None, "--set", metavar="key=value",
        help="A fixed config value (repeatable). Lists: 3,11,64 (or 3;11;64). Bools: true/false."),
    grid: Optional[list[str]] = typer.Option(
        None, "--grid", metavar="key=v1,v2,...",
        help="Values to sweep, separated by commas (repeatable; the Cartesian product runs). A list as one value: "
             "3;11;64."),
    seeds: int = typer.Option(1, "--seeds", help="K seeds per grid point: --seed, --seed+1, ..., --seed+K-1."),
    seed: int = typer.Option(0, "--seed", help="The first seed (0 <= seed < 2**32)."),
    out: Optional[str] = typer.Option(None, metavar="folder",
                                      help="Sweep directory (default runs/sweep-<experiment>-<UTC time>)."),
    resume: bool = typer.Option(False, "--resume", help="Continue the sweep in --out, skipping finished runs."),
    workers: Optional[int] = typer.Option(None, help="Parallel runs (default min(cores, runs))."),
    executor: str = typer.Option("process", metavar="name", help="inline, process or dask (a LocalCluster)."),
    scheduler: Optional[str] = typer.Option(None, metavar="address",
                                            help="Dask scheduler address tcp://host:port (shared filesystem)."),
    device: str = typer.Option("cpu", metavar="name", help="cpu, cuda or cuda:N."),
    as_json: bool = typer.Option(False, "--json", help="Print counts and rows as JSON."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the runs' estimated memory and time; run and "
                                                          "write nothing."),
) -> None:
    """Run EXPERIMENT over a grid of configs and seeds, resumably, in parallel.

    Writes results.csv (one row per run), summary.json and runs/<run_id>/ in --out.

    Exit status 1 if any run failed; 130 on Ctrl-C (finished runs are kept, --resume continues).
    --dry-run validates every run's config and prints what they are estimated to need.
    """
    from pathlib import Path

    from attnlab.runs.rundir import default_run_dir
    from attnlab.commands.sweep import print_sweep_table
    from attnlab.sweeps import SweepInterrupted, SweepSpec, describe, run_sweep

    _check_out_path(out, "--out", default=None if dry_run else "runs")
    if resume:
        _check_resume(out, "sweep.json", "sweep")
    base = _key_values(set_ or [], "--set", "x=1.5")
    grid_values = {k: v.split(",") for k, v in _key_values(grid or [], "--grid", "n=3,5,7").items()}
    spec = SweepSpec(experiment, base=base, grid=grid_values, seeds=seeds, seed0=seed)
    if dry_run:
        from attnlab.commands.plan import plan_sweep
        from attnlab.registry import get_experiment

        _print_plan(plan_sweep(get_experiment(experiment), spec, check_device(device, "--device"), workers),
                    f"attnlab sweep {experiment} --dry-run (nothing run)", as_json)
        return
    if out is None:
        out = str(default_run_dir(f"sweep-{experiment}"))
    argv = ["attnlab", *sys.argv[1:]] if sys.argv and sys.argv[0] else []

    def on_failure(run_id: str, error: str, log: Path) -> None:
        say(err_console, f"run {run_id} failed: {error} (log: {log})")

    try:
        with progress_bar(disable=as_json) as progress:
            bar = progress.add_task(f"sweep {experiment}", total=None)
            result = run_sweep(
                spec, Path(out), resume=resume, workers=workers, scheduler=scheduler, executor=executor,
                device=device, on_failure=on_failure, argv=argv,
                progress=lambda done, total: progress.update(bar, completed=done, total=total),
            )
    except SweepInterrupted as e:
        err_console.print(f"attnlab: {e}", highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(130)
    if as_json:
        print_json(describe(result))
    else:
        print_sweep_table(console, result)
    if result.n_failed:
        raise typer.Exit(1)


@app.command()
def bench(
    n: Optional[str] = typer.Option(
        None, "--n", metavar="n1,n2,...",
        help="Comma-separated sequence lengths (default 512,...,16384; --quick: 512,...,4096)."),
    variant: Optional[list[str]] = typer.Option(
        None, "--variant", metavar="name",
        help="A variant to time (repeatable; default all). Fused SDPA is always timed."),
    dtype: str = typer.Option("float32", metavar="name", help="float32, float64 or bfloat16."),
    device: str = typer.Option("cpu", metavar="name", help="cpu, cuda or cuda:N."),
    threads: Optional[int] = typer.Option(None, help="torch threads (default: torch's choice)."),
    repeats: int = typer.Option(5, help="Timed calls per measurement (median and IQR reported)."),
    quick: bool = typer.Option(False, "--quick", help="n = 512..4096, 3 repeats (1 to 3 minutes)."),
    as_json: bool = typer.Option(False, "--json", help="Print the full result as JSON."),
    out: Optional[str] = typer.Option(None, metavar="folder", help="Directory for bench.json and bench-time.png."),
) -> None:
    """Time and size every attention variant against PyTorch's fused SDPA, in one run.

    Prints per variant and n: median time, GFLOP/s, % of the matmul ceiling of the
    device and dtype (measured in the same run), peak memory of one forward, and the
    ratio to the fused call that computes the same thing (plain, causal or key-padded
    SDPA); then the crossover n per variant and the targets at n = 8192 with
    pass/fail (a memory slope is measured in 3 to 9 repeats until its verdict is
    stable, else "inconclusive: noisy"). SDPA's backends (flash, memory-efficient, math) are timed one by one
    where they run. Variants that materialise n x n are
    skipped above n = 8192. The full run (n up to 16384) takes 5 to 15 minutes on
    2 cores (FlexAttention compiles once per n); --quick 1 to 3. Exit status 0
    whether or not the targets pass.
    """
    from attnlab.bench import PRESETS, BenchConfig, parse_n_list, run_bench
    from attnlab.commands.bench import bench_out_dir, print_bench, write_bench

    check_int("--repeats", repeats, minimum=1)
    if threads is not None:
        check_int("--threads", threads, minimum=1)
    if out is not None:
        _check_out_path(out, "--out")
    ns = parse_n_list(n) if n is not None else PRESETS["quick" if quick else "full"]
    cfg = BenchConfig(n=ns, variants=tuple(variant) if variant else None, dtype=dtype, threads=threads,
                      repeats=3 if quick and repeats == 5 else repeats, device=check_device(device, "--device"))
    out_dir = bench_out_dir(out)
    with progress_bar(disable=as_json) as progress:
        task = progress.add_task("bench", total=None)
        result = run_bench(cfg, progress=lambda what, done, total: progress.update(
            task, description=what, completed=done, total=total)).to_dict()
    if out_dir is not None:
        write_bench(out_dir, result)
    if as_json:
        print_json(result)
        return
    print_bench(console, result)
    if out_dir is not None:
        say(console, f"results: {out_dir / 'bench.json'}")


@app.command()
def analyze(
    model: str = typer.Option("minilm", metavar="name or path",
                              help="minilm (shipped all-MiniLM-L6-v2), smollm2 (shipped SmolLM2-135M-Instruct), "
                                   "a checkpoint directory (BERT family, GPT-2, Llama, Qwen2, Mistral: config.json, "
                                   "weights, tokenizer files) or a Llama GGUF file."),
    text: Optional[str] = typer.Option(None, metavar="file",
                                       help="A UTF-8 text file (default: the English of pydoc_data.topics)."),
    max_tokens: int = typer.Option(128, "--max-tokens", help="Tokens per segment, special tokens included "
                                                             "(2 to the model's positions)."),
    segments: int = typer.Option(8, help="Segments analysed, evenly spaced through the text; numbers are "
                                         "averaged over them."),
    dtype: str = typer.Option("float32", metavar="name",
                              help="float32 or float64 (the model's weights and activations)."),
    out: Optional[str] = typer.Option(None, metavar="folder",
                                      help="A new run directory (default runs/analyze-<model>-<UTC time>)."),
    device: str = typer.Option("cpu", metavar="name", help="cpu, cuda or cuda:N."),
    as_json: bool = typer.Option(False, "--json", help="Print the per-head numbers as JSON (also in heads.json)."),
    ablate: str = typer.Option("top", metavar="name",
                               help="Head ablations (models with an output head): top (first-order for every "
                                    "head, exact for the 6 largest), all (exact for every head; minutes), none."),
) -> None:
    """Classify every attention head of a model on real text, with the published criteria side by side.

    Writes a run directory: heads.json (per head: entropy, distance, attention
    to the previous/next token, [CLS], [SEP] and punctuation; Clark, Kovaleva
    and Voita labels; attnlab's pattern scores on the text, TransformerLens'
    scores on repeated random tokens; the thresholds with their chance levels), segments.json
    (the token ids analysed) and report.html (every head's attention map,
    zoomed heads with token labels, tables). Exit status 2 for bad input: an
    unknown model, a directory that is not a checkpoint, an unsupported
    architecture, a missing or empty text file, --max-tokens out of range.
    """
    from attnlab.commands.analyze import analyze as run_analyze
    from attnlab.commands.analyze import print_analysis

    _check_out_path(out, "--out", default="runs")
    argv = ["attnlab", *sys.argv[1:]] if sys.argv and sys.argv[0] else []
    with progress_bar(disable=as_json) as progress:
        task = progress.add_task("analyze", total=None)
        result = run_analyze(model, text=text, max_tokens=max_tokens, segments=segments, out=out, device=device,
                             dtype=dtype, argv=argv, ablate=ablate,
                             progress=lambda what, done, total: progress.update(
                                 task, description=what, completed=done, total=total))
    if as_json:
        print_json(result.payload)
        return
    print_analysis(console, result)


class _ConstructCommand(PlainCommand):
    """`attnlab construct --help` ends with every registered construction and its parameters."""

    def format_help(self, ctx, formatter) -> None:
        super().format_help(ctx, formatter)
        from attnlab.commands.catalogue import print_construction_help

        print_construction_help(console)


@app.command(cls=_ConstructCommand, context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def construct(
    ctx: typer.Context,
    name: str = typer.Argument(..., metavar="name", help="A registered construction (`attnlab list` shows them)."),
    set_: Optional[list[str]] = typer.Option(
        None, "--set", metavar="key=value",
        help="A parameter of the construction (repeatable). Lists: 3,11,64 (or 3;11;64)."),
    out: Optional[str] = typer.Option(None, "--out", metavar="file",
                                      help="Save the weights and their data to this .npz file."),
    as_json: bool = typer.Option(False, "--json", help="Print the parameters and the check as JSON."),
    dry_run: bool = typer.Option(False, "--dry-run",
                                 help="Print the estimated memory and time and whether they fit; build nothing."),
) -> None:
    """Build a paper's construction, check it in float64, and save it (--out FILE.npz).

    The .npz holds the weights and the data they were built for, in the paper's
    notation and orientation, so they can be checked with any other code.
    A parameter may also be given as --NAME VALUE (e.g. --H 20 for --set H=20).
    The check's verdict: reproduced (the weights do what the text says), differs (the
    text's statement does not hold for these parameters), inconclusive, or fail (attnlab's
    construction is wrong). Exit status 1 on fail, 2 for bad input.

    Before building, the memory and time are estimated from the parameters: parameters
    that need more memory than the machine has are refused (exit 2, with the size and the
    largest value that fits), and an estimate over 10 s is said on stderr
    ("estimated: 2.3 GiB, about 40 s on one core of this machine"). --dry-run prints the estimate
    (with --json, as JSON) and exits 0 without building.
    """
    from attnlab.registry import get_construction
    from attnlab.commands.console import announce_estimate
    from attnlab.commands.construct import construct as run_construct
    from attnlab.commands.construct import construction_flags, print_dry_run, print_result, writable
    from attnlab.commands.construct import dry_run as construct_dry_run

    c = get_construction(name)
    settings = _key_values(set_ or [], "--set", "H=8")
    for key, value in construction_flags(c, list(ctx.args)).items():
        if key in settings:
            raise ConfigError(f"{key} is given twice (as --set {key}=... and as a flag); give it once")
        settings[key] = value
    if out is not None:
        _check_out_path(out, "--out")
        writable(out)
    if dry_run:
        summary, est = construct_dry_run(name, settings)
        if as_json:
            print_json(summary)
        else:
            print_dry_run(console, name, summary, est)
        return
    _, _, result, summary = run_construct(name, settings, out=out, on_estimate=announce_estimate)
    if as_json:
        print_json(summary)
    else:
        print_result(console, name, result, summary)
    if result.check.verdict == "fail":
        raise typer.Exit(1)


def _check_out_path(out: Optional[str], flag: str, default: str | None = None) -> None:
    """Refuse, before any work starts, an empty --out or one where nothing can be written (when --out
    is not given, the ``default`` folder, e.g. runs/ in the working directory); the commands check the
    rest (a file given for a directory, a run already there)."""
    from attnlab.runs.rundir import check_writable

    if out is None:
        if default is not None:
            check_writable(default, flag)
        return
    if not out.strip():
        raise ConfigError(f"{flag} is empty; give a path")
    check_writable(out, flag)


def _check_resume(out: Optional[str], marker: str, what: str) -> None:
    """--resume continues a run that exists: refuse a missing --out, or one without ``marker``,
    instead of silently starting afresh."""
    from pathlib import Path

    if out is None:
        raise ConfigError(f"--resume continues the {what} in --out; give --out DIR")
    if not (Path(out) / marker).is_file():
        raise ConfigError(f"--resume: {out} holds no {what} to continue (no {marker}); drop --resume to start one")


def _one_line_error(message: str) -> None:
    """The error on one line, numbers of thousands of digits shortened, and exit status 2."""
    say(err_console, "attnlab: error: " + shorten_numbers(" ".join(message.split())))
    sys.exit(2)


def _unwrapped(doc: str | None) -> str | None:
    """A docstring as flowing paragraphs: the source's hard line breaks joined, so that
    ``--help`` wraps it at the terminal's width without orphan words; list items
    (``- ...``) and indented lines keep their own lines."""
    if not doc:
        return doc
    import inspect

    paragraphs = []
    for par in inspect.cleandoc(doc).split("\n\n"):
        lines = par.splitlines()
        if any(line.lstrip().startswith("- ") or line.startswith(" ") for line in lines):
            paragraphs.append(par)
        else:
            paragraphs.append(" ".join(line.strip() for line in lines))
    return "\n\n".join(paragraphs)


def _stops_on_ctrl_c(name: str, callback: Callable[..., Any]) -> Callable[..., Any]:
    """``callback`` that, on Ctrl-C, says that ``attnlab NAME`` stopped and exits with status 130 (typer
    would exit silently). reproduce and sweep say first what they keep and how to resume."""

    @functools.wraps(callback)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return callback(*args, **kwargs)
        except KeyboardInterrupt:
            err_console.print(f"attnlab: {name} stopped (Ctrl-C)", highlight=False, markup=False, soft_wrap=True)
            raise typer.Exit(130)

    return run


for _command in app.registered_commands:
    _command.help = _command.help or _unwrapped(_command.callback.__doc__)
    if _command.cls in (None, TyperCommand):  # typer's default: --help names every value in words instead
        _command.cls = PlainCommand
    _command.callback = _stops_on_ctrl_c(_command.name or _command.callback.__name__, _command.callback)


def main(argv: list[str] | None = None) -> int:
    """Entry point: one-line errors and exit status 2 for bad input.

    Sets OMP_WAIT_POLICY=PASSIVE unless given (before any command imports torch): spinning
    OpenMP workers (GNU's default) slow torch's CPU kernels ~10x when the cores are shared
    with other processes, and passive waiting costs nothing on an idle machine."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        rv = app(args=argv, prog_name="attnlab", standalone_mode=False)
    except AttnlabError as e:
        _one_line_error(str(e))
    except (typer.Abort, KeyboardInterrupt):
        err_console.print("attnlab: interrupted", highlight=False, markup=False)
        sys.exit(130)
    except Exception as e:
        # Usage errors of the (possibly vendored) click under typer: bad options,
        # missing arguments, values that fail to parse. Matched by interface so
        # any typer release works.
        if type(e).__name__ == "Abort":
            err_console.print("attnlab: interrupted", highlight=False, markup=False)
            sys.exit(130)
        if not (hasattr(e, "format_message") and getattr(e, "exit_code", None) == 2):
            raise
        ctx = getattr(e, "ctx", None)
        hint = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
        _one_line_error(e.format_message() + hint)
    sys.exit(rv if isinstance(rv, int) else 0)


if __name__ == "__main__":
    main()
