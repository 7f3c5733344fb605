"""attnlab's docstrings, rendered as they read in the source.

attnlab's docstrings are plain text, not Markdown: formulas (``softmax(Q K^T / sqrt(d))``,
``W_Q,h``, ``||X||_F``, ``2**32``), aligned ``name: meaning`` lists, indented displays
(equations, shapes, code) and a few reStructuredText habits (``::``, ``:func:`x```,
``Parameters`` / ``----------`` sections). Given to Markdown as they are, ``*`` and ``_``
would turn into emphasis, ``<paper>`` into an HTML tag, ``x[i][j]`` into a link and the
aligned lists into one run-on paragraph.

:func:`to_markdown` turns such a docstring into Markdown that renders the same text:

- prose keeps its words and symbols (Markdown's special characters are escaped), and
  ````code```` and ```code``` spans stay code;
- a display indented by four spaces (an equation, a table of shapes, a code example)
  becomes a code block, as written;
- a paragraph of two or more ``label: text`` lines, or of lines with hanging indents,
  becomes a list, one item per entry (numpy-style ``Parameters`` sections too);
- ``- item`` and ``1. item`` lists stay lists, ``**bold**`` stays bold;
- ``:func:`name``` and its kin become links to the object's API page where it is
  documented (plain code otherwise).

:class:`AttnlabDocstrings` is the Griffe extension that applies it to every object
mkdocstrings renders (mkdocs.yml: ``docstring_style: null``, so no parser reorders the
text). It also shows each config field declared with ``attnlab.config.param(default,
help)`` with its default as value and its help as docstring, and heads each claim check
with the claim it registers.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path
from typing import Callable

_INDENT = re.compile(r"^( *)")
_CODE_SPAN = re.compile(r"(``.+?``|`[^`]+`)", re.DOTALL)
_ROLE = re.compile(r":(?:py:)?(?:func|mod|class|meth|attr|data|obj|exc|const|ref):`(~?)([^`<>]+?)`")
_BOLD = re.compile(r"(?<![\w*])\*\*(?=[^\s*])(.+?)(?<=[^\s*])\*\*(?![\w*])")
_LABEL = re.compile(r"^(?P<label>[A-Za-z_][\w .,'()\[\]/^*+-]{0,31}?)\s?:(?P<gap>\s+)(?P<rest>\S.*)$")
_ALIGNED = re.compile(r"[^\s.] {2,}\S")  # a gap inside a line (not after a full stop): columns
_NUMPY_ENTRY = re.compile(r"^(?P<name>\S[^:]*?)\s+:\s+(?P<rest>.*)$")
_LIST_ITEM = re.compile(r"^(?:[-+*]|\d+[.)])\s+\S")
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]#|!])")

Resolver = Callable[[str], "str | None"]


# ---- inline text ----------------------------------------------------------------------------
def inline(text: str, resolve: Resolver | None = None) -> str:
    """One line of plain text as Markdown that renders the same characters.

    Code spans stay code; ``**bold**`` stays bold; ``:role:`target``` becomes a
    cross-reference (``resolve`` maps a target to a full dotted path, or None).
    """
    out = []
    pos = 0
    for m in _ROLE.finditer(text):
        out.append(_inline_text(text[pos:m.start()]))
        out.append(_role(m.group(1), m.group(2), resolve))
        pos = m.end()
    out.append(_inline_text(text[pos:]))
    return "".join(out)


def _role(tilde: str, target: str, resolve: Resolver | None) -> str:
    target = target.strip()
    shown = target.rsplit(".", 1)[-1] if tilde else target
    path = (resolve(target) if resolve else None) or target
    code = "<code>" + _html(shown) + "</code>"
    return f'<autoref identifier="{_html(path)}" optional>{code}</autoref>'


def _inline_text(text: str) -> str:
    parts = _CODE_SPAN.split(text)
    out = []
    for i, part in enumerate(parts):
        if i % 2:  # a code span: Markdown renders it literally
            out.append(part)
            continue
        pieces, pos = [], 0
        for b in _BOLD.finditer(part):
            pieces.append(_escape(part[pos:b.start()]))
            pieces.append("**" + _escape(b.group(1)) + "**")
            pos = b.end()
        pieces.append(_escape(part[pos:]))
        out.append("".join(pieces))
    return "".join(out)


def _escape(text: str) -> str:
    text = _MD_SPECIAL.sub(r"\\\1", text)
    text = re.sub(r"&(?=#?\w+;)", "&amp;", text)  # "&lt;" written in a docstring stays "&lt;"
    return re.sub(r"<(?=[A-Za-z/!?])", "&lt;", text)


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def escape_cell(text: str) -> str:
    """Plain text for one cell of a Markdown table (one line, pipes escaped)."""
    return inline(" ".join(str(text).split())).replace("\\|", "&#124;").replace("|", "&#124;")


# ---- blocks ---------------------------------------------------------------------------------
def to_markdown(doc: str, resolve: Resolver | None = None) -> str:
    """A plain-text docstring (already dedented) as Markdown; see the module docstring."""
    lines = doc.expandtabs().splitlines()
    out: list[str] = []
    i, n = 0, len(lines)
    literal_next = False  # the previous paragraph ended with "::"
    while i < n:
        if not lines[i].strip():
            i += 1
            continue
        base = _indent(lines[i])
        if base >= 4 or (literal_next and base > 0):  # a display: kept as written
            j, block = i, []
            while j < n and (not lines[j].strip() or _indent(lines[j]) >= min(base, 4)):
                block.append(lines[j])
                j += 1
            while not block[-1].strip():
                block.pop()
            out += _code_block(block)
            i, literal_next = j, False
            continue
        j, para = i + 1, [lines[i]]
        while j < n and lines[j].strip():
            deeper = _indent(lines[j]) >= 4 and _indent(lines[j]) > base + 2
            if deeper and not any(_is_entry(p) for p in para):
                break  # a display right below a line of prose
            para.append(lines[j])
            j += 1
        literal_next = para[-1].rstrip().endswith("::")
        if literal_next:
            para[-1] = para[-1].rstrip()[:-1]  # "text::" -> "text:"
        out += _paragraph(para, resolve)
        out.append("")
        i = j
    return "\n".join(out).strip() + "\n"


def _indent(line: str) -> int:
    return len(_INDENT.match(line).group(1))


def _is_entry(line: str) -> bool:
    s = line.strip()
    return bool(_label(s) or _NUMPY_ENTRY.match(s) or _LIST_ITEM.match(s))


def _code_block(block: list[str]) -> list[str]:
    strip = min(_indent(b) for b in block if b.strip())
    body = [b[strip:] for b in block]
    lang = "python" if _is_python("\n".join(body)) else "text"
    return [f"```{lang}", *body, "```", ""]


def _is_python(code: str) -> bool:
    """Code that parses and calls, defines or imports something (a bare formula is text)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return False
    kinds = (ast.Call, ast.FunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom, ast.Dict)
    return any(isinstance(node, kinds) for node in ast.walk(tree))


