"""``attnlab construct NAME``: build a registered construction, check it, save it (:func:`run_construct`,
:func:`print_construct`).

Parameters arrive as text (``--set key=value``) or Python values and go through the
one conversion and validation path (:mod:`attnlab.config`); ``--out`` is checked
before anything is built, and the ``.npz`` is written atomically (temp file +
rename) with exactly the arrays the construction returns, in the paper's notation.

Before building, the construction's estimate (``Construction.estimate``, an
:class:`attnlab.estimates.Estimate`) is checked against the machine's memory: parameters
whose build would exceed it are refused with one line saying how much they need, how much
the machine has and the largest value of the parameter to lower that fits
(:func:`estimate`, :func:`check_fits`).
"""

from __future__ import annotations

import dataclasses
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
from rich.console import Console
from rich.markup import escape

from attnlab.config import build_config, coerce_field, device_memory
from attnlab.errors import ConfigError
from attnlab.commands.console import print_folded, verdict_markup
from attnlab.estimates import ONE_CORE, Estimate, fitting_hint, format_bytes, format_seconds, require_fits
from attnlab.registry import Construction, ConstructionResult, get_construction
from attnlab.runs.rundir import atomic_write_bytes, check_writable
from attnlab.terminal import Col, fmt, print_table


def parameters(name: str, settings: Mapping[str, Any] | None = None) -> tuple[Construction, Any]:
    """(construction, params) for ``name`` with ``settings`` (field -> value or text), validated."""
    c = get_construction(name)
    values = {k: coerce_field(f"construction {name}", c.params_cls, k, v, "--set", noun="parameter")
              for k, v in (settings or {}).items()}
    return c, build_config(c.params_cls, values, what=f"construct {name}")


def estimate(name: str, settings: Mapping[str, Any] | None = None) -> tuple[Construction, Any, Estimate | None]:
    """(construction, params, its estimate or None when it has no estimate hook); builds nothing."""
    c, params = parameters(name, settings)
    return c, params, (c.estimate(params) if c.estimate is not None else None)


def check_fits(c: Construction, params: Any, est: Estimate | None, *, available: int | None = None) -> None:
    """ConfigError when the estimated peak memory exceeds the machine's (``available`` bytes,
    default the physical memory): one line with both sizes and the largest value of the
    parameter to lower that fits, e.g. "lower H (H <= 95 fits)"."""
    if est is None:
        return
    available = device_memory("cpu") if available is None else available
    if available is None or est.peak_bytes <= available:
        return
    hint = fitting_hint(c.estimate, params, est, available)
    require_fits(est, f"construct {c.name} {_settings_text(params)}".rstrip(), available=available, change=hint)


@dataclass(frozen=True)
class FitSummary:
    """What ``--dry-run`` reports: the construction and its paper, the parameters, the estimate, the
    machine's memory in bytes (None: unknown), whether it fits and, when it does not, what to lower
    (``change``)."""

    construction: str
    paper: str
    params: dict[str, Any]
    estimate: Estimate
    memory_available: int | None
    fits: bool
    change: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """What ``--dry-run --json`` prints (the memory also as text where it is known; ``change`` only
        where it does not fit)."""
        out = {"construction": self.construction, "paper": self.paper, "params": self.params,
               "estimate": self.estimate.to_dict(), "memory_available": self.memory_available, "fits": self.fits}
        if self.memory_available is not None:
            out["memory_available_text"] = format_bytes(self.memory_available)
        if self.change is not None:
            out["change"] = self.change
        return out


def fit_summary(c: Construction, params: Any, est: Estimate, *, available: int | None = None) -> FitSummary:
    """What ``--dry-run`` reports (:class:`FitSummary`)."""
    available = device_memory("cpu") if available is None else available
    fits = available is None or est.peak_bytes <= available
    return FitSummary(c.name, c.paper, dataclasses.asdict(params), est, available, fits,
                      None if fits else fitting_hint(c.estimate, params, est, available))


