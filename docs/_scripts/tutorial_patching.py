"""The tutorial page ``tutorials/patching.md``, executed at build time by mkdocs-gen-files.

Each cell's code runs here, in one namespace, in order; the page shows the code, what it printed and
the figures it drew, so what a reader sees is what this build computed on SmolLM2-135M-Instruct
(shipped offline with attnlab). About a minute on one CPU thread.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import textwrap
import time
from pathlib import Path

import mkdocs_gen_files

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
os.environ.pop("ATTNLAB_PLUGINS", None)

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

PAGE = "tutorials/patching.md"

INTRO = """# Tutorial: activation patching on SmolLM2

This page is executed every time the documentation is built: the code below ran on
SmolLM2-135M-Instruct (shipped with attnlab, offline), and the numbers and figures are what it
computed. It walks through an indirect-object identification (IOI) prompt as a TransformerLens
user would: hook points with TransformerLens' names, a cache, residual-stream patching, head-output
patching, zero ablation of single heads, and then a factual-recall prompt.

Activation patching runs the model on a *corrupted* prompt and copies one activation from the
*clean* run into it; the metric (here the logit difference between two answers at the last
position) says how much of the clean behaviour that single activation restores:

    recovered = (m_patched - m_corrupted) / (m_clean - m_corrupted)

0 means no effect, 1 means the clean value. `attnlab.patching` puts the patched runs in the batch
dimension, so a grid of hundreds of cells is a few forward passes. Its grids: `patch_resid_pre`,
`patch_attn_out` and `patch_mlp_out` (layer x position), and `patch_heads` for a head's `z`, `q`, `k`,
`v`, `attn_scores` or `pattern` (layer x head, or layer x head x position: one query row for the scores
and the pattern; `k` and `v` per key/value head).
"""

CELLS: list[tuple[str, str]] = [
    ("## The model, the prompts and the metric\n\n"
     "SmolLM2's tokenizer adds no BOS by itself; `to_tokens` prepends the model's BOS, `<|im_start|>`, "
     "as the model saw text in training. Both prompts must have the same number of tokens.",
     """
import torch
from attnlab.pretrained import load_pretrained
from attnlab.patching import LogitDiff, patch_resid_pre, patch_heads

torch.set_num_threads(1)  # one thread: on a shared 2-core machine a second one mostly waits
pm = load_pretrained("smollm2", dtype="float32")
clean = pm.to_tokens(" When Mary and John went to the store, John gave a drink to")
corrupted = pm.to_tokens(" When Mary and John went to the store, Mary gave a drink to")
print(clean.shape, corrupted.shape)
print(pm.to_str_tokens(clean))
metric = LogitDiff.from_text(pm, " Mary", " John")   # logit(" Mary") - logit(" John") at the last position
"""),
    ("## A cache with TransformerLens' names\n\n"
     "`run_with_cache` returns the logits and every hook point asked for; the names and their shapes are "
     "TransformerLens' (`blocks.{l}.attn.hook_z` is (batch, position, head, d_head)).",
     """
logits, cache = pm.run_with_cache(clean, names_filter=lambda name: name.startswith("blocks.0."))
for name in ["blocks.0.hook_resid_pre", "blocks.0.attn.hook_q", "blocks.0.attn.hook_k",
             "blocks.0.attn.hook_pattern", "blocks.0.attn.hook_z", "blocks.0.hook_attn_out",
             "blocks.0.hook_mlp_out"]:
    print(f"{name:28s} {tuple(cache[name].shape)}")
m_clean = float(metric(logits[0, -1]))
m_corrupted = float(metric(pm.run_with_cache(corrupted, names_filter=lambda name: False)[0][0, -1]))
print(f"logit difference: clean {m_clean:.3f}, corrupted {m_corrupted:.3f}")
"""),
    ("## The residual stream, layer by position\n\n"
     "The stream entering each block (and the final stream) patched at one position at a time: "
     "31 x 15 = 465 patched runs.",
     """
start = time.perf_counter()
resid = patch_resid_pre(pm, clean, corrupted, metric, include_final=True)
print(f"grid {tuple(resid.grid.shape)} in {time.perf_counter() - start:.1f} s")


def plot_resid(res, tokens, width, name):  # a residual grid's recovered fraction, layer by position
    fig, ax = plt.subplots(figsize=(width, 6.5))
    im = ax.imshow(res.recovered.numpy(), cmap="RdBu", vmin=-1, vmax=1, aspect="auto")
    ax.set_xticks(range(tokens.shape[1]), pm.to_str_tokens(tokens), rotation=90)
    ax.set_ylabel("layer (last row: the final stream)")
    ax.set_title("recovered fraction, residual stream patched")
    fig.colorbar(im, ax=ax)
    show(fig, name)


plot_resid(resid, clean, 7, "ioi-resid.png")
"""),
    ("The information moves from the second name's position (where the prompts differ) to the last "
     "position in the middle layers: reading the grid row by row shows where.",
     """
second_name = 10   # " John" / " Mary" after "store,"
L = resid.grid.shape[0]
for l in range(0, L, 3):
    print(f"layer {l:2d}: at the name {float(resid.recovered[l, second_name]):+.2f}, "
          f"at the last position {float(resid.recovered[l, -1]):+.2f}")
