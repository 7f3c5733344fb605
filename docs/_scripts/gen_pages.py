"""The site's generated pages, written at build time by mkdocs-gen-files.

- ``reference/``: one page per module of ``src/attnlab`` (private ``_*.py`` modules and
  folders left out), found by walking the source tree, so a module added, moved or
  merged needs no edit here. A package's page shows what its ``__init__`` defines,
  its submodules and the names it re-exports (linked to where they are defined).
  Modules that register claims also show their private members: a claim's check is
  a private function ``_name`` decorated with ``@claim``.
- ``papers/``: one page per paper the registry discovers (``attnlab.registry``):
  its claims, experiments (with their config fields) and constructions (with their
  parameters), each linked to the API page of the module that defines it.
- ``paper-scale/``: the runs at the texts' sizes committed under ``results/paper-scale/``, with
  their reports.
- ``contributing.md``: the repository's CONTRIBUTING.md.

Only the papers under ``attnlab.papers`` are documented; modules named in
ATTNLAB_PLUGINS are not part of attnlab and are left out.
"""

from __future__ import annotations

import ast
import dataclasses
import html
import inspect
import os
import sys
from pathlib import Path

import mkdocs_gen_files

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(SRC))
os.environ.pop("ATTNLAB_PLUGINS", None)

import attnlab  # noqa: E402
from attnlab import registry  # noqa: E402
from attnlab.config import RunConfig, describe_fields, format_value  # noqa: E402
from docstrings import escape_cell, inline, to_markdown  # noqa: E402

if Path(attnlab.__file__).resolve().parent != SRC / "attnlab":
    raise SystemExit(f"docs: attnlab was imported from {attnlab.__file__}, not from {SRC}; "
                     f"build the site from the repository root ({ROOT})")

PAPERS_PACKAGE = registry.PAPERS_PACKAGE
RUN_FIELDS = {f.name for f in dataclasses.fields(RunConfig)}


# ---- the modules ------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Module:
    name: str  # dotted
    path: Path  # the .py file
    is_package: bool

    @property
    def doc_path(self) -> str:
        """The page's path under docs/: reference/a/b.md, or reference/a/b/index.md for a package."""
        path = "reference/" + self.name.replace(".", "/")
        return path + "/index.md" if self.is_package else path + ".md"


def walk_modules() -> dict[str, Module]:
    """Every public module of src/attnlab, sorted by dotted name."""
    found = {}
    for path in sorted((SRC / "attnlab").rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        if any(p.startswith("_") and p != "__init__" for p in parts) or "__pycache__" in parts:
            continue
        is_package = parts[-1] == "__init__"
        name = ".".join(parts[:-1] if is_package else parts)
        found[name] = Module(name, path, is_package)
    return dict(sorted(found.items()))


MODULES = walk_modules()


def defined_names(mod: Module) -> list[str]:
    """Public names a module's source defines itself (not imports), in order."""
    tree = ast.parse(mod.path.read_text())
    names = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names += [t.id for t in targets if isinstance(t, ast.Name)]
    return [n for n in dict.fromkeys(names) if not n.startswith("_")]


def exported_names(mod: Module) -> list[tuple[str, str]]:
    """(name, dotted path where it is defined) for each name in a package's ``__all__``
    that it imports, following re-exports through other packages."""
    tree = ast.parse(mod.path.read_text())
    imports, exported = {}, []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                imports[a.asname or a.name] = f"{node.module}.{a.name}"
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets):
            try:
                exported = list(ast.literal_eval(node.value))
            except ValueError:
                exported = []
    return [(n, _canonical(imports[n])) for n in exported if n in imports]


def _canonical(path: str, depth: int = 0) -> str:
    module, _, name = path.rpartition(".")
    mod = MODULES.get(module)
    if mod is None or not mod.is_package or depth > 5:
        return path
    for n, target in exported_names(mod):
        if n == name:
            return _canonical(target, depth + 1)
    return path


def autoref(identifier: str, title: str | None = None, *, optional: bool = False) -> str:
    """A link to the API docs of ``identifier``; an optional one renders as code when that
    object is not documented, a required one fails the strict build."""
    title = title or identifier
    if optional:
        return (f'<autoref identifier="{html.escape(identifier)}" optional><code>{html.escape(title)}'
                "</code></autoref>")
    return f"[`{title}`][{identifier}]"


