"""Tables 1 and 3 of the text as cells: the verdict given for each assumption at each tested layer.

memorization-capacity-of-mha §5.1 (Table 1: ViT's embedding, a random attention layer and a random
ViT layer on ImageNet) and App. J (Table 3: BERT and GPT-2, trained and random, L0 and L1, on
Wikipedia) mark General Position and Assumptions 1-3 as holding (YES) or failing (NO); NA where a
table reports none. :data:`LAYERS` pairs every layer this package tests
(:mod:`attnlab.papers.memorization.layer_outputs`) with its counterpart in the text and those marks;
:func:`row_anchor` names the ledger entry (``ledger.toml``) of the cell a result is compared with.
"""

from __future__ import annotations

CHECKS = ("general_position", "assumption1", "assumption2", "assumption3")
YES, NO, NA = "✓", "✗", "—"
# layer -> (source, paper counterpart, paper's verdicts GP/A1/A2/A3; NA where the paper reports none)
LAYERS = {
    "embedding": ("random embedding + sinusoidal PE", "Table 1: Embedding (ViT, ImageNet)", (NO, NO, YES, YES)),
    "attention": ("random attention layer (skip, no FCN)", "Table 1: Rand Attention", (NO, YES, YES, NA)),
    "transformer": ("random transformer layer", "Table 1: Rand ViT (layer 1)", (NO, YES, YES, NA)),
    "minilm-L0": ("all-MiniLM-L6-v2, embedding output", "Table 3: BERT Trained L0", (NO, NO, YES, NA)),
    "minilm-L1": ("all-MiniLM-L6-v2, layer 1 output", "Table 3: BERT Trained L1 (Table 1: Trained ViT "
                  f"{NO}/{YES}/{YES})", (NO, NO, YES, NA)),
    "minilm-random-L0": ("MiniLM architecture, re-initialised, L0", "Table 3: BERT Random L0", (NO, NO, YES, NA)),
    "minilm-random-L1": ("MiniLM architecture, re-initialised, L1", "Table 3: BERT Random L1", (NO, NO, YES, NA)),
    "smollm2-L0": ("SmolLM2-135M-Instruct, embedding output W_E[x] (no position vector)", "Table 3: GPT2 Trained L0",
                   (NO, NO, YES, NA)),
    "smollm2-L1": ("SmolLM2-135M-Instruct, layer 1 output (causal, RoPE)", "Table 3: GPT2 Trained L1",
                   (NO, YES, NO, NA)),
    "smollm2-random-L0": ("SmolLM2 architecture, re-initialised, L0", "Table 3: GPT2 Random L0", (NO, NO, YES, NA)),
    "smollm2-random-L1": ("SmolLM2 architecture, re-initialised, L1", "Table 3: GPT2 Random L1", (NO, YES, YES, NA)),
}
# the ledger entry each judged row checks: Table 1's row of the layer (Assumption 3 of the embedding: §5.1's
# sentence), or Table 3's row of the check (its GPT2/BERT columns)
TABLE1_ANCHORS = {"embedding": "memorization.table1-embedding", "attention": "memorization.table1-rand-attention",
                  "transformer": "memorization.table1-rand-vit"}
TABLE3_ANCHORS = {"general_position": "memorization.table3-general-position",
                  "assumption1": "memorization.table3-assumption1", "assumption2": "memorization.table3-assumption2"}
ASM3_EMBEDDING = "memorization.asm3-embedding"  # §5.1: "Assumption 3 ... already holds for the Embedding layer"


def row_anchor(layer: str, check: str) -> str:
    """The ledger entry of the text's cell that the row of (``layer``, ``check``) compares with."""
    if layer in TABLE1_ANCHORS:
        return ASM3_EMBEDDING if check == "assumption3" else TABLE1_ANCHORS[layer]
    return TABLE3_ANCHORS[check]