"""),
    ("## Head outputs at the last position\n\n"
     "Each head's output z_h (before W_O) at the last position, patched from the clean run one head "
     "at a time: 30 layers x 9 heads.",
     """
from attnlab.patching import Site, baseline, patched_values

names = [f"blocks.{l}.attn.hook_z" for l in range(30)]
base = baseline(pm, clean, corrupted, names, metric, -1)
n = clean.shape[1]
variants = [(Site(name, n - 1, h),) for name in names for h in range(9)]
heads = (patched_values(pm, base, variants, metric, position=-1) - base.corrupted) / (base.clean - base.corrupted)
heads = heads.reshape(30, 9)
top = sorted(((float(heads[l, h]), l, h) for l in range(30) for h in range(9)), reverse=True)[:5]
print("largest recovered fractions:", ", ".join(f"L{l}H{h} {v:+.3f}" for v, l, h in top))
fig, ax = plt.subplots(figsize=(4.5, 6.5))
im = ax.imshow(heads.numpy(), cmap="RdBu", vmin=-0.5, vmax=0.5, aspect="auto")
ax.set_xlabel("head"); ax.set_ylabel("layer")
ax.set_title("recovered fraction, z_h at the last position")
fig.colorbar(im, ax=ax)
show(fig, "ioi-heads.png")
"""),
    ("## Zero ablation of single heads\n\n"
     "On the clean prompt, each head's output set to 0 at every position through a hook on "
     "`hook_z`; the nine heads of a layer go in one batch, one row per head. The change of the logit "
     "difference is exact (a forward pass per ablation, not a first-order estimate). An ablation in block "
     "l leaves blocks 0..l-1 as they were, so each pass resumes from the clean stream entering block l "
     "(`encode(..., start=l)`, as the patching grids do) and forms the logits at the last position only.",
     """
def zero_one_head_per_row(z, name):
    z = z.clone()
    for b in range(z.shape[0]):
        z[b, :, b] = 0.0          # row b: head b of this layer ablated
    return z

_, streams = pm.run_with_cache(clean, names_filter=lambda name: name.endswith("hook_resid_pre"))
change = torch.zeros(30, 9)
for l in range(30):
    X = streams[f"blocks.{l}.hook_resid_pre"].expand(9, -1, -1)   # (9, n, d_model): one row per head
    with torch.no_grad(), pm.hooks([(f"blocks.{l}.attn.hook_z", zero_one_head_per_row)]):
        out = pm.model.encode(X, start=l, logits_at=-1)           # blocks l..29, logits (9, vocab)
    change[l] = metric(out.logits) - m_clean
worst = sorted(((float(change[l, h]), l, h) for l in range(30) for h in range(9)))[:5]
print("largest drops of the logit difference:", ", ".join(f"L{l}H{h} {v:+.3f}" for v, l, h in worst))
"""),
    ("## Factual recall\n\n"
     "The same tools on another behaviour: \"The Eiffel Tower is in the city of\" against \"The "
     "Colosseum is in the city of\" (both 10 tokens with BOS), metric logit(\" Paris\") - logit(\" Rome\").",
     """
paris = pm.to_tokens("The Eiffel Tower is in the city of")
rome = pm.to_tokens("The Colosseum is in the city of")
city = LogitDiff.from_text(pm, " Paris", " Rome")
facts = patch_resid_pre(pm, paris, rome, city, include_final=True)
print(f"logit difference: clean {facts.clean:.3f}, corrupted {facts.corrupted:.3f}")
plot_resid(facts, paris, 6, "facts-resid.png")
for l in (0, 10, 20, 30):
    print(f"layer {l:2d}: at ' Tower' {float(facts.recovered[l, 4]):+.2f}, "
          f"at the last position {float(facts.recovered[l, -1]):+.2f}")
"""),
]


def run_cells() -> str:
    """Every cell executed in order; the page's Markdown."""
    namespace: dict = {"time": time, "plt": plt}
    out = [INTRO]

    def show(fig, name: str) -> None:
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
        plt.close(fig)
        with mkdocs_gen_files.open(f"tutorials/{name}", "wb") as f:
            f.write(buf.getvalue())
        print(f"__FIGURE__{name}")

    namespace["show"] = show
    for text, code in CELLS:
        code = textwrap.dedent(code).strip("\n")
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(code, f"<tutorial cell: {text.splitlines()[0]}>", "exec"), namespace)  # noqa: S102
        shown = [line for line in printed.getvalue().splitlines() if not line.startswith("__FIGURE__")]
        figures = [line[len("__FIGURE__"):] for line in printed.getvalue().splitlines()
                   if line.startswith("__FIGURE__")]
        out += [text, "", "```python", code, "```", ""]
        if shown:
            out += ["```text", *shown, "```", ""]
        out += [f"![{name}]({name})" for name in figures] + ([""] if figures else [])
    return "\n".join(out)


with mkdocs_gen_files.open(PAGE, "w") as page:
    page.write(run_cells())
mkdocs_gen_files.set_edit_path(PAGE, "docs/_scripts/tutorial_patching.py")