def construct(name: str, settings: Mapping[str, Any] | None = None, *,
              out: str | Path | None = None,
              on_estimate: Callable[[Estimate], None] | None = None
              ) -> tuple[Construction, Any, ConstructionResult, dict]:
    """Build construction ``name`` with ``settings`` (field -> value or text).

    Refuses (ConfigError, nothing built or written) when the construction's estimate exceeds
    the machine's memory (:func:`check_fits`); ``on_estimate(estimate)`` is called before the
    build (the command line says the estimate there when it is long).

    Returns (construction, params, result, summary) where ``summary`` is what
    ``--json`` prints: the parameters, the check's values, verdict, notes and ``out``.
    """
    target = writable(out) if out is not None else None
    c, params, est = estimate(name, settings)
    check_fits(c, params, est)
    if est is not None and on_estimate is not None:
        on_estimate(est)
    result = c.build(params)
    if not isinstance(result, ConstructionResult):
        raise TypeError(f"construction {name} returned {type(result).__name__}, not ConstructionResult")
    summary = {"construction": name, "paper": c.paper, "params": dataclasses.asdict(params), **result.to_dict()}
    if target is not None:
        save_npz(target, result.arrays)
        summary["out"] = str(target)
    return c, params, result, summary


def save_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """Write arrays to ``path`` atomically (temp file + rename); ConfigError if it cannot."""
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    try:
        atomic_write_bytes(path, buf.getvalue())
    except OSError as err:
        raise ConfigError(f"cannot write --out {path}: {err.strerror or err}; give a writable file path") from None


def writable(out: str | Path) -> Path:
    """``out`` as a Path if a file can be written there (its directory exists and takes a new file);
    ConfigError saying what to change. Checked before anything is estimated or built."""
    path = Path(out)
    if path.is_dir():
        raise ConfigError(f"--out {out} is a directory; give a file path such as {path / 'weights.npz'}")
    if not path.parent.is_dir():
        raise ConfigError(f"--out {out}: directory {path.parent} does not exist; create it or give another path")
    return check_writable(path, what="file path")


def _settings_text(params: Any) -> str:
    """"H=100000 n=32": the parameters that differ from their defaults, as --set writes them."""
    from attnlab.config import format_value, shown

    try:
        defaults = type(params)()
    except Exception:  # a parameter without a default: every value is said
        defaults = None
    return " ".join(f"{f.name}={shown(format_value(getattr(params, f.name)), quote=False)}"
                    for f in dataclasses.fields(params)
                    if defaults is None or getattr(params, f.name) != getattr(defaults, f.name))


def construction_flags(c, args: list[str]) -> dict[str, str]:
    """``--name value`` / ``--name=value`` for parameters, and the construction's value-less aliases."""
    import dataclasses

    names = {f.name for f in dataclasses.fields(c.params_cls)}
    by_flag = {n.replace("_", "-"): n for n in names} | {n: n for n in names}
    out: dict[str, str] = {}
    i = 0
    while i < len(args):
        token = args[i]
        flag, eq, value = token[2:].partition("=") if token.startswith("--") else ("", "", "")
        if flag in c.flag_aliases and not eq:
            key, v = c.flag_aliases[flag]
            value, i = str(v).lower() if isinstance(v, bool) else str(v), i + 1
        elif flag in by_flag:
            key = by_flag[flag]
            if not eq:
                if i + 1 >= len(args) or args[i + 1].startswith("--"):
                    raise ConfigError(f"{token} needs a value, e.g. {token} 4 (or --set {key}=4)")
                value, i = args[i + 1], i + 2
            else:
                i += 1
        else:
            raise ConfigError(
                f"construct {c.name} has no option {token!r}; give parameters as --set key=value "
                f"(parameters: {', '.join(sorted(names, key=str.lower))})")
        if key in out:
            raise ConfigError(f"{key} is given twice; give it once")
        out[key] = value
    return out


def print_result(console: Console, name: str, result: ConstructionResult, out: str | None = None) -> None:
    """`attnlab construct NAME`'s table: the construction's values, its check with the verdict, the
    file written (``out``); then its notes."""
    chk = result.check
    rows = [[escape(key), escape(fmt(value))] for key, value in result.values.items()]
    rows.append(["check", escape(f"{chk.quantity}: {chk.measured_text}"
                                 + (f", required {chk.criterion}" if chk.criterion else ""))])
    rows.append(["verdict", verdict_markup(chk.verdict) + (f" ({escape(chk.reason)})" if chk.reason else "")])
    if out is not None:
        rows.append(["out", escape(out)])
    print_table(console, f"attnlab construct {name}", [Col("quantity", "key"), Col("value")], rows)
    for note in result.notes:
        print_folded(console, f"note: {note}")


