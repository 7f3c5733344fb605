"""The ``attnlab`` command line: it parses the options, calls each verb's ``run_<verb>`` in
:mod:`attnlab.commands`, prints its outcome with ``print_<verb>`` and exits with its status.

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

from attnlab.commands.console import console, err_console, say
from attnlab.commands.descriptions import HELP
from attnlab.commands.plain_help import ConstructHelp, PlainCommand, PlainGroup, unwrapped
from attnlab.config import shorten_numbers
from attnlab.errors import AttnlabError

app = typer.Typer(name="attnlab", cls=PlainGroup, add_completion=False, no_args_is_help=True,
                  pretty_exceptions_enable=False,
                  help="The mathematics of attention, executable: claims, constructions, experiments, benchmarks.")


def _version(value: bool) -> None:
    """--version: print attnlab's version and exit."""
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            v = version("attnlab")
        except PackageNotFoundError:  # run from a source tree that is not installed
            v = "unknown (not installed)"
        say(console, f"attnlab {v}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print attnlab's version and exit.")) -> None:
    """The mathematics of attention, executable: claims, constructions, experiments, benchmarks."""


DEVICE = "cpu, cuda or cuda:N."
STRICT = "Also exit 1 on differs, refuted and inconclusive verdicts."


def _finish(outcome: Any, print_outcome: Callable[..., None]) -> None:
    """Print a verb's outcome on this module's consoles and exit with its status (return on 0)."""
    print_outcome(outcome, console, err_console)
    if outcome.exit_status:
        raise typer.Exit(outcome.exit_status)


@app.command()
def verify(
    papers: Optional[list[str]] = typer.Argument(None, metavar="name or id", help="Paper short names, claim ids, id "
                                                 "prefixes or globs such as '*.theorem1*' (default: all)."),
    seed: int = typer.Option(0, help="Seed for the inputs every check draws (0 <= seed < 2**32)."),
    as_json: bool = typer.Option(False, "--json", help="Print results as JSON."),
    strict: bool = typer.Option(False, "--strict", help=STRICT),
) -> None:
    """`attnlab verify`: the claims' verdicts (:mod:`attnlab.commands.verify`)."""
    from attnlab.commands.verify import VerifyOptions, print_verify, run_verify

    _finish(run_verify(VerifyOptions(papers, seed, as_json, strict)), print_verify)


@app.command()
def errata(
    papers: Optional[list[str]] = typer.Argument(None, metavar="name", help="Paper short names (default: all)."),
    as_json: bool = typer.Option(False, "--json", help="Print the records as JSON."),
) -> None:
    """`attnlab errata`: the errors in the texts (:mod:`attnlab.commands.errata`)."""
    from attnlab.commands.errata import ErrataOptions, print_errata, run_errata

    _finish(run_errata(ErrataOptions(papers, as_json)), print_errata)


@app.command()
def coverage(
    papers: Optional[list[str]] = typer.Argument(None, metavar="name", help="Paper short names (default: all)."),
    run: Optional[str] = typer.Option(None, "--run", metavar="folder", help="A run directory of `attnlab "
                                      "reproduce`: its experiments' rows and verdicts."),
    verdicts: bool = typer.Option(True, "--verdicts/--no-verdicts",
                                  help="Run the anchored claims (seconds) for their verdicts."),
    as_json: bool = typer.Option(False, "--json", help="Print the ledgers as JSON."),
) -> None:
    """`attnlab coverage`: each text's ledger (:mod:`attnlab.commands.coverage`)."""
    from attnlab.commands.coverage import CoverageOptions, print_coverage, run_coverage

    _finish(run_coverage(CoverageOptions(papers, run, verdicts, as_json)), print_coverage)


@app.command("list")
def list_(as_json: bool = typer.Option(False, "--json", help="Print as JSON.")) -> None:
    """`attnlab list`: what the registry holds (:mod:`attnlab.commands.list`)."""
    from attnlab.commands.list import ListOptions, print_list, run_list

    _finish(run_list(ListOptions(as_json)), print_list)


