"""The documentation site: `mkdocs build --strict` passes, every paper has a page that lists
its claims, experiments and constructions, every public module has an API page, and
docstrings render as written.

Needs the ``docs`` extra (``pip install -c constraints.txt -e ".[docs]"``; CI installs it);
skipped without it.
"""

from __future__ import annotations

import html
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from attnlab import registry

ROOT = Path(__file__).resolve().parents[1]
DOCS_PACKAGES = ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python", "mkdocs_gen_files",
                 "mkdocs_literate_nav")


def _missing() -> list[str]:
    out = []
    for name in DOCS_PACKAGES:
        try:
            if importlib.util.find_spec(name) is None:
                out.append(name)
        except ModuleNotFoundError:
            out.append(name)
    return out


pytestmark = [
    pytest.mark.slow,  # the site build takes 15 to 20 s
    pytest.mark.skipif(bool(_missing()), reason=f"the docs extra is not installed (missing {', '.join(_missing())}): "
                                                'pip install -c constraints.txt -e ".[docs]"'),
]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site, built once for this module with --strict (any warning fails the build)."""
    out = tmp_path_factory.mktemp("site")
    env = {k: v for k, v in os.environ.items() if k != "ATTNLAB_PLUGINS"}
    env.update(DISABLE_MKDOCS_2_WARNING="true", NO_MKDOCS_2_WARNING="1")
    p = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-6000:]
    assert "WARNING" not in p.stderr.replace("WARNING: MkDocs may break", ""), p.stderr[-6000:]
    return out


def _page(site: Path, *parts: str) -> str:
    path = site.joinpath(*parts, "index.html")
    assert path.is_file(), f"no page {path.relative_to(site)}"
    return path.read_text()


def _tree_papers() -> list[registry.Paper]:
    return [p for p in registry.papers().values() if p.package.startswith(registry.PAPERS_PACKAGE + ".")]


def test_every_paper_has_a_page_listing_its_claims_experiments_and_constructions(site):
    papers = _tree_papers()
    assert len(papers) >= 5
    for p in papers:
        page = _page(site, "papers", p.name)
        assert html.escape(p.title) in page and p.file in page
        for c in (c for c in registry.all_claims() if c.paper == p.name):
            assert c.id in page, (p.name, c.id)
        for e in (e for e in registry.all_experiments() if e.paper == p.name):
            assert e.id in page, (p.name, e.id)
        for c in (c for c in registry.all_constructions() if c.paper == p.name):
            assert f'id="construction-{c.name}"' in page and "construct" in page, (p.name, c.name)
    index = _page(site, "papers")
    assert all(f'href="{p.name}/"' in index for p in papers)
    assert not (site / "papers" / "selftest").exists()  # ATTNLAB_PLUGINS papers are not attnlab's


def test_a_paper_without_anything_executable_says_so(site):
    empty = [p for p in _tree_papers() if not any(c.paper == p.name for c in registry.all_claims())
             and not any(e.paper == p.name for e in registry.all_experiments())
             and not any(c.paper == p.name for c in registry.all_constructions())]
    for p in empty:
        assert "Nothing of this text is executable yet" in _page(site, "papers", p.name)


def test_claim_ids_link_to_their_checks_whose_pages_show_the_private_check(site):
    c = next(c for c in registry.all_claims() if c.check.__name__.startswith("_"))
    anchor = f"{c.check.__module__}.{c.check.__qualname__}"
    page = _page(site, "papers", c.paper)
    assert f'#{anchor}"' in page
    module_page = _page(site, "reference", *c.check.__module__.split("."))
    assert f'id="{anchor}"' in module_page and c.id in module_page


def test_every_public_module_has_an_api_page(site):
    src = ROOT / "src"
    modules = []
    for path in (src / "attnlab").rglob("*.py"):
        parts = path.relative_to(src).with_suffix("").parts
        if not any(p.startswith("_") and p != "__init__" for p in parts):
            modules.append(parts[:-1] if parts[-1] == "__init__" else parts)
    assert len(modules) > 100
    for parts in modules:
        assert f'id="{".".join(parts)}"' in _page(site, "reference", *parts)
    for library in ("ops", "nn", "analysis", "training", "data", "tasks", "pretrained", "runs", "sweeps",
                    "reports", "bench", "registry", "config", "results", "errors", "checks", "errata"):
        assert (site / "reference" / "attnlab" / library / "index.html").is_file(), library


def test_docstrings_render_as_written(site):
    softmax = _page(site, "reference", "attnlab", "ops", "softmax")
    assert "Attention(Q, K, V) = softmax(c * Q K^T + M) V" in softmax  # a display, kept verbatim
    config = _page(site, "reference", "attnlab", "config")
    assert "[0, 2**32)" in config  # not bold
    reg = _page(site, "reference", "attnlab", "registry")
    assert "&lt;paper&gt;.&lt;name&gt;" in reg  # not an HTML tag
    checks = _page(site, "reference", "attnlab", "checks")
    assert "<li><code>measured</code>: the number" in checks  # an aligned "name: meaning" list


def test_the_contributors_guide_is_part_of_the_site(site):
    page = _page(site, "contributing")
    assert "Contributing to attnlab" in page and "src/attnlab/papers/toy/__init__.py" in page


def test_the_paper_scale_runs_have_a_page_with_their_reports(site):
    runs = sorted(d.name for d in (ROOT / "results" / "paper-scale").glob("*") if (d / "results.json").is_file())
    assert "logic" in runs
    page = _page(site, "paper-scale")
    for name in runs:
        assert f'href="{name}/report.html"' in page, name
        assert (site / "paper-scale" / name / "report.html").read_text().startswith("<!DOCTYPE html>")


def test_the_patching_tutorial_ran_in_the_build(site):
    """tutorials/patching.md is executed at build time: its printed numbers are this build's. The IOI prompt
    (15 tokens with BOS) gives SmolLM2 a positive logit difference " Mary" - " John" clean and a negative one
    corrupted, the final stream patched recovers it exactly, and the three figures exist."""
    import html as html_lib
    import re

    page = html_lib.unescape(re.sub(r"<[^>]+>", "", _page(site, "tutorials", "patching")))
    assert "torch.Size([1, 15]) torch.Size([1, 15])" in page
    m = re.search(r"logit difference: clean (-?\d+\.\d+), corrupted (-?\d+\.\d+)", page)
    assert m and float(m.group(1)) > 1 and float(m.group(2)) < -1, m
    final = re.search(r"layer 30: at the name ([+-]\d\.\d\d), at the last position ([+-]\d\.\d\d)", page)
    assert final and abs(float(final.group(2)) - 1) <= 0.005 and abs(float(final.group(1))) <= 0.005
    assert "grid (31, 15) in" in page and "largest drops of the logit difference: L" in page
    for name in ("ioi-resid.png", "ioi-heads.png", "facts-resid.png"):
        assert (site / "tutorials" / name).stat().st_size > 10_000, name