def module_link(module: str) -> str:
    """A link to a module's API page, or the name as code where it has none."""
    return autoref(module) if module in MODULES else f"`{module}`"


# ---- the reference pages ------------------------------------------------------------------------
def claim_modules() -> set[str]:
    return {c.check.__module__ for c in registry.all_claims()}


def reference_page(mod: Module, claims_here: bool) -> str:
    options: dict[str, str] = {}
    if mod.is_package:
        members = defined_names(mod)
        options["members"] = "[" + ", ".join(members) + "]" if members else "false"
    if claims_here:
        options["filters"] = '["!^__"]'  # the claims' checks are private functions
        options["show_source"] = "true"
    lines = [f"::: {mod.name}"]
    if options:
        lines.append("    options:")
        lines += [f"      {k}: {v}" for k, v in options.items()]
    lines.append("")
    if mod.is_package:
        children = [m for m in MODULES.values() if m.name.rpartition(".")[0] == mod.name]
        if children:
            lines += ["## Modules", "", "| module | summary |", "|---|---|"]
            for m in children:
                lines.append(f"| {module_link(m.name)} | {escape_cell(_summary(m))} |")
            lines.append("")
        exports = exported_names(mod)
        if exports:
            lines += ["## Exports", "", f"`{mod.name}` re-exports these names from its modules:", ""]
            lines += [f"- {autoref(target, name, optional=True)} (from `{target.rpartition('.')[0]}`)"
                      for name, target in exports]
            lines.append("")
    return "\n".join(lines)


def _summary(mod: Module) -> str:
    doc = ast.get_docstring(ast.parse(mod.path.read_text())) or ""
    first = doc.strip().split("\n\n")[0]
    return " ".join(first.split())


def write_reference(nav: mkdocs_gen_files.Nav) -> None:
    claims_here = claim_modules()
    for mod in MODULES.values():
        doc_path = mod.doc_path
        with mkdocs_gen_files.open(doc_path, "w") as f:
            f.write(reference_page(mod, mod.name in claims_here))
        mkdocs_gen_files.set_edit_path(doc_path, mod.path.relative_to(ROOT))
        nav[tuple(mod.name.split("."))] = doc_path.removeprefix("reference/")
    with mkdocs_gen_files.open("reference/SUMMARY.md", "w") as f:
        f.writelines(nav.build_literate_nav())


# ---- the paper pages -----------------------------------------------------------------------------
def in_tree_papers() -> list[registry.Paper]:
    return [p for p in registry.papers().values() if p.package.startswith(PAPERS_PACKAGE + ".")]


def _code(text: object) -> str:
    """A table cell holding code: <code> so that a "|" in it cannot split the cell."""
    return "<code>" + html.escape(str(text)).replace("|", "&#124;") + "</code>"


def _default(value: object) -> str:
    text = format_value(value)
    return "(empty)" if text == "" else _code(text)  # None shows as None: "from the preset" or "off"


def fields_table(cls: type, *, skip: set[str] = frozenset()) -> list[str]:
    """A Markdown table of a config's fields: name, type, default, presets, meaning."""
    fields = [f for f in describe_fields(cls) if f["name"] not in skip]
    if not fields:
        return ["It has no fields of its own.", ""]
    presets = dict(getattr(cls, "PRESETS", {}) or {})
    scales = [s for s in presets if any(f["name"] in presets[s] for f in fields)]
    helps = any(f["help"] for f in fields)
    head = ["field", "type", "default", *[f"{s} preset" for s in scales], *(["meaning"] if helps else [])]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for f in fields:
        cells = [f"`{f['name']}`", _code(f["type"]), _default(f["default"])]
        cells += [_default(presets[s][f["name"]]) if f["name"] in presets[s] else "" for s in scales]
        if helps:
            cells.append(escape_cell(f["help"]) if f["help"] else "")
        rows.append("| " + " | ".join(cells) + " |")
    return rows + [""]


def _function_anchor(fn) -> str | None:
    qualname = getattr(fn, "__qualname__", "")
    if "<" in qualname or fn.__module__ not in MODULES:
        return None
    return f"{fn.__module__}.{qualname}"