@app.command()
def reproduce(
    papers: list[str] = typer.Argument(..., metavar="name", help="Paper short names (`attnlab list` shows them)."),
    scale: str = typer.Option("quick", metavar="name", help="quick (minutes on a laptop CPU) or paper (the paper's "
                              "sizes)."),
    out: Optional[str] = typer.Option(None, metavar="folder", help="Run directory (default runs/<paper>-<UTC time>)."),
    seed: int = typer.Option(0, help="Seed for every random draw (0 <= seed < 2**32)."),
    device: str = typer.Option("cpu", metavar="name", help=DEVICE),
    resume: bool = typer.Option(False, "--resume", help="Continue the run in --out, skipping finished experiments."),
    strict: bool = typer.Option(False, "--strict", help=STRICT),
    set_: Optional[list[str]] = typer.Option(None, "--set", metavar="key=value", help="A config value for every "
                                             "experiment with that field, replacing the scale's preset (repeatable), "
                                             "e.g. --set smollm2=true. Lists: 3,11,64 (or 3;11;64)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print each experiment's estimated memory and time; "
                                                          "run and write nothing."),
    as_json: bool = typer.Option(False, "--json", help="With --dry-run: the estimates as JSON."),
    only: Optional[list[str]] = typer.Option(None, "--only", metavar="name", help="Run only this experiment of the "
                                             "paper (repeatable), e.g. --only construction; the claims run as always."),
) -> None:
    """`attnlab reproduce`: a paper's experiments into a run directory (:mod:`attnlab.commands.reproduce_verb`)."""
    from attnlab.commands.reproduce_verb import ReproduceOptions, print_reproduce, run_reproduce

    _finish(run_reproduce(ReproduceOptions(papers, scale, out, seed, device, resume, strict, set_ or [], dry_run,
                                           as_json, only)), print_reproduce)


@app.command()
def report(
    run_dir: str = typer.Argument(..., metavar="folder", help="A run directory written by `attnlab reproduce`."),
) -> None:
    """`attnlab report`: a run directory's reports rebuilt (:mod:`attnlab.commands.report`)."""
    from attnlab.commands.report import ReportOptions, print_report, run_report

    _finish(run_report(ReportOptions(run_dir)), print_report)


@app.command()
def sweep(
    experiment: str = typer.Argument(..., metavar="id", help="A registered experiment id (`attnlab list` shows them)."),
    set_: Optional[list[str]] = typer.Option(None, "--set", metavar="key=value", help="A fixed config value "
                                             "(repeatable). Lists: 3,11,64 (or 3;11;64). Bools: true/false."),
    grid: Optional[list[str]] = typer.Option(None, "--grid", metavar="key=v1,v2,...", help="Values to sweep, "
                                             "separated by commas (repeatable; the Cartesian product runs). A list "
                                             "as one value: 3;11;64."),
    seeds: int = typer.Option(1, "--seeds", help="K seeds per grid point: --seed, --seed+1, ..., --seed+K-1."),
    seed: int = typer.Option(0, "--seed", help="The first seed (0 <= seed < 2**32)."),
    out: Optional[str] = typer.Option(None, metavar="folder",
                                      help="Sweep directory (default runs/sweep-<experiment>-<UTC time>)."),
    resume: bool = typer.Option(False, "--resume", help="Continue the sweep in --out, skipping finished runs."),
    workers: Optional[int] = typer.Option(None, help="Parallel runs (default min(cores, runs))."),
    executor: str = typer.Option("process", metavar="name", help="inline, process or dask (a LocalCluster)."),
    scheduler: Optional[str] = typer.Option(None, metavar="address",
                                            help="Dask scheduler address tcp://host:port (shared filesystem)."),
    device: str = typer.Option("cpu", metavar="name", help=DEVICE),
    as_json: bool = typer.Option(False, "--json", help="Print counts and rows as JSON."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the runs' estimated memory and time; run and "
                                                          "write nothing."),
) -> None:
    """`attnlab sweep`: an experiment over a grid (:mod:`attnlab.commands.sweep`)."""
    from attnlab.commands.sweep import SweepOptions, print_sweep, run_sweep

    _finish(run_sweep(SweepOptions(experiment, set_ or [], grid or [], seeds, seed, out, resume, workers, executor,
                                   scheduler, device, as_json, dry_run)), print_sweep)


