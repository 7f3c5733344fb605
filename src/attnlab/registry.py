"""Papers, claims, experiments and constructions, and how they are found.

Every paper is one package under :mod:`attnlab.papers`; its ``__init__`` registers the
paper, and the modules below it register the paper's claims, experiments and
constructions as they are imported. :func:`discover` imports every module below
``attnlab.papers``, recursively (``pkgutil.walk_packages``), so a file moved into a
subfolder is still found; a test pins how many of each every paper has.

- A **claim** is one checkable sentence of a paper: an id ``<paper>.<name>``, where in
  the paper it stands, the statement, the paper's value where it prints one, and a
  check. A check takes a seed, draws its own inputs from it, and returns an
  :class:`attnlab.checks.Check`: the measured number, the relation and threshold that
  decide it, its role, and the structured values behind its one line of detail; the
  verdict is derived from them.
- An **experiment** is a frozen config on :class:`attnlab.config.RunConfig` and
  ``run(cfg, run_dir) -> ExperimentResult`` (:mod:`attnlab.results`).
- A **text error** is an :class:`attnlab.errata.TextError` record: where a text is wrong,
  whose error it is, the witness and what survives (:func:`register_errata`).
- A **construction** is a frozen config on :class:`attnlab.config.Config` (its
  parameters) and ``build(params) -> ConstructionResult``: weights in the paper's
  orientation and the check that proves they work.

Modules outside the tree can register too: ``ATTNLAB_PLUGINS`` lists dotted module
names or ``.py`` files (separated by ``os.pathsep``) that discovery imports after the
papers, e.g. a paper of one's own that is not (yet) part of attnlab.

This module never imports a paper by name; it finds them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fnmatch
import hashlib
import importlib
import importlib.util
import os
import pkgutil
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from attnlab.checks import Check, above, at_least, at_most, below, equals, info, near  # noqa: F401 (for claims)
from attnlab.errata import TextError
from attnlab.errors import AttnlabError, ConfigError, UnknownNameError
from attnlab.runs.jsonable import to_jsonable

PAPERS_PACKAGE = "attnlab.papers"
PLUGINS_ENV = "ATTNLAB_PLUGINS"


# ---- papers ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Paper:
    """name: the short name used in ids and commands ("transformer-math"); title; file: the
    text it makes executable; package: the module that registered it."""

    name: str
    title: str
    file: str
    package: str = ""


# ---- claims ----------------------------------------------------------------------------
CheckFn = Callable[[int], Check]


@dataclass(frozen=True)
class Claim:
    """id: "<paper>.<name>"; where: where the text states it; statement: the sentence checked;
    check(seed) -> Check; paper_value: what the text prints (None where it prints nothing)."""

    id: str
    where: str
    statement: str
    check: CheckFn
    paper_value: str | None = None

    @property
    def paper(self) -> str:
        return self.id.split(".", 1)[0]

    def run(self, seed: int = 0) -> "ClaimResult":
        """Run the check; the claim's statement, where and paper value fill what the check leaves empty."""
        start = time.perf_counter()
        try:
            m = self.check(seed)
            if not isinstance(m, Check):
                raise TypeError(f"check returned {type(m).__name__}, not attnlab.checks.Check")
            m = m.with_context(quantity=m.quantity or self.statement, where=m.where or self.where,
                               paper_value=self.paper_value if m.paper_value is None else m.paper_value)
            return ClaimResult(self, m, None, time.perf_counter() - start)
        except Exception:  # a broken check is reported, never hidden
            return ClaimResult(self, None, traceback.format_exc(limit=4), time.perf_counter() - start)


