"""``attnlab analyze``, the command: the options checked, the model run on the segments and the
prompts, every number averaged and labelled, and the run directory written (config.json, env.json,
segments.json, heads.json, results.json, report.html and report.md); the package's docstring
(:mod:`attnlab.commands.analyze`) gives the order of work and what each number is.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

import torch

from attnlab.analysis.heads.scores import RepeatedScores, SegmentScores, average
from attnlab.analysis.heads.summary import analyse_segment
from attnlab.commands.analyze import evidence as ev
from attnlab.commands.analyze.payload import heads_payload
from attnlab.commands.analyze.records import HeadNumbers
from attnlab.commands.analyze.report import analysis_result
from attnlab.commands.analyze.text import (
    check_out,
    default_out,
    make_segments,
    read_text,
    repeated_prompts,
    repeated_scores,
    segment_maps,
    special_tokens,
)
from attnlab.config import check_bool, check_choice, check_device, check_int
from attnlab.errors import ConfigError
from attnlab.runs.entry import ExperimentEntry
from attnlab.runs.jsonable import to_jsonable
from attnlab.runs.rundir import REPORT_HTML, RunDir, utc_now

DEFAULT_MAX_TOKENS = 128  # Clark et al.'s segments are at most 128 tokens
DEFAULT_SEGMENTS = 8
MAX_SEGMENTS = 1024
DTYPES = ("float32", "float64")
HEADS_JSON, SEGMENTS_JSON = "heads.json", "segments.json"

if TYPE_CHECKING:
    from rich.console import Console

    from attnlab.commands.analyze.text import RepeatedPrompts, Segments
    from attnlab.pretrained import PretrainedModel
    from attnlab.results import ExperimentResult

Progress = Callable[[str, int, int], None]
"""``progress(what, done, total)``: the step starting now and how many of ``total`` steps are done."""


def progress_steps(segments: int) -> int:
    """The steps :func:`analyze` ticks through, counted before its first tick (the total never changes):
    loading the model, each of the ``segments`` asked for, the ablations, the repeated random tokens and
    the report. A text with fewer segments counts the ones it lacks as done."""
    return segments + 4


@dataclass(frozen=True)
class Analysis:
    """What :func:`analyze` returns: the run directory and the per-head payload, exactly as heads.json
    holds it (plain JSON; a number no segment could give, e.g. a block fit without sentence pairs, is "nan").
    In Jupyter it shows the run's report.html (:mod:`attnlab.reports.notebook`)."""

    path: Path
    payload: dict

    def _repr_html_(self) -> str:
        from attnlab.reports.notebook import report_frame

        return report_frame(Path(self.path) / REPORT_HTML)



def print_analysis(console: "Console", result: Analysis) -> None:
    """`attnlab analyze`'s table: how many heads each published criterion gives each label; then where
    the run directory, heads.json and the report are."""
    from rich.markup import escape

    from attnlab.commands.console import say
    from attnlab.terminal import Col, print_table

    p, counts = result.payload, result.payload["counts"]
    print_table(console, f"attnlab analyze {p['model']} ({p['layers']} layers x {p['heads_per_layer']} heads, "
                         f"{p['segments']} segments of {p['text']})",
                [Col("criteria", "key"), Col("label", "key"), Col("heads", "number")],
                [[framework, escape(label), str(n)] for framework, labels in counts.items()
                 for label, n in labels.items()], keys=2)
    say(console, f"run directory: {result.path}")
    say(console, f"per-head numbers: {result.path / HEADS_JSON}")
    say(console, f"report: {result.path / REPORT_HTML}")


@dataclass(frozen=True)
class AnalyzeOptions:
    """`attnlab analyze`'s options, as :func:`analyze` takes them, and whether to print heads.json's payload
    as JSON."""

    model: str = "minilm"
    text: str | None = None
    max_tokens: int = DEFAULT_MAX_TOKENS
    segments: int = DEFAULT_SEGMENTS
    dtype: str = "float32"
    out: str | None = None
    device: str = "cpu"
    as_json: bool = False
    ablate: str = "top"
    center_unembed: bool = False


@dataclass(frozen=True)
class AnalyzeOutcome:
    """The analysis (run directory and payload); analyze exits 0 once it has written its run directory."""

    options: AnalyzeOptions
    analysis: Analysis
    exit_status: int = 0