def _paragraph(para: list[str], resolve: Resolver | None) -> list[str]:
    base = min(_indent(p) for p in para)
    stripped = [p.strip() for p in para]
    if len(para) >= 2 and len(stripped[1]) >= 3 and set(stripped[1]) <= {"-", "="}:  # "Returns\n-------"
        return [f"**{inline(stripped[0], resolve)}**", "", *_entries(_numpy_items(stripped[2:]), resolve)]
    if any(_LIST_ITEM.match(s) for s in stripped):
        return _with_lists(para, resolve)
    if len(para) >= 2 and all(_columns(p) for p in para):  # a table written in the docstring
        return _code_block(para)
    display = _display_run(para, base)
    if display is not None:  # aligned columns indented below a line: a display inside the paragraph
        a, b = display
        out = _paragraph(para[:a], resolve) + [""] if a else []
        out += _code_block(para[a:b])
        return out + (_paragraph(para[b:], resolve) if b < len(para) else [])
    items = _field_items(para, base)
    if items is not None:
        lead, entries = items
        out = [inline(" ".join(lead), resolve), ""] if lead else []
        return out + _entries(entries, resolve)
    if sum(_label(p) is not None for p in para if _indent(p) == base) >= 2:
        # several "name: text" lines mixed with running text: keep the source's line breaks
        lines = _prose(stripped, resolve)
        return [line + "  " for line in lines[:-1]] + lines[-1:]
    return _prose(stripped, resolve)