def claims_section(paper: registry.Paper, claims: list[registry.Claim]) -> list[str]:
    lines = [f"## Claims ({len(claims)})", ""]
    if not claims:
        return lines + ["No executable claims yet.", ""]
    lines += [f"`attnlab verify {paper.name}` runs every check below and prints the measured value "
              "beside the paper's. Each id links to its check.", "",
              "| claim | where | statement | paper's value | anchored to |", "|---|---|---|---|---|"]
    lines[-2:-2] = ["Each check ends in a verdict derived from its numbers "
                    f"({autoref('attnlab.checks', 'attnlab.checks', optional=True)}). A claim anchored to an entry of "
                    "the text's ledger (below) is reproduced, differs or inconclusive; an unanchored one is attnlab's "
                    "own statement (holds, refuted, inconclusive), a sanity check of attnlab's code, or info.", ""]
    for c in claims:
        anchor = _function_anchor(c.check)
        cid = autoref(anchor, c.id) if anchor else f"`{c.id}`"
        value = escape_cell(c.paper_value) if c.paper_value else "-"
        lines.append(f"| {cid} | {escape_cell(c.where)} | {escape_cell(c.statement)} | {value} | "
                     f"{_code(c.anchor.split('.', 1)[1]) if c.anchor else 'attnlab'} |")
    return lines + [""]


def _sweep_text(e: registry.Experiment) -> str:
    if e.reproduce_sweep is None:
        return ""
    parts = []
    for scale in ("quick", "paper"):
        try:
            plan = e.reproduce_sweep(scale)
        except Exception:  # a plan that cannot be built is the experiment's tests' business
            continue
        grid = " x ".join(f"{k} in {{{', '.join(map(str, v))}}}" for k, v in plan.grid.items())
        parts.append(f"{scale}: {grid} x {plan.seeds} seed{'s' if plan.seeds != 1 else ''}")
    return f" `attnlab reproduce` runs it as a sweep ({inline('; '.join(parts))})." if parts else ""


def experiments_section(paper: registry.Paper, exps: list[registry.Experiment]) -> list[str]:
    lines = [f"## Experiments ({len(exps)})", ""]
    if not exps:
        return lines + ["No experiments yet.", ""]
    lines += [f"`attnlab reproduce {paper.name}` runs every experiment marked *reproduce* into one run "
              "directory with an HTML and a Markdown report; `attnlab sweep ID --grid key=v1,v2` runs "
              "any one over a grid. Every config also has `scale` (`quick` or `paper`, which picks the "
              f"preset values), `seed` and `device` ({autoref('attnlab.config.RunConfig', 'RunConfig', optional=True)}).",
              "", "| experiment | description | run by |", "|---|---|---|"]
    for e in exps:
        lines.append(f"| [`{e.id}`](#{_slug(e.id)}) | {escape_cell(e.description)} | "
                     f"{'reproduce, sweep' if e.in_reproduce else 'sweep only'} |")
    lines.append("")
    for e in exps:
        cls = e.config_cls
        lines += [f"### `{e.id}` {{#{_slug(e.id)}}}", "", inline(e.description) + "." + _sweep_text(e), "",
                  f"Defined in {module_link(e.run.__module__)}; its config is "
                  f"{autoref(f'{cls.__module__}.{cls.__qualname__}', cls.__name__, optional=True)}:", ""]
        lines += fields_table(cls, skip=RUN_FIELDS)
    return lines