def run_analyze(options: AnalyzeOptions) -> AnalyzeOutcome:
    """--out checked, then the analysis with a progress display unless JSON is asked for."""
    from attnlab.commands.console import progress_bar
    from attnlab.commands.options import check_out_path, command_argv

    o = options
    check_out_path(o.out, "--out", default="runs")
    argv = command_argv()
    with progress_bar(disable=o.as_json) as progress:
        task = progress.add_task("analyze", total=None)
        result = analyze(o.model, text=o.text, max_tokens=o.max_tokens, segments=o.segments, out=o.out,
                         device=o.device, dtype=o.dtype, argv=argv, ablate=o.ablate,
                         center_unembed=o.center_unembed,
                         progress=lambda what, done, total: progress.update(
                             task, description=what, completed=done, total=total))
    return AnalyzeOutcome(o, result)


def print_analyze(outcome: AnalyzeOutcome, console: "Console | None" = None,
                  err_console: "Console | None" = None) -> None:
    """heads.json's payload as JSON, or the label counts and where the files are (:func:`print_analysis`)."""
    from attnlab.commands import console as consoles

    if outcome.options.as_json:
        consoles.print_json(outcome.analysis.payload)
    else:
        print_analysis(console or consoles.console, outcome.analysis)


# ---- the command -------------------------------------------------------------------------------
def analyze(model: str | Path = "minilm", *, text: str | Path | None = None, max_tokens: int = DEFAULT_MAX_TOKENS,
            segments: int = DEFAULT_SEGMENTS, out: str | Path | None = None, device: str = "cpu",
            dtype: str = "float32", argv: Sequence[str] | None = None,
            progress: Progress | None = None, ablate: str = "top", center_unembed: bool = False) -> Analysis:
    """Analyse every head of ``model`` on ``text`` into a run directory (module docstring); return it
    with the per-head payload that heads.json and ``attnlab analyze --json`` hold. ``center_unembed``:
    direct logit attribution through W_U centred over the vocabulary (TransformerLens' default;
    :func:`attnlab.analysis.heads.direct_logit_attribution`), else uncentred."""
    start = time.perf_counter()
    device = _checked_options(max_tokens, segments, dtype, ablate, device)
    check_bool("--center-unembed", center_unembed)
    source, sentences = read_text(text)
    path = check_out(out) if out is not None else default_out(str(model))
    total = progress_steps(segments)
    tick: Progress = progress or (lambda what, done, total: None)
    tick("loading the model", 0, total)
    pm = _load_model(model, dtype, device, max_tokens)
    segs = make_segments(pm, sentences, max_tokens, segments)
    causal = bool(pm.model.causal)
    config = {"command": "analyze", "title": f"Attention heads of {Path(str(model)).name}",
              "model": str(model), "checkpoint": str(pm.path), "model_type": pm.architecture.model_type,
              "text": source, "max_tokens": max_tokens, "segments": segments, "dtype": dtype, "device": device,
              "ablate": ablate, "center_unembed": center_unembed, "created": utc_now()}
    rd = RunDir.create(path)
    rd.write_config(config, list(argv or []))
    rd.write_env(seed=0, device=device)
    prompts = repeated_prompts(pm, max_tokens)
    _write_segments(rd, segs, prompts)
    specials = special_tokens(pm.tokenizer)
    avg, cis, first = _segment_numbers(pm, segs, causal, specials, lambda what, b: tick(what, 1 + b, total),
                                       center_unembed)
    done = 1 + segments  # the model and every segment asked for
    tick("ablations", done, total)
    ablations = ev.run_ablations(pm, segs.input_ids, ablate, progress=lambda what: tick(what, done, total))
    tick("repeated random tokens", done + 1, total)
    repeated = (repeated_scores(pm, prompts, causal) if prompts is not None
                else RepeatedScores.undefined(tuple(avg.entropy.shape)))
    induction = ev.induction_ablations(pm, prompts, repeated.induction, ablate)
    numbers = HeadNumbers(avg, cis, repeated, ev.weights(pm))
    payload = heads_payload(config, pm, segs, specials, numbers, prompts, ablations, induction)
    rd.write_json(HEADS_JSON, payload.to_dict())
    _write_results(rd, config, analysis_result(payload, numbers, first, segs), causal, len(segs.input_ids), start)
    tick("report", done + 2, total)
    from attnlab.reports import build_report

    build_report(rd.path)
    tick("done", total, total)
    return Analysis(rd.path, to_jsonable(payload.to_dict()))  # as heads.json holds it: NaN as "nan"