def _display_run(para: list[str], base: int) -> tuple[int, int] | None:
    """[a, b): the first run of lines indented below the paragraph's first line whose every
    line holds aligned columns (a table written in the docstring), with the line above
    it when that one has columns too; else None."""
    k = 1
    while k < len(para):
        if _indent(para[k]) > base:
            j = k
            while j < len(para) and _indent(para[j]) > base:
                j += 1
            if all(_columns(p) for p in para[k:j]):
                return (k - 1 if _columns(para[k - 1]) else k), j
            k = j
        else:
            k += 1
    return None


def _columns(line: str) -> bool:
    """The line holds aligned columns (a gap of two or more spaces), the gap after a
    ``label:`` aside."""
    m = _label(line)
    return bool(_ALIGNED.search(m.group("rest") if m else line.strip()))


def _label(line: str):
    """The match of a ``label: text`` line, or None. A label is short, one phrase (no
    sentence end, no double space), with balanced brackets."""
    m = _LABEL.match(line.strip())
    if m is None:
        return None
    label = m.group("label")
    if ". " in label or "  " in label or label.count("(") != label.count(")") \
            or label.count("[") != label.count("]") or len(label.split()) > 5:
        return None
    return m


def _prose(lines: list[str], resolve: Resolver | None) -> list[str]:
    """Lines of running text (one paragraph), line breaks kept as in the source."""
    md = inline("\n".join(lines), resolve).split("\n")
    return [_escape_line_start(line) for line in md]


def _escape_line_start(md: str) -> str:
    """A line of prose that Markdown would read as a block marker ("> x", "----")."""
    if md.startswith(">") or re.fullmatch(r"-+\s*", md):
        return "\\" + md
    if re.fullmatch(r"=+\s*", md):
        return "&#61;" + md[1:]
    return md


def _field_items(para: list[str], base: int):
    """(lead-in lines, [(label, text)]) when the paragraph is a list of entries, else None.

    An entry starts at a ``label: text`` line at the paragraph's indentation, or at a line
    whose next line is indented further (a hanging indent); its continuation lines are
    indented further. Two or more entries, and no other line at the paragraph's
    indentation after the first entry, make a list.
    """
    starts, others = [], []
    for k, line in enumerate(para):
        if _indent(line) != base:
            continue
        hanging = k + 1 < len(para) and _indent(para[k + 1]) > base
        (starts if _label(line) or hanging else others).append(k)
    if len(starts) < 2 or any(k > starts[0] for k in others):
        return None
    lead = [p.strip() for p in para[:starts[0]]]
    entries = []
    for a, b in zip(starts, starts[1:] + [len(para)]):
        m = _label(para[a])
        label, text = (m.group("label"), m.group("rest")) if m else (None, para[a].strip())
        entries.append((label, " ".join([text, *(p.strip() for p in para[a + 1:b])])))
    return lead, entries


def _numpy_items(lines: list[str]):
    entries = []
    for line in lines:
        m = _NUMPY_ENTRY.match(line)
        if m or not entries:
            entries.append((m.group("name") if m else line, m.group("rest") if m else ""))
        else:
            label, text = entries[-1]
            entries[-1] = (label, f"{text} {line}".strip())
    return entries


def _entries(entries, resolve: Resolver | None) -> list[str]:
    out = []
    for label, text in entries:
        if label is None:
            out.append(f"- {inline(text, resolve)}")
        elif re.fullmatch(r"[A-Za-z_][\w.]*", label):
            out.append(f"- `{label}`: {inline(text, resolve)}")
        else:
            out.append(f"- {inline(label, resolve)}: {inline(text, resolve)}")
    return out


def _with_lists(para: list[str], resolve: Resolver | None) -> list[str]:
    """A paragraph holding ``- item`` lines: lead-in prose, then the items (a blank line
    between, as Markdown needs); continuation lines join their item."""
    lead: list[str] = []
    items: list[list[str]] = []
    for line in para:
        s = line.strip()
        if _LIST_ITEM.match(s):
            items.append([s])
        elif items:
            items[-1].append(s)
        else:
            lead.append(s)
    out = _prose(lead, resolve) + [""] if lead else []
    for item in items:
        marker, first = item[0].split(None, 1)
        out.append(f"{marker} {inline(' '.join([first, *item[1:]]), resolve)}")
    return out