@dataclass(frozen=True)
class ClaimResult:
    claim: Claim
    check: Check | None
    error: str | None
    seconds: float = 0.0

    @property
    def verdict(self) -> str:
        """The check's verdict (:data:`attnlab.checks.VERDICTS`), or "error" if the check raised."""
        return "error" if self.check is None else self.check.verdict

    def to_dict(self) -> dict:
        d = {
            "id": self.claim.id,
            "paper": self.claim.paper,
            "where": self.claim.where,
            "statement": self.claim.statement,
            "paper_value": self.claim.paper_value,
            "verdict": self.verdict,
            "seconds": round(self.seconds, 4),
        }
        if self.check is not None:
            c = self.check.to_dict()
            c.pop("paper_value"), c.pop("where")
            d.update(c)
            d["verdict"] = self.verdict
        else:
            d["error"] = self.error
        return d


def claim(id: str, *, where: str, statement: str, paper_value: str | None = None):
    """Register the decorated ``check(seed) -> Check`` as the claim ``id``."""
    paper = id.split(".", 1)[0]
    if "." not in id or paper not in _STATE.papers:
        raise ConfigError(f"claim id {id!r} must be '<paper>.<name>' with paper in {list(_STATE.papers)}")

    def register(check: CheckFn) -> CheckFn:
        _check_home(id, paper, check.__module__)
        if id in _STATE.claims:
            raise ConfigError(f"claim {id!r} is registered twice")
        _STATE.claims[id] = Claim(id, where, statement, check, paper_value)
        return check

    return register


# ---- experiments -----------------------------------------------------------------------
@dataclass(frozen=True)
class SweepPlan:
    """What ``reproduce`` sweeps at one scale: grid key -> values, ``seeds`` seeds per
    grid point, and fixed ``base`` overrides (config fields other than seed/device)."""

    grid: dict[str, list[Any]]
    seeds: int = 1
    base: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.seeds, int) or isinstance(self.seeds, bool) or self.seeds < 1:
            raise ConfigError(f"a sweep plan needs seeds >= 1, got {self.seeds!r}")
        if not self.grid or any(not list(v) for v in self.grid.values()):
            raise ConfigError("a sweep plan needs a non-empty grid with at least one value per key")


@dataclass(frozen=True)
class Experiment:
    """id: "<paper>.<name>"; config_cls: a frozen RunConfig; run(cfg, run_dir) -> ExperimentResult.

    in_reproduce=False leaves it out of ``attnlab reproduce`` (it stays runnable through
    ``attnlab sweep``). ``reproduce_sweep(scale) -> SweepPlan`` makes ``reproduce`` run a
    sweep of it (the plan's grid x seeds, seeds counted from the run's seed) instead of
    one run, and ``aggregate(rows) -> ExperimentResult`` turns the sweep's table rows
    into what the report shows. ``cpu_only``, when set, says why the experiment is better
    on the CPU (small float64 problems, say): inside a CUDA run it runs on the CPU, and
    its report says so (:meth:`run_device`).
    """

    id: str
    description: str
    config_cls: type
    run: Callable[..., Any]
    in_reproduce: bool = True
    reproduce_sweep: Callable[[str], SweepPlan] | None = None
    aggregate: Callable[[list[dict]], Any] | None = None
    cpu_only: str = ""

    def run_device(self, device: str) -> tuple[str, str | None]:
        """(the device this experiment runs on in a run on ``device``, the note saying why, or None)."""
        if self.cpu_only and device != "cpu":
            return "cpu", f"Ran on the CPU inside a {device} run: {self.cpu_only}."
        return device, None

    def __post_init__(self) -> None:
        if (self.reproduce_sweep is None) != (self.aggregate is None):
            raise ConfigError(f"experiment {self.id!r}: give reproduce_sweep and aggregate together")
        if not dataclasses.is_dataclass(self.config_cls) or not self.config_cls.__dataclass_params__.frozen:
            raise ConfigError(f"experiment {self.id!r}: its config must be a frozen dataclass")

    @property
    def paper(self) -> str:
        return self.id.split(".", 1)[0]


