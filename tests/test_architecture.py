"""The layering of the package, read from the source (every import statement, also those
inside functions): the library never imports a paper, papers do not import each other,
each library layer imports only the layers below it, and no module imports itself back
through a cycle. A move that breaks the architecture fails here, not in a user's hands."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PAPERS = "attnlab.papers"

# Library layers, bottom to top: what each package (or top-level module) may import
# besides itself. Papers sit above all of them; the commands (attnlab.commands) may import any
# library layer, and the command line (attnlab.cli) sits above the commands and the papers.
ALLOWED: dict[str, set[str]] = {
    "attnlab.errors": set(),
    "attnlab.stored": set(),  # the stored form of a record (Stored.to_dict): a floor under every layer
    # run directories, seeding, the JSON encoder, torch's thread count and how worker processes start:
    # a floor under the results, training, the registry, the bench, the sweeps, the reports and the commands
    "attnlab.runs": {"attnlab.errors"},
    "attnlab.checks": {"attnlab.errors"},
    "attnlab.errata": {"attnlab.errors", "attnlab.stored"},
    "attnlab.ledger": {"attnlab.errors", "attnlab.stored"},  # each text's statements, quoted: data and its reader
    "attnlab.deviations": {"attnlab.errors", "attnlab.stored"},  # where an experiment's protocol departs from its text's
    "attnlab.config": {"attnlab.errors"},
    "attnlab.estimates": {"attnlab.errors", "attnlab.config"},
    "attnlab.terminal": set(),  # tables for the command line: rich only
    "attnlab.results": {"attnlab.errors", "attnlab.checks", "attnlab.errata", "attnlab.deviations", "attnlab.runs"},
    # the attention viewer draws a JSON block and nothing else: a leaf that pretrained outputs may show
    "attnlab.reports.viewer": {"attnlab.errors", "attnlab.checks", "attnlab.errata", "attnlab.results"},
    "attnlab.ops": {"attnlab.errors", "attnlab.config"},
    "attnlab.nn": {"attnlab.errors", "attnlab.config", "attnlab.ops"},
    "attnlab.data": {"attnlab.errors", "attnlab.config"},
    "attnlab.tasks": {"attnlab.errors", "attnlab.config"},
    "attnlab.training": {"attnlab.errors", "attnlab.config", "attnlab.ops", "attnlab.nn", "attnlab.runs"},
    "attnlab.analysis": {"attnlab.errors", "attnlab.config", "attnlab.ops", "attnlab.nn", "attnlab.training"},
    "attnlab.pretrained": {"attnlab.errors", "attnlab.config", "attnlab.ops", "attnlab.nn", "attnlab.data",
                           "attnlab.reports.viewer"},
    # activation patching on the hook points of any attnlab stack (a PretrainedModel is passed in, not imported)
    "attnlab.patching": {"attnlab.errors", "attnlab.config", "attnlab.ops", "attnlab.nn"},
    "attnlab.registry": {"attnlab.errors", "attnlab.checks", "attnlab.errata", "attnlab.ledger", "attnlab.config",
                         "attnlab.results", "attnlab.runs"},
    "attnlab.bench": {"attnlab.errors", "attnlab.checks", "attnlab.errata", "attnlab.config", "attnlab.results", "attnlab.ops",
                      "attnlab.runs"},
    "attnlab.sweeps": {"attnlab.errors", "attnlab.checks", "attnlab.errata", "attnlab.config", "attnlab.results", "attnlab.registry", "attnlab.runs"},
    # a report is built from the run directory's files alone: no registry, no paper
    "attnlab.reports": {"attnlab.errors", "attnlab.checks", "attnlab.errata", "attnlab.deviations", "attnlab.config",
                        "attnlab.results",
                        "attnlab.runs", "attnlab.reports.viewer"},
    # the commands (reproduce, analyze, construct) sit above every library layer, below the command line
    "attnlab.commands": {"attnlab.errors", "attnlab.stored", "attnlab.checks", "attnlab.errata", "attnlab.ledger", "attnlab.deviations",
                         "attnlab.config",
                         "attnlab.estimates",
                         "attnlab.terminal", "attnlab.results", "attnlab.reports.viewer", "attnlab.ops", "attnlab.nn",
                         "attnlab.data", "attnlab.tasks", "attnlab.training", "attnlab.analysis", "attnlab.pretrained",
                         "attnlab.patching", "attnlab.registry", "attnlab.bench", "attnlab.runs", "attnlab.sweeps", "attnlab.reports"},
}
TOP = {"attnlab", "attnlab.cli", "attnlab.__main__"}  # the package root and the command line may import any layer


def _modules() -> dict[str, Path]:
    out = {}
    for path in (SRC / "attnlab").rglob("*.py"):
        parts = path.relative_to(SRC).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


MODULES = _modules()


def _is_package(name: str) -> bool:
    return MODULES.get(name, Path()).name == "__init__.py"


def _imports(name: str) -> set[str]:
    """Every attnlab module ``name`` imports; ``from a.b import c`` counts as a.b.c when c is a module."""
    tree = ast.parse(MODULES[name].read_text(), filename=str(MODULES[name]))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against this module's package
                pkg = name if _is_package(name) else name.rsplit(".", 1)[0]
                pkg = ".".join(pkg.split(".")[: len(pkg.split(".")) - node.level + 1])
                base = f"{pkg}.{base}" if base else pkg
            for a in node.names:
                found.add(f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base)
    return {m for m in found if m == "attnlab" or m.startswith("attnlab.")}


GRAPH = {m: {i for i in _imports(m) if i in MODULES and i != m} for m in MODULES}


def _layer(module: str) -> str | None:
    for layer in sorted(ALLOWED, key=len, reverse=True):
        if module == layer or module.startswith(layer + "."):
            return layer
    return None


def _paper(module: str) -> str | None:
    return module.split(".")[2] if module.startswith(PAPERS + ".") else None


def test_the_walk_sees_the_whole_package():
    assert len(MODULES) > 100 and "attnlab.registry" in MODULES and "attnlab.papers.memorization" in MODULES
    assert "attnlab.ops.softmax" in GRAPH["attnlab.nn.attention"]  # a known edge


@pytest.mark.parametrize("module", sorted(m for m in MODULES if not m.startswith(PAPERS) and m not in TOP))
def test_library_modules_import_only_layers_below_and_never_a_paper(module):
    layer = _layer(module)
    assert layer is not None, f"{module} belongs to no layer: add its package to ALLOWED"
    for target in GRAPH[module]:
        assert not target.startswith(PAPERS), f"{module} imports {target}: the library never imports a paper"
        other = _layer(target)
        if other != layer and target != "attnlab":
            assert other in ALLOWED[layer], f"{module} ({layer}) imports {target} ({other}), which is not below it"


def test_runs_sit_below_the_sweeps_the_reports_and_the_commands():
    """rundir and seeds are the floor: nothing under attnlab.runs imports what is built on them."""
    above = ("attnlab.sweeps", "attnlab.reports", "attnlab.registry", "attnlab.pretrained", "attnlab.analysis",
             "attnlab.data", "attnlab.commands", "attnlab.cli")
    assert not ALLOWED["attnlab.runs"] & set(above)
    for module in (m for m in MODULES if _layer(m) == "attnlab.runs"):
        for target in GRAPH[module]:
            assert not target.startswith(above), f"{module} imports {target}, which is built on attnlab.runs"


def test_no_library_layer_imports_the_commands_or_the_command_line():
    """The commands sit above the library and below the command line: only attnlab.cli (and the
    package root's lazy attributes) may import them, and nothing imports attnlab.cli."""
    for module in MODULES:
        for target in GRAPH[module]:
            if target.startswith("attnlab.commands") and not module.startswith("attnlab.commands"):
                assert module in TOP, f"{module} imports {target}: only the command line calls the commands"
            if target.startswith("attnlab.cli"):
                assert module in ("attnlab", "attnlab.__main__"), \
                    f"{module} imports {target}: nothing imports the command line"


def test_papers_do_not_import_each_other():
    for module in (m for m in MODULES if _paper(m)):
        for target in GRAPH[module]:
            if _paper(target):
                assert _paper(target) == _paper(module), f"{module} imports {target} from another paper"


def test_no_import_cycles():
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    import sys

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        for v in sorted(GRAPH):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    assert not cycles, f"import cycles: {cycles}"


# ---- the command seam: cli.py parses, calls, prints and exits; the verbs live in attnlab.commands -------
CLI_LINES = 300  # cli.py, blank lines and docstrings counted
COMMAND_FUNCTION_LINES = 60  # any function in attnlab.commands: it fits on a screen


def _long_functions(path: Path, limit: int) -> list[str]:
    """name:line (length) of each function or method in ``path`` longer than ``limit`` lines, decorators
    not counted (``end_lineno - lineno + 1``)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            n = node.end_lineno - node.lineno + 1
            if n > limit:
                out.append(f"{path.name}:{node.lineno} {node.name} ({n} lines)")
    return out


def test_the_command_line_stays_a_table_of_options():
    n = len((SRC / "attnlab" / "cli.py").read_text().splitlines())
    assert n <= CLI_LINES, f"cli.py has {n} lines (at most {CLI_LINES}): move what a verb does to attnlab.commands"


def test_no_function_in_the_commands_is_longer_than_a_screen():
    long = [f for path in sorted((SRC / "attnlab" / "commands").rglob("*.py"))
            for f in _long_functions(path, COMMAND_FUNCTION_LINES)]
    assert not long, f"split into named steps (at most {COMMAND_FUNCTION_LINES} lines): {long}"


def test_the_ceiling_counts_a_function_of_61_lines_and_not_one_of_60(tmp_path):
    def source(name: str, body_lines: int) -> str:
        return f"def {name}():\n" + "".join(f"    x{i} = {i}\n" for i in range(body_lines)) + "\n\n"

    (tmp_path / "long.py").write_text(source("f", COMMAND_FUNCTION_LINES) + source("g", COMMAND_FUNCTION_LINES - 1))
    assert _long_functions(tmp_path / "long.py", COMMAND_FUNCTION_LINES) == ["long.py:1 f (61 lines)"]


def _private_imports(path: Path) -> list[str]:
    """``module:name`` of each private name (one leading underscore, not a dunder) that ``path`` imports
    from another module: what a module keeps to itself is no seam between two."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom):
            out += [f"{node.module}:{a.name}" for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")]
    return out


def test_no_command_imports_another_modules_private_names():
    private = {path.name: names for path in sorted((SRC / "attnlab" / "commands").rglob("*.py"))
               if (names := _private_imports(path))}
    assert not private, f"make these public (or move them where they are used): {private}"


def test_a_private_import_is_found_and_a_public_one_is_not(tmp_path):
    (tmp_path / "m.py").write_text("from a.b import _hidden, shown\nfrom c import __version__\nimport d\n")
    assert _private_imports(tmp_path / "m.py") == ["a.b:_hidden"]


def test_every_verb_has_its_run_and_print_in_the_commands():
    """Each command of the command line calls ``run_<verb>`` and prints with a ``print_<verb>``."""
    from attnlab.cli import app

    tree = ast.parse((SRC / "attnlab" / "cli.py").read_text())
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    for command in app.registered_commands:
        verb = command.name or command.callback.__name__
        assert f"run_{verb}" in called, f"`attnlab {verb}` does not call run_{verb}"


# ---- rooms: an experiment module holds its config, run and presentation, the maths lives beside it --------
EXPERIMENT_LINES = 400


def test_experiment_modules_stay_under_the_ceiling():
    """No module in ``papers/*/experiments/`` over 400 lines: config, ``run`` and presentation only."""
    papers = SRC / "attnlab" / "papers"
    sizes = {str(p.relative_to(papers)): len(p.read_text().splitlines()) for p in papers.glob("*/experiments/*.py")}
    assert len(sizes) >= 28, sorted(sizes)  # the glob still finds the experiment modules
    over = {k: n for k, n in sizes.items() if n > EXPERIMENT_LINES}
    assert not over, f"experiment modules over {EXPERIMENT_LINES} lines: {over}; move the maths beside them"
