"""The registry's state and discovery: papers, text errors, and the import of every module
below :mod:`attnlab.papers` (and ``ATTNLAB_PLUGINS``) that registers what it defines."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import importlib
import importlib.util
import os
import pkgutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from attnlab.ledger import Ledger, load as load_ledger
from attnlab.errata import TextError
from attnlab.errors import AttnlabError, ConfigError, UnknownNameError

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


LEDGER_FILE = "ledger.toml"


def paper_ledger(name: str) -> Ledger:
    """The ledger of paper ``name`` (:mod:`attnlab.ledger`): ``ledger.toml`` in its package,
    read once; empty where the package has none."""
    if name not in _STATE.papers:
        discover()
    p = _STATE.papers.get(name)
    if p is None:
        raise UnknownNameError(f"unknown paper {name!r}: choose one of {', '.join(_STATE.papers)}")
    if name not in _STATE.ledgers:
        spec = importlib.util.find_spec(p.package) if p.package else None
        folder = Path(spec.origin).parent if spec is not None and spec.origin else None
        _STATE.ledgers[name] = load_ledger(name, folder / LEDGER_FILE) if folder is not None else Ledger(name, ())
    return _STATE.ledgers[name]


def check_anchor(what: str, paper: str, anchor: str) -> None:
    """``anchor`` names an entry of ``paper``'s ledger (ConfigError saying what to change if not)."""
    if anchor.split(".", 1)[0] != paper:
        raise ConfigError(f"{what}: anchor {anchor!r} must name an entry of its own paper's ledger ({paper}.<slug>)")
    paper_ledger(paper).get(anchor)


def papers() -> dict[str, Paper]:
    discover()
    return dict(_STATE.papers)


def get_paper(name: str) -> Paper:
    ps = papers()
    if name not in ps:
        raise UnknownNameError(f"unknown paper {name!r}: choose one of {', '.join(ps)}")
    return ps[name]


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
class Registry:
    """What is registered: papers, claims, experiments, constructions and text errors, by id."""

    papers: dict[str, Paper] = field(default_factory=dict)
    claims: dict[str, Any] = field(default_factory=dict)  # id -> attnlab.registry.claims.Claim
    experiments: dict[str, Any] = field(default_factory=dict)  # id -> attnlab.registry.experiments.Experiment
    constructions: dict[str, Any] = field(default_factory=dict)  # name -> ...constructions.Construction
    errata: dict[str, TextError] = field(default_factory=dict)
    ledgers: dict[str, Ledger] = field(default_factory=dict)  # paper -> its ledger, read once
    discovered: bool = False


_STATE = Registry()  # the one registry; scratch() swaps its contents, never the object


def check_home(what: str, paper: str, module: str) -> None:
    """An object defined under attnlab.papers must live in its own paper's package."""
    home = _STATE.papers[paper].package
    if module.startswith(PAPERS_PACKAGE + ".") and home and not (module == home or module.startswith(home + ".")):
        raise ConfigError(f"{what!r} belongs to paper {paper!r} ({home}) but is defined in {module}; "
                          f"move it into {home.replace('.', '/')}/")


def record(kind: str, key: str, obj: Any, paper: str, module: str) -> Any:
    """Store ``obj`` under ``key`` in the registry's table of ``kind`` ("claims", "experiments",
    "constructions"): defined in its paper's package (:func:`check_home`), registered once."""
    check_home(key, paper, module)
    table = getattr(_STATE, kind)
    if key in table:
        raise ConfigError(f"{kind[:-1]} {key!r} is registered twice")
    table[key] = obj
    return obj


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
def scratch() -> Iterator[Registry]:
    """A fresh, empty registry for the duration of the block (tests, examples): nothing is
    discovered into it; what the block registers is gone afterwards, and the registry as
    it was is back."""
    saved = dataclasses.replace(_STATE)
    for f in dataclasses.fields(Registry):
        setattr(_STATE, f.name, f.default_factory() if f.default_factory is not dataclasses.MISSING else True)
    try:
        yield _STATE
    finally:
        for f in dataclasses.fields(Registry):
            setattr(_STATE, f.name, getattr(saved, f.name))