def register(exp: Experiment) -> Experiment:
    """Register ``exp`` (call it at the bottom of the experiment's module)."""
    from attnlab.config import RunConfig

    if "." not in exp.id or exp.paper not in _STATE.papers:
        raise ConfigError(f"experiment id {exp.id!r} must be '<paper>.<name>' with paper in {list(_STATE.papers)}")
    if not issubclass(exp.config_cls, RunConfig):
        raise ConfigError(f"experiment {exp.id!r}: its config must extend attnlab.config.RunConfig")
    _check_home(exp.id, exp.paper, exp.run.__module__)
    if exp.id in _STATE.experiments:
        raise ConfigError(f"experiment {exp.id!r} is registered twice")
    _STATE.experiments[exp.id] = exp
    return exp


# ---- constructions ---------------------------------------------------------------------
@dataclass
class ConstructionResult:
    """What a construction built and what its check measured.

    arrays: what ``--out`` saves (.npz): weights and the data they were built for, in the
            paper's notation and orientation
    values: the check's numbers and the parameters, in the order they are shown
    check:  the :class:`attnlab.checks.Check` that proves the weights do what the text says
            (role "construction": reproduced, or fail when attnlab's construction is wrong;
            role "text" where the text's statement itself may not hold for these parameters)
    notes:  caveats and where the construction departs from the text
    """

    arrays: dict[str, Any]
    values: dict[str, Any]
    check: Check
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not isinstance(self.check, Check):
            raise TypeError(f"ConstructionResult.check must be an attnlab.checks.Check, got {type(self.check).__name__}")

    @property
    def verdict(self) -> str:
        return self.check.verdict

    @property
    def passed(self) -> bool:
        """The construction's check holds."""
        return self.check.passed

    @property
    def criterion(self) -> str:
        return f"{self.check.quantity} {self.check.criterion}"

    def to_dict(self) -> dict:
        return {**{k: to_jsonable(v) for k, v in self.values.items()}, "verdict": self.verdict,
                "passed": bool(self.passed), "criterion": self.criterion, "check": self.check.to_dict(),
                "notes": list(self.notes), "arrays": sorted(self.arrays)}


@dataclass(frozen=True)
class Construction:
    """name: what ``attnlab construct NAME`` takes; params_cls: a frozen attnlab.config.Config
    whose fields are the ``--set`` keys; build(params) -> ConstructionResult.

    Every parameter can also be given as ``--<name> value`` (``-`` for ``_``);
    ``flag_aliases`` maps further value-less flags to (parameter, value), e.g.
    {"per-example": ("shared", False)}.

    estimate(params) -> :class:`attnlab.estimates.Estimate`: the peak memory and the work of
    ``build(params)``, from the parameters alone (no array allocated). ``attnlab construct``
    refuses before building when the memory exceeds the machine's, says the estimate when
    the time exceeds ``attnlab.estimates.ANNOUNCE_SECONDS``, and prints it with ``--dry-run``.
    """

    name: str
    paper: str
    description: str
    params_cls: type
    build: Callable[[Any], ConstructionResult]
    flag_aliases: Mapping[str, tuple[str, Any]] = field(default_factory=dict)
    estimate: Callable[[Any], Any] | None = None

    def __post_init__(self) -> None:
        if not dataclasses.is_dataclass(self.params_cls) or not self.params_cls.__dataclass_params__.frozen:
            raise ConfigError(f"construction {self.name!r}: its parameters must be a frozen dataclass")


def register_construction(c: Construction) -> Construction:
    from attnlab.config import Config

    if c.paper not in _STATE.papers:
        raise ConfigError(f"construction {c.name!r}: paper {c.paper!r} is not registered")
    if not issubclass(c.params_cls, Config):
        raise ConfigError(f"construction {c.name!r}: its parameters must extend attnlab.config.Config")
    _check_home(c.name, c.paper, c.build.__module__)
    if c.name in _STATE.constructions:
        raise ConfigError(f"construction {c.name!r} is registered twice")
    _STATE.constructions[c.name] = c
    return c