# ---- the Griffe extension -------------------------------------------------------------------
try:
    import griffe
except ImportError:  # the helpers above are used without Griffe too
    griffe = None


def _claims_by_function() -> dict[str, object]:
    """Dotted path of each claim check -> its Claim (from attnlab's own registry)."""
    root = Path(__file__).resolve().parents[2]
    if str(root / "src") not in sys.path:
        sys.path.insert(0, str(root / "src"))
    from attnlab import registry

    return {f"{c.check.__module__}.{c.check.__qualname__}": c for c in registry.all_claims()}


if griffe is not None:

    class AttnlabDocstrings(griffe.Extension):
        """Plain-text docstrings to Markdown; config fields' help; claim checks' claims."""

        def __init__(self) -> None:
            super().__init__()
            self._claims: dict[str, object] | None = None
            self._done: set[int] = set()

        def on_package(self, *, pkg, **kwargs) -> None:
            """Once a package is loaded (Griffe >= 1.14; older releases call it
            ``on_package_loaded``): every object below it, aliases left out."""
            stack = [pkg]
            while stack:
                obj = stack.pop()
                self._visit(obj)
                stack += [m for m in obj.members.values() if not m.is_alias]

        on_package_loaded = on_package

        def _visit(self, obj) -> None:
            if obj.is_attribute:
                field = _param_field(obj.value)
                if field is not None:  # a config field: its default as value, its help as docstring
                    obj.value, help_ = field
                    if obj.docstring is None and help_:
                        obj.docstring = griffe.Docstring(help_, parent=obj)
            head = None
            if obj.is_function:
                if self._claims is None:
                    self._claims = _claims_by_function()
                c = self._claims.get(obj.path)
                if c is not None:
                    head = _claim_head(c)
            self._convert(obj, head)

        def _convert(self, obj, head: str | None = None) -> None:
            if id(obj) in self._done:
                return
            self._done.add(id(obj))
            text = obj.docstring.value if obj.docstring is not None else ""

            def resolve(target: str) -> str | None:
                if target.startswith("attnlab.") or target == "attnlab":
                    return target
                first, _, rest = target.partition(".")
                try:
                    path = obj.resolve(first)
                except Exception:  # not in scope: perhaps a member the class inherits
                    cls = obj if obj.is_class else obj.parent if obj.parent is not None and obj.parent.is_class else None
                    member = cls.all_members.get(first) if cls is not None else None
                    if member is None:
                        return None  # unknown: the role renders as code
                    path = member.final_target.path if member.is_alias else member.path
                return f"{path}.{rest}" if rest else path

            md = to_markdown(text, resolve) if text.strip() else ""
            if head:
                md = head + ("\n\n" + md if md else "\n")
            if not md:
                return
            if obj.docstring is None:
                obj.docstring = griffe.Docstring(md, parent=obj)
            else:
                obj.docstring.value = md


def _param_field(value) -> tuple[str, str | None] | None:
    """(default source, help) of ``param(default, "help")`` (a Griffe expression), else None."""
    if value is None:
        return None
    try:
        call = ast.parse(str(value), mode="eval").body
    except SyntaxError:
        return None
    if not (isinstance(call, ast.Call) and getattr(call.func, "id", getattr(call.func, "attr", "")) == "param"):
        return None
    args = dict(zip(("default", "help"), call.args)) | {k.arg: k.value for k in call.keywords}
    if "default" not in args:
        return None
    help_ = args.get("help")
    text = help_.value if isinstance(help_, ast.Constant) and isinstance(help_.value, str) else None
    return ast.unparse(args["default"]), text


def _claim_head(c) -> str:
    """Markdown that names the claim a check registers (id, where, statement, paper's value)."""
    rows = [f"**Claim** `{c.id}` ({inline(c.where)}): {inline(c.statement)}."]
    if c.paper_value:
        rows.append(f"Paper's value: {inline(c.paper_value)}.")
    return "  \n".join(rows)
