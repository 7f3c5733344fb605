"""Claims about parameter counts (math-behind-transformers §1.2.2, §2, Table 1)."""

from __future__ import annotations

import torch

from attnlab.analysis.parameters import (
    block_parameters,
    decoder_block_parameters,
    encoder_decoder_parameters,
)
from attnlab.nn.block import BlockConfig, DecoderBlock, TransformerBlock
from attnlab.nn.transformer import EncoderDecoder
from attnlab.papers.transformer_math.table1 import table1_rows
from attnlab.checks import NO_ERROR, Check, at_most
from attnlab.registry import claim

# (d_model, n_heads, d_head, d_ff): distinct primes where the architecture allows; the
# sinusoidal encoding of a full model needs an even d_model.
_BLOCK_CONFIGS = [(6, 3, 2, 7), (10, 5, 2, 13), (15, 3, 5, 11), (7, 1, 7, 3), (5, 3, 7, 2)]
_MODEL_CONFIGS = [(6, 3, 2, 7), (10, 5, 2, 13), (14, 7, 3, 5)]


def _numel(m: torch.nn.Module) -> int:
    return sum(p.numel() for p in m.parameters())


@claim(
    "transformer-math.param-count-formula",
    where="§1.2.2, §1.2.5",
    statement="attnlab's closed-form parameter count of a block, a decoder block and a full "
    "encoder-decoder equals the number of parameters of attnlab's modules",
    paper_value="exact",
)
def _param_count_formula(seed: int) -> Check:
    """attnlab.analysis.parameters against sum(p.numel()) of attnlab.nn's modules: a formula of attnlab
    against attnlab's code (the text prints no count of a block), so a sanity check."""
    worst, checked = 0, 0
    for d, H, k, m in _BLOCK_CONFIGS:
        for bias in (True, False):
            cfg = BlockConfig(d_head=k, bias=bias)
            block, dec = TransformerBlock(d, H, m, cfg), DecoderBlock(d, H, m, cfg)
            worst = max(worst, abs(block_parameters(d, H, k, m, bias) - _numel(block)))
            worst = max(worst, abs(decoder_block_parameters(d, H, k, m, bias) - _numel(dec)))
            checked += 2
    for d, H, k, m in _MODEL_CONFIGS:
        for tie in (False, True):
            for pos, norm_position in (("sinusoidal", "post"), ("learned", "pre")):
                kw = dict(tie_embeddings=tie, positional=pos, max_len=17)
                model = EncoderDecoder(11, 13, d, H, m, 2, n_decoder_layers=3,
                                       block=BlockConfig(d_head=k, norm_position=norm_position), **kw)
                formula = encoder_decoder_parameters(11, 13, d, H, m, 2, d_head=k, n_decoder_layers=3,
                                                     norm_position=norm_position, **kw)
                worst = max(worst, abs(formula - _numel(model)))
                checked += 1
    detail = (
        f"max |formula - sum(p.numel())| over {checked} modules: blocks and decoder blocks with and "
        f"without biases, (d, H, d_head, d_ff) in {_BLOCK_CONFIGS}; encoder-decoders (l=11/13, L=2/3, "
        f"tied or not, sinusoidal post-LN or learned pre-LN) for {_MODEL_CONFIGS}"
    )
    values = {"max_abs_difference": worst, "modules_checked": checked,
              "block_configs": [list(c) for c in _BLOCK_CONFIGS], "model_configs": [list(c) for c in _MODEL_CONFIGS]}
    return at_most(worst, 0, detail, values, role="sanity")


@claim(
    "transformer-math.table1-counts",
    where="§2, Table 1",
    statement="the parameter counts of Table 1 follow from the models' published architectures",
    paper_value="GPT-1 117M, BERT 340M, GPT-2 1.5B, GPT-3 175B, LaMDA 137B, Minerva 540B",
    anchor="transformer-math.table-1",
    falsifier="a model whose count, computed from its published architecture, is more than 5% away from Table 1",
    erratum=NO_ERROR,
)
def _table1_counts(seed: int) -> Check:
    rows = [r for r in table1_rows() if r["computed"] is not None]
    worst = max(r["rel_error"] for r in rows)
    parts = [
        f"{r['model']}: paper {r['paper_value']:.4g} vs ours {r['computed']:,} ({r['rel_error']:.2%})"
        for r in rows
    ]
    detail = "; ".join(parts) + (
        ". Table 1 rounds: GPT-2 XL is 1.558B (its paper prints 1542M), BERT-large 335M without "
        "pre-training heads, LaMDA's 137B counts non-embedding parameters"
    )
    values = {"max_rel_error": worst,
              "models": {r["model"]: {"paper_value": r["paper_value"], "computed": r["computed"],
                                      "rel_error": r["rel_error"]} for r in rows}}
    return at_most(worst, 0.05, detail, values=values)