# ---- papers, registered by each paper's package -----------------------------------------
def register_paper(name: str, title: str, file: str, *, package: str) -> Paper:
    """Register a paper; call it in the paper package's ``__init__`` with ``package=__name__``."""
    if not name or not all(ch.isalnum() or ch == "-" for ch in name):
        raise ConfigError(f"paper name {name!r} must be letters, digits and '-'")
    p = Paper(name, title, file, package)
    old = _STATE.papers.get(name)
    if old is not None and old != p:
        raise ConfigError(f"paper {name!r} is registered twice ({old.package} and {package})")
    _STATE.papers[name] = p
    return p


# ---- errors in the texts -------------------------------------------------------------------
def register_errata(errors: "list[TextError] | tuple[TextError, ...]") -> None:
    """Register a paper's :class:`attnlab.errata.TextError` records (call it once, in the module
    that lists them); ids are unique and the paper must be registered."""
    for e in errors:
        if not isinstance(e, TextError):
            raise ConfigError(f"register_errata takes attnlab.errata.TextError records, got {type(e).__name__}")
        if e.paper not in _STATE.papers:
            raise ConfigError(f"text error {e.id!r}: paper {e.paper!r} is not registered")
        if e.id in _STATE.errata:
            raise ConfigError(f"text error {e.id!r} is registered twice")
        _STATE.errata[e.id] = e


def all_errata(papers: "list[str] | None" = None) -> list[TextError]:
    """Every registered text error (of ``papers`` when given), in registration order."""
    discover()
    return [e for e in _STATE.errata.values() if not papers or e.paper in papers]


# ---- state and discovery -----------------------------------------------------------------
@dataclass
class _Registry:
    papers: dict[str, Paper] = field(default_factory=dict)
    claims: dict[str, Claim] = field(default_factory=dict)
    experiments: dict[str, Experiment] = field(default_factory=dict)
    constructions: dict[str, Construction] = field(default_factory=dict)
    errata: dict[str, TextError] = field(default_factory=dict)
    discovered: bool = False


_STATE = _Registry()


def _check_home(what: str, paper: str, module: str) -> None:
    """An object defined under attnlab.papers must live in its own paper's package."""
    home = _STATE.papers[paper].package
    if module.startswith(PAPERS_PACKAGE + ".") and home and not (module == home or module.startswith(home + ".")):
        raise ConfigError(f"{what!r} belongs to paper {paper!r} ({home}) but is defined in {module}; "
                          f"move it into {home.replace('.', '/')}/")


def discover() -> None:
    """Import every module below attnlab.papers (recursively), then ATTNLAB_PLUGINS. Idempotent."""
    if _STATE.discovered:
        return
    _STATE.discovered = True  # set first: a module importing the registry must not recurse
    try:
        import_recursively(PAPERS_PACKAGE)
        for entry in plugin_entries():
            load_plugin(entry)
    except BaseException:
        _STATE.discovered = False
        raise


def import_recursively(package: str) -> list[str]:
    """Import ``package`` and every module below it, subfolders included; return their names."""
    root = importlib.import_module(package)
    names = [package]
    for found in pkgutil.walk_packages(root.__path__, prefix=package + "."):
        importlib.import_module(found.name)
        names.append(found.name)
    return names


def plugin_entries() -> list[str]:
    return [e for e in os.environ.get(PLUGINS_ENV, "").split(os.pathsep) if e.strip()]


def load_plugin(entry: str) -> None:
    """Import a dotted module name or a .py file (once) so that it registers what it defines."""
    entry = entry.strip()
    if entry.endswith(".py"):
        path = Path(entry).resolve()
        if not path.is_file():
            raise ConfigError(f"{PLUGINS_ENV}: {entry} is not a file; give .py files or dotted module names")
        name = "attnlab_plugin_" + path.stem + "_" + hashlib.sha256(str(path).encode()).hexdigest()[:8]
        if name in sys.modules:
            return
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except AttnlabError:
            del sys.modules[name]
            raise
        except Exception as e:  # the plugin's own error, said in one line
            del sys.modules[name]
            raise ConfigError(f"{PLUGINS_ENV}: {entry} failed to load: {_where(e)}; fix that file") from None
        except BaseException:
            del sys.modules[name]
            raise
    else:
        try:
            importlib.import_module(entry)
        except ModuleNotFoundError as e:
            raise ConfigError(f"{PLUGINS_ENV}: cannot import {entry!r} ({e}); fix the name or the path") from None
        except AttnlabError:
            raise
        except Exception as e:
            raise ConfigError(f"{PLUGINS_ENV}: {entry} failed to load: {_where(e)}; fix that module") from None