@app.command()
def bench(
    n: Optional[str] = typer.Option(None, "--n", metavar="n1,n2,...", help="Comma-separated sequence lengths "
                                    "(default 512,...,16384; --quick: 512,...,4096)."),
    variant: Optional[list[str]] = typer.Option(None, "--variant", metavar="name", help="A variant to time "
                                                "(repeatable; default all). Fused SDPA is always timed."),
    dtype: str = typer.Option("float32", metavar="name", help="float32, float64 or bfloat16."),
    device: str = typer.Option("cpu", metavar="name", help=DEVICE),
    threads: Optional[int] = typer.Option(None, help="torch threads (default: torch's choice)."),
    repeats: int = typer.Option(5, help="Timed calls per measurement (median and IQR reported)."),
    quick: bool = typer.Option(False, "--quick", help="n = 512..4096, 3 repeats (1 to 3 minutes)."),
    as_json: bool = typer.Option(False, "--json", help="Print the full result as JSON."),
    out: Optional[str] = typer.Option(None, metavar="folder", help="Directory for bench.json and bench-time.png."),
) -> None:
    """`attnlab bench`: every attention variant timed (:mod:`attnlab.commands.bench`)."""
    from attnlab.commands.bench import BenchOptions, print_bench_run, run_bench

    _finish(run_bench(BenchOptions(n, variant, dtype, device, threads, repeats, quick, as_json, out)), print_bench_run)


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
    dtype: str = typer.Option("float32", metavar="name", help="float32 or float64 (the model's weights and "
                              "activations)."),
    out: Optional[str] = typer.Option(None, metavar="folder",
                                      help="A new run directory (default runs/analyze-<model>-<UTC time>)."),
    device: str = typer.Option("cpu", metavar="name", help=DEVICE),
    as_json: bool = typer.Option(False, "--json", help="Print the per-head numbers as JSON (also in heads.json)."),
    ablate: str = typer.Option("top", metavar="name", help="Head ablations (models with an output head): top "
                               "(a first-order screen of every head, exact re-runs of the 12 it ranks highest), all "
                               "(exact for every head; minutes), none."),
    center_unembed: bool = typer.Option(False, "--center-unembed", help="DLA with W_U centred over the vocabulary "
                                        "(TransformerLens' center_unembed); default uncentred."),
) -> None:
    """`attnlab analyze`: every head of a model on real text (:mod:`attnlab.commands.analyze`)."""
    from attnlab.commands.analyze import AnalyzeOptions, print_analyze, run_analyze

    _finish(run_analyze(AnalyzeOptions(model, text, max_tokens, segments, dtype, out, device, as_json, ablate,
                                       center_unembed)), print_analyze)


@app.command(cls=ConstructHelp, context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def construct(
    ctx: typer.Context,
    name: str = typer.Argument(..., metavar="name", help="A registered construction (`attnlab list` shows them)."),
    set_: Optional[list[str]] = typer.Option(None, "--set", metavar="key=value", help="A parameter of the "
                                             "construction (repeatable). Lists: 3,11,64 (or 3;11;64)."),
    out: Optional[str] = typer.Option(None, "--out", metavar="file",
                                      help="Save the weights and their data to this .npz file."),
    as_json: bool = typer.Option(False, "--json", help="Print the parameters and the check as JSON."),
    dry_run: bool = typer.Option(False, "--dry-run",
                                 help="Print the estimated memory and time and whether they fit; build nothing."),
) -> None:
    """`attnlab construct`: a construction built, checked and saved (:mod:`attnlab.commands.construct`)."""
    from attnlab.commands.construct import ConstructOptions, print_construct, run_construct

    _finish(run_construct(ConstructOptions(name, set_ or [], list(ctx.args), out, as_json, dry_run)), print_construct)


def _one_line_error(message: str) -> None:
    """The error on one line, numbers of thousands of digits shortened, and exit status 2."""
    say(err_console, "attnlab: error: " + shorten_numbers(" ".join(message.split())))
    sys.exit(2)


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
    _name = _command.name or _command.callback.__name__
    _command.help = unwrapped(HELP[_name])
    if _command.cls in (None, TyperCommand):  # typer's default: --help names every value in words instead
        _command.cls = PlainCommand
    _command.callback = _stops_on_ctrl_c(_name, _command.callback)


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
        # Usage errors of the (possibly vendored) click under typer: bad options, missing arguments,
        # values that fail to parse. Matched by interface so any typer release works.
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