def constructions_section(paper: registry.Paper, cons: list[registry.Construction]) -> list[str]:
    lines = [f"## Constructions ({len(cons)})", ""]
    if not cons:
        return lines + ["No constructions yet.", ""]
    lines += ["`attnlab construct NAME --set key=value ... --out FILE.npz` builds one, checks it in float64 "
              "and saves its arrays with the data they were built for. Its memory and time are estimated "
              "first (`--dry-run` prints them and builds nothing): parameters that need more memory than "
              "the machine has are refused.", ""]
    for c in cons:
        cls = c.params_cls
        example = " ".join(f"--set {f['name']}={format_value(f['default'])}" for f in describe_fields(cls)[:1]
                           if f["default"] is not None)
        estimated = (f"; estimated by {autoref(f'{c.estimate.__module__}.{c.estimate.__qualname__}', c.estimate.__name__, optional=True)}"
                     if c.estimate is not None else "")
        lines += [f"### `{c.name}` {{#{_slug('construction-' + c.name)}}}", "", inline(c.description) + ".", "",
                  f"Defined in {module_link(c.build.__module__)}; built by "
                  f"{autoref(f'{c.build.__module__}.{c.build.__qualname__}', c.build.__name__, optional=True)}"
                  f"{estimated} from {autoref(f'{cls.__module__}.{cls.__qualname__}', cls.__name__, optional=True)}:",
                  ""]
        lines += fields_table(cls)
        lines += ["```bash", f"attnlab construct {c.name} {example} --out {c.name}.npz".replace("  ", " "), "```",
                  ""]
    return lines


def errata_section(paper: registry.Paper) -> list[str]:
    errata = registry.all_errata([paper.name])
    lines = [f"## Errors in the text ({len(errata)})", ""]
    if not errata:
        return lines + ["None recorded.", ""]
    lines += [f"`attnlab errata {paper.name}` prints these records ({autoref('attnlab.errata.TextError', 'TextError', optional=True)}); "
              "every report of the paper shows them as a table.", "",
              "| where | the text says | what is right | whose | kind | witness | conclusion survives | measured by |",
              "|---|---|---|---|---|---|---|---|"]
    for e in errata:
        survives = e.survives + (f": {e.conclusion}" if e.conclusion else "")
        lines.append("| " + " | ".join(escape_cell(x) for x in (e.where, e.says, e.correct, e.whose, e.kind, e.witness,
                                                                  survives)) + f" | {_code(e.check) if e.check else '-'} |")
    return lines + [""]


def ledger_section(paper: registry.Paper) -> list[str]:
    """The text's ledger: every statement quoted, with what checks it or why nothing does."""
    from attnlab.registry.coverage import paper_coverage

    cov = paper_coverage(paper.name)
    lines = [f"## The text's statements ({cov.line()})", ""]
    if not cov.entries:
        return lines + ["No ledger yet.", ""]
    lines += [f"Every statement of the text that can be checked or bears on a check, quoted from `{paper.file}` "
              f"(the ledger, `ledger.toml` in {module_link(paper.package)}). A row of attnlab can be reproduced or "
              "differ only if it is anchored to one of these entries; `attnlab coverage "
              f"{paper.name}` prints them with the verdicts of their claims.", "",
              "| entry | where | kind | the text says | checked by |", "|---|---|---|---|---|"]
    for e in cov.entries:
        st = e.statement
        checked = ", ".join(_code(r) for r in e.rows) if e.rows else f"not executable: {escape_cell(st.reason)}"
        quote = escape_cell(st.quote) + (f" *({escape_cell(st.note)})*" if st.note else "")
        lines.append(f"| `{st.id.split('.', 1)[1]}` | {escape_cell(st.where)} | {st.kind} | {quote} | {checked} |")
    return lines + [""]


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in text.lower())


def paper_page(paper: registry.Paper) -> str:
    claims = [c for c in registry.all_claims() if c.paper == paper.name]
    exps = [e for e in registry.all_experiments() if e.paper == paper.name]
    cons = [c for c in registry.all_constructions() if c.paper == paper.name]
    package = sys.modules[paper.package]
    lines = [f"# {inline(paper.title)}", "",
             f"Short name `{paper.name}` · text `{paper.file}` · package {module_link(paper.package)}", ""]
    if package.__doc__:
        lines += [to_markdown(inspect.cleandoc(package.__doc__)), ""]
    if not (claims or exps or cons):
        lines += ["Nothing of this text is executable yet: it has no claims, experiments or constructions.", ""]
    lines += claims_section(paper, claims)
    lines += experiments_section(paper, exps)
    lines += constructions_section(paper, cons)
    lines += errata_section(paper)
    lines += ledger_section(paper)
    return "\n".join(lines)


