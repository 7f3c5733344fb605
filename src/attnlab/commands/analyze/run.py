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

from attnlab.analysis.heads.summary import TL_KINDS, analyse_segment, average, decide
from attnlab.commands.analyze import evidence as ev
from attnlab.commands.analyze.payload import _payload
from attnlab.commands.analyze.report import _result
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
from attnlab.config import check_choice, check_device, check_int
from attnlab.errors import ConfigError
from attnlab.runs.jsonable import to_jsonable
from attnlab.runs.rundir import REPORT_HTML, RunDir, utc_now

DEFAULT_MAX_TOKENS = 128  # Clark et al.'s segments are at most 128 tokens
DEFAULT_SEGMENTS = 8
MAX_SEGMENTS = 1024
DTYPES = ("float32", "float64")
HEADS_JSON, SEGMENTS_JSON = "heads.json", "segments.json"

if TYPE_CHECKING:
    from rich.console import Console

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


# ---- the command -------------------------------------------------------------------------------
def analyze(model: str | Path = "minilm", *, text: str | Path | None = None, max_tokens: int = DEFAULT_MAX_TOKENS,
            segments: int = DEFAULT_SEGMENTS, out: str | Path | None = None, device: str = "cpu",
            dtype: str = "float32", argv: Sequence[str] | None = None,
            progress: Progress | None = None, ablate: str = "top") -> Analysis:
    """Analyse every head of ``model`` on ``text`` into a run directory (module docstring); return it
    with the per-head payload that heads.json and ``attnlab analyze --json`` hold."""
    from attnlab.pretrained import load_pretrained
    from attnlab.pretrained.loader import SHIPPED

    start = time.perf_counter()
    check_int("--max-tokens", max_tokens, 2)
    check_int("--segments", segments, 1, MAX_SEGMENTS)
    check_choice("--dtype", dtype, DTYPES)
    ev.check_ablate(ablate)
    device = check_device(device, "--device")
    source, sentences = read_text(text)
    path = check_out(out) if out is not None else default_out(str(model))
    total = progress_steps(segments)
    tick: Progress = progress or (lambda what, done, total: None)
    tick("loading the model", 0, total)
    if not Path(str(model)).expanduser().exists() and str(model).lower() not in SHIPPED:
        raise ConfigError(f"--model {model}: no shipped model has that name and no such directory exists; use "
                          f"{' or '.join(sorted(SHIPPED))}, or a checkpoint directory (config.json and weights)")
    pm = load_pretrained(model, dtype=dtype, device=device)
    if pm.tokenizer is None:
        raise ConfigError(f"{pm.path} has no usable tokenizer ({pm.tokenizer_error}): analyze feeds text, so the "
                          "checkpoint directory needs its tokenizer files")
    limit = pm.architecture.max_len - pm.architecture.position_offset
    check_int(f"--max-tokens (this model has {limit} positions)", max_tokens, 2, limit)
    segs = make_segments(pm, sentences, max_tokens, segments)
    causal = bool(pm.model.causal)
    config = {"command": "analyze", "title": f"Attention heads of {Path(str(model)).name}",
              "model": str(model), "checkpoint": str(pm.path), "model_type": pm.architecture.model_type,
              "text": source, "max_tokens": max_tokens, "segments": segments, "dtype": dtype, "device": device,
              "ablate": ablate, "created": utc_now()}
    rd = RunDir.create(path)
    rd.write_config(config, list(argv or []))
    rd.write_env(seed=0, device=device)
    prompts = repeated_prompts(pm, max_tokens)
    rd.write_json(SEGMENTS_JSON, {"input_ids": segs.input_ids, "token_type_ids": segs.token_type_ids,
                                  "tokens": segs.tokens, "labels": segs.labels, "pairs": segs.pairs,
                                  "repeated_random_tokens": None if prompts is None else {
                                      "input_ids": prompts.input_ids.tolist(), "half": prompts.half,
                                      "prefix": prompts.prefix, "suffix": prompts.suffix, "seed": prompts.seed}})
    frequencies = Counter(t for ids in segs.input_ids for t in ids)
    specials = special_tokens(pm.tokenizer)
    per_segment, first = [], None
    for b, A, hidden in segment_maps(pm, segs, hidden=True):
        tick(f"segment {b + 1}/{len(segs.input_ids)}", 1 + b, total)
        per_segment.append(analyse_segment(
            A, segs.input_ids[b], segs.tokens[b], None if segs.token_type_ids is None else segs.token_type_ids[b],
            causal=causal, specials=specials, frequencies=frequencies))
        per_segment[-1].update(ev.per_segment(pm, A, hidden, segs.input_ids[b]))
        if b == 0:
            first = A
    avg = average(per_segment)
    cis = ev.intervals(per_segment, [k for k in per_segment[0] if not k.startswith("chance:")])
    avg.update(ev.weights(pm))
    done = 1 + segments  # the model and every segment asked for
    tick("ablations", done, total)
    ablations = ev.run_ablations(pm, segs.input_ids, ablate, progress=lambda what: tick(what, done, total))
    tick("repeated random tokens", done + 1, total)
    L, H = avg["entropy"].shape
    nan = torch.full((L, H), float("nan"), dtype=torch.float64)
    rep = repeated_scores(pm, prompts, causal) if prompts is not None else {
        **{k: nan for k in TL_KINDS}, **{f"chance:{k}": nan[:1, :1] for k in TL_KINDS}}
    avg.update({f"tl_repeated_{k}" if not k.startswith("chance:") else f"chance:tl_repeated_{k[7:]}": v
                for k, v in rep.items()})
    induction = ev.induction_ablations(pm, prompts, avg["tl_repeated_induction"], ablate)
    labels = decide(avg)
    payload = _payload(config, pm, segs, causal, specials, avg, labels, prompts, cis, ablations, induction)
    rd.write_json(HEADS_JSON, payload)
    result = _result(payload, avg, first, segs)
    rd.write_results({"experiments": {"analyze": {
        "id": "analyze", "description": f"every head of {config['model']} ({config['model_type']}, "
                                         f"{'causal' if causal else 'bidirectional'}) on {len(segs.input_ids)} "
                                         f"segments of {source}",
        "config": config, "status": "ok", "results": result.to_dict(),
        "seconds": round(time.perf_counter() - start, 3), "finished": utc_now()}}})
    tick("report", done + 2, total)
    from attnlab.reports import build_report

    build_report(rd.path)
    tick("done", total, total)
    return Analysis(rd.path, to_jsonable(payload))  # as heads.json holds it: NaN as "nan"