def _checked_options(max_tokens: int, segments: int, dtype: str, ablate: str, device: str) -> str:
    """Refuse bad options before anything is read or loaded; the device, normalised."""
    check_int("--max-tokens", max_tokens, 2)
    check_int("--segments", segments, 1, MAX_SEGMENTS)
    check_choice("--dtype", dtype, DTYPES)
    ev.check_ablate(ablate)
    return check_device(device, "--device")


def _load_model(model: str | Path, dtype: str, device: str, max_tokens: int) -> "PretrainedModel":
    """The model by its shipped name or checkpoint path, with a tokenizer and at least ``max_tokens``
    positions (a ConfigError that says what to change otherwise)."""
    from attnlab.pretrained import load_pretrained
    from attnlab.pretrained.loader import SHIPPED

    if not Path(str(model)).expanduser().exists() and str(model).lower() not in SHIPPED:
        raise ConfigError(f"--model {model}: no shipped model has that name and no such directory exists; use "
                          f"{' or '.join(sorted(SHIPPED))}, or a checkpoint directory (config.json and weights)")
    pm = load_pretrained(model, dtype=dtype, device=device)
    if pm.tokenizer is None:
        raise ConfigError(f"{pm.path} has no usable tokenizer ({pm.tokenizer_error}): analyze feeds text, so the "
                          "checkpoint directory needs its tokenizer files")
    limit = pm.architecture.max_len - pm.architecture.position_offset
    check_int(f"--max-tokens (this model has {limit} positions)", max_tokens, 2, limit)
    return pm


def _write_segments(rd: RunDir, segs: "Segments", prompts: "RepeatedPrompts | None") -> None:
    """segments.json: the token ids fed, the repeated-random-token prompts included."""
    rd.write_json(SEGMENTS_JSON, {"input_ids": segs.input_ids, "token_type_ids": segs.token_type_ids,
                                  "tokens": segs.tokens, "labels": segs.labels, "pairs": segs.pairs,
                                  "repeated_random_tokens": None if prompts is None else {
                                      "input_ids": prompts.input_ids.tolist(), "half": prompts.half,
                                      "prefix": prompts.prefix, "suffix": prompts.suffix, "seed": prompts.seed}})


def _segment_numbers(pm: "PretrainedModel", segs: "Segments", causal: bool, specials: dict,
                     tick: Callable[[str, int], None], center_unembed: bool = False
                     ) -> tuple[SegmentScores, dict[str, torch.Tensor], torch.Tensor | None]:
    """(every number averaged over the segments, with its chance level; their intervals over the segments
    by field name; segment 0's maps A (L, H, n, n)); ``tick(what, b)`` as segment b starts; DLA through the
    centred unembedding with ``center_unembed``."""
    frequencies = Counter(t for ids in segs.input_ids for t in ids)
    per_segment, first = [], None
    for b, A, hidden in segment_maps(pm, segs, hidden=True):
        tick(f"segment {b + 1}/{len(segs.input_ids)}", b)
        scores = analyse_segment(
            A, segs.input_ids[b], segs.tokens[b], None if segs.token_type_ids is None else segs.token_type_ids[b],
            causal=causal, specials=specials, frequencies=frequencies)
        per_segment.append(ev.with_evidence(pm, scores, A, hidden, segs.input_ids[b], center_unembed=center_unembed))
        if b == 0:
            first = A
    return average(per_segment), ev.intervals(per_segment), first


def _write_results(rd: RunDir, config: dict, result: "ExperimentResult", causal: bool, n_segments: int,
                   start: float) -> None:
    """results.json: the analysis as one experiment's entry, which the report reads."""
    entry = ExperimentEntry("analyze", f"every head of {config['model']} ({config['model_type']}, "
                                       f"{'causal' if causal else 'bidirectional'}) on {n_segments} "
                                       f"segments of {config['text']}", config)
    rd.write_results({"experiments": {"analyze": entry.succeeded(start, result.to_dict()).to_dict()}})