def write_papers() -> None:
    papers = in_tree_papers()
    index = ["# Papers", "",
             "attnlab makes these texts executable. Each page lists the text's claims (checked by "
             "`attnlab verify`), its experiments (run by `attnlab reproduce`) and its constructions "
             "(built by `attnlab construct`).", "",
             "| paper | short name | text | claims | experiments | constructions | ledger entries checked |",
             "|---|---|---|---|---|---|---|"]
    summary = ["* [Overview](index.md)\n"]
    for p in papers:
        counts = [sum(x.paper == p.name for x in xs)
                  for xs in (registry.all_claims(), registry.all_experiments(), registry.all_constructions())]
        from attnlab.registry.coverage import paper_coverage

        cov = paper_coverage(p.name)
        index.append(f"| [{inline(p.title)}]({p.name}.md) | `{p.name}` | `{p.file}` | "
                     + " | ".join(map(str, counts)) + f" | {cov.checked} of {len(cov.entries)} "
                     f"({cov.not_executable} not executable) |")
        with mkdocs_gen_files.open(f"papers/{p.name}.md", "w") as f:
            f.write(paper_page(p))
        mkdocs_gen_files.set_edit_path(f"papers/{p.name}.md",
                                       MODULES[p.package].path.relative_to(ROOT) if p.package in MODULES else None)
        summary.append(f"* [{p.title}]({p.name}.md)\n")
    with mkdocs_gen_files.open("papers/index.md", "w") as f:
        f.write("\n".join(index) + "\n")
    with mkdocs_gen_files.open("papers/SUMMARY.md", "w") as f:
        f.writelines(summary)


def write_contributing() -> None:
    with mkdocs_gen_files.open("contributing.md", "w") as f:
        f.write((ROOT / "CONTRIBUTING.md").read_text())
    mkdocs_gen_files.set_edit_path("contributing.md", "CONTRIBUTING.md")


PAPER_SCALE = ROOT / "results" / "paper-scale"


def write_paper_scale() -> None:
    """``paper-scale/``: the runs at the texts' sizes committed under results/paper-scale/, one row each
    (from its config.json, env.json and results.json), with its self-contained report.html copied."""
    import json

    from attnlab.reports.format import outline
    from attnlab.runs.rundir import load_run

    lines = ["# Results at the texts' sizes", "",
             "Runs of `attnlab reproduce ... --scale paper` committed with the repository, so that the "
             "verdicts at the texts' own sizes can be read without running anything. Each report is the run's "
             "own `report.html` (self-contained); `results/paper-scale/README.md` in the repository says how "
             "each was run, on which machine, how long it took and how long it was estimated to take.", "",
             "| run | papers | experiments | device | time | verdicts | report |", "|---|---|---|---|---|---|---|"]
    for run in sorted(d for d in PAPER_SCALE.glob("*") if (d / "results.json").is_file()):
        config = json.loads((run / "config.json").read_text())
        env = json.loads((run / "env.json").read_text())
        results = json.loads((run / "results.json").read_text())
        seconds = sum(e.get("seconds") or 0 for e in results.get("experiments", {}).values())
        counts = outline(load_run(run)).verdict_counts()
        with mkdocs_gen_files.open(f"paper-scale/{run.name}/report.html", "w") as f:
            f.write((run / "report.html").read_text())
        lines.append(f"| `{run.name}` | {', '.join(config['papers'])} | "
                     f"{', '.join(f'`{e}`' for e in config['experiments'])} | "
                     f"{env.get('device')}, {env.get('cpu_count')} cores, torch {env.get('torch')} | "
                     f"{seconds / 60:.0f} min | {', '.join(f'{n} {v}' for v, n in counts.items() if n)} | "
                     f"[report.html]({run.name}/report.html) |")
    with mkdocs_gen_files.open("paper-scale/index.md", "w") as f:
        f.write("\n".join(lines) + "\n")


def hide_nav_files() -> None:
    """The SUMMARY.md files feed literate-nav only; they are not pages of the site."""
    from mkdocs.structure.files import InclusionLevel

    files = mkdocs_gen_files.FilesEditor.current().files
    for name in ("reference/SUMMARY.md", "papers/SUMMARY.md"):
        files.get_file_from_path(name).inclusion = InclusionLevel.EXCLUDED


write_reference(mkdocs_gen_files.Nav())
write_papers()
write_paper_scale()
write_contributing()
hide_nav_files()