def _where(e: Exception) -> str:
    """"SyntaxError: '(' was never closed (line 1)": an exception and where it was raised, on one line."""
    line = getattr(e, "lineno", None)
    if line is None and e.__traceback__ is not None:
        tb = e.__traceback__
        while tb.tb_next is not None:
            tb = tb.tb_next
        line = tb.tb_lineno
    msg = getattr(e, "msg", None) or str(e)
    return f"{type(e).__name__}: {msg}" + (f" (line {line})" if line else "")


@contextlib.contextmanager
def scratch() -> Iterator[_Registry]:
    """A fresh, empty registry for the duration of the block (tests, examples): nothing is
    discovered into it; what the block registers is gone afterwards, and the registry as
    it was is back."""
    global _STATE
    saved = _STATE
    _STATE = _Registry(discovered=True)
    try:
        yield _STATE
    finally:
        _STATE = saved


# ---- lookups -----------------------------------------------------------------------------
def papers() -> dict[str, Paper]:
    discover()
    return dict(_STATE.papers)


def get_paper(name: str) -> Paper:
    ps = papers()
    if name not in ps:
        raise UnknownNameError(f"unknown paper {name!r}: choose one of {', '.join(ps)}")
    return ps[name]


def all_claims() -> list[Claim]:
    discover()
    return sorted(_STATE.claims.values(), key=lambda c: c.id)


def select_claims(selectors: list[str] | None = None) -> list[Claim]:
    """Claims matching paper names, claim ids (a whole id names that claim alone), any prefix
    of an id, or a glob of ids (``memorization.prop*``, ``*.theorem1*``); all when empty.

    A known paper with no claims yet is a ConfigError: nothing would be checked."""
    claims = all_claims()
    if not selectors:
        return claims
    chosen: dict[str, Claim] = {}
    for s in selectors:
        if any(ch in s for ch in "*?["):
            hits = [c for c in claims if fnmatch.fnmatchcase(c.id, s)]
        elif any(c.id == s for c in claims):  # a whole id names that claim alone
            hits = [c for c in claims if c.id == s]
        else:
            hits = [c for c in claims if c.paper == s or c.id.startswith(s)]
        if not hits:
            if s in _STATE.papers:
                with_claims = sorted({c.paper for c in claims})
                raise ConfigError(f"paper {s!r} has no executable claims yet; papers with claims: "
                                  f"{', '.join(with_claims)}")
            raise UnknownNameError(
                f"unknown paper or claim {s!r}: papers are {', '.join(_STATE.papers)}; "
                "`attnlab list` shows every claim id"
            )
        chosen.update((c.id, c) for c in hits)
    return sorted(chosen.values(), key=lambda c: c.id)


def all_experiments() -> list[Experiment]:
    discover()
    return sorted(_STATE.experiments.values(), key=lambda e: e.id)


def get_experiment(id: str) -> Experiment:
    discover()
    if id not in _STATE.experiments:
        raise UnknownNameError(f"unknown experiment {id!r}: `attnlab list` shows the experiments")
    return _STATE.experiments[id]


def all_constructions() -> list[Construction]:
    discover()
    return sorted(_STATE.constructions.values(), key=lambda c: c.name)


def get_construction(name: str) -> Construction:
    discover()
    if name not in _STATE.constructions:
        known = ", ".join(sorted(_STATE.constructions)) or "none"
        raise UnknownNameError(f"unknown construction {name!r}: choose one of {known}")
    return _STATE.constructions[name]