def dry_run(name: str, settings: Mapping[str, Any]) -> tuple[FitSummary, Estimate]:
    """`construct NAME --dry-run`: the estimate and whether it fits (:func:`fit_summary`); nothing is built."""
    c, params, est = estimate(name, settings)
    if est is None:
        raise ConfigError(f"construction {name} has no estimate; run it without --dry-run")
    return fit_summary(c, params, est), est


def print_dry_run(console: Console, name: str, fit: FitSummary, est: Estimate) -> None:
    """The dry run's table: peak memory, time, what dominates, the machine's memory, whether it fits."""
    available = fit.memory_available
    rows = [["peak memory", escape(format_bytes(est.peak_bytes))],
            ["time", escape(f"about {format_seconds(est.seconds)} on {ONE_CORE}")],
            ["dominated by", escape(est.what)],
            ["machine memory", escape(format_bytes(available)) if available is not None else "unknown"],
            ["fits", "yes" if fit.fits else escape(f"no: {fit.change}")]]
    print_table(console, f"attnlab construct {name} --dry-run (nothing built)",
                [Col("quantity", "key"), Col("value")], rows)


@dataclass(frozen=True)
class ConstructOptions:
    """`attnlab construct`'s options: the construction, its ``--set key=value`` texts and the
    ``--NAME VALUE`` flags left after parsing (``extra``), the .npz to write, JSON output, and ``dry_run``:
    estimate and print, build nothing."""

    name: str
    set_: Sequence[str] = ()
    extra: Sequence[str] = ()
    out: str | None = None
    as_json: bool = False
    dry_run: bool = False


@dataclass(frozen=True)
class ConstructOutcome:
    """The built construction's result and summary (what ``--json`` prints) with the file written (``out``),
    or the dry run's summary (``fit``) and estimate; the exit status is 1 when the check fails."""

    options: ConstructOptions
    summary: dict
    result: ConstructionResult | None = None
    estimate: Estimate | None = None
    exit_status: int = 0
    fit: FitSummary | None = None
    out: str | None = None


def run_construct(options: ConstructOptions) -> ConstructOutcome:
    """The parameters from ``--set`` and the flags (a key given both ways is refused), --out checked, then
    the dry run's estimate or the construction built, checked and saved."""
    from attnlab.commands.console import announce_estimate
    from attnlab.commands.options import check_out_path, key_values

    o = options
    c = get_construction(o.name)
    settings = key_values(o.set_, "--set", "H=8")
    for key, value in construction_flags(c, list(o.extra)).items():
        if key in settings:
            raise ConfigError(f"{key} is given twice (as --set {key}=... and as a flag); give it once")
        settings[key] = value
    target = None
    if o.out is not None:
        check_out_path(o.out, "--out")
        target = writable(o.out)
    if o.dry_run:
        fit, est = dry_run(o.name, settings)
        return ConstructOutcome(o, fit.to_dict(), estimate=est, fit=fit)
    _, _, result, summary = construct(o.name, settings, out=target, on_estimate=announce_estimate)
    return ConstructOutcome(o, summary, result=result, exit_status=1 if result.check.verdict == "fail" else 0,
                            out=None if target is None else str(target))


def print_construct(outcome: ConstructOutcome, console: Console | None = None,
                    err_console: Console | None = None) -> None:
    """The summary as JSON, or the dry run's table (:func:`print_dry_run`), or the result's
    (:func:`print_result`)."""
    from attnlab.commands import console as consoles

    console = console or consoles.console
    o = outcome.options
    if o.as_json:
        consoles.print_json(outcome.summary)
    elif outcome.fit is not None and outcome.estimate is not None:
        print_dry_run(console, o.name, outcome.fit, outcome.estimate)
    else:
        print_result(console, o.name, outcome.result, outcome.out)
