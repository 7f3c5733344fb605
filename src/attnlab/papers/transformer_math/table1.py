"""Table 1 of the math text (§2): six LLMs' parameter counts, recomputed from their
published hyper-parameters with the closed forms of :mod:`attnlab.analysis.parameters`."""

from __future__ import annotations

from attnlab.analysis.parameters import bert_parameters, decoder_only_parameters, gpt_parameters

TABLE1: dict[str, dict] = {
    "GPT-1": dict(
        release="June 2018", paper_value=117e6,
        hyperparameters=dict(n_layers=12, d_model=768, n_heads=12, d_ff=3072, vocab_size=40478, n_positions=512),
        note="post-LN, no final LayerNorm, learned positions, output tied to W^E (Radford et al. 2018)",
    ),
    "BERT": dict(
        release="October 2018", paper_value=340e6,
        hyperparameters=dict(n_layers=24, d_model=1024, n_heads=16, d_ff=4096, vocab_size=30522,
                             n_positions=512, n_token_types=2),
        note="BERT-large with pooler, without pre-training heads; the 340M printed is rounded up "
             "(the MLM head adds about 1.1M more)",
    ),
    "GPT-2": dict(
        release="February 2019", paper_value=1.5e9,
        hyperparameters=dict(n_layers=48, d_model=1600, n_heads=25, d_ff=6400, vocab_size=50257, n_positions=1024),
        note="GPT-2 XL; the architecture gives 1.558B (its paper prints 1542M, commonly rounded to 1.5B)",
    ),
    "GPT-3": dict(
        release="May 2020", paper_value=175e9,
        hyperparameters=dict(n_layers=96, d_model=12288, n_heads=96, d_ff=49152, vocab_size=50257, n_positions=2048),
        note="GPT-3 175B; the alternating sparse attention pattern adds no parameters",
    ),
    "LaMDA": dict(
        release="January 2022", paper_value=137e9,
        hyperparameters=dict(n_layers=64, d_model=8192, n_heads=128, d_head=128, d_ff=65536, vocab_size=32000),
        note="LaMDA paper §3: decoder-only, 64 layers, d_model 8192, d_ff 65536, 128 heads of 128, "
             "gated-GELU, T5 relative attention (its few bias parameters not counted); the 137B is "
             "non-embedding parameters, and 64 layers x 2^31 = 2^37 = 137.4B",
    ),
    "Minerva": dict(
        release="June 2022", paper_value=540e9,
        hyperparameters=dict(n_layers=118, d_model=18432, n_heads=48, d_head=256, d_ff=73728, vocab_size=256000),
        note="Minerva 540B is PaLM 540B fine-tuned: multi-query attention, SwiGLU, parallel block "
             "(one LayerNorm), no biases, RoPE, shared input/output embedding; PaLM reports 540.35B",
    ),
}


def _table1_count(model: str) -> int:
    hp = TABLE1[model]["hyperparameters"]
    if model == "GPT-1":
        return gpt_parameters(**hp, final_norm=False)
    if model in ("GPT-2", "GPT-3"):
        return gpt_parameters(**hp)
    if model == "BERT":
        return bert_parameters(**hp)
    if model == "LaMDA":
        return decoder_only_parameters(**hp, bias=False, gated_ffn=True, norm_bias=False, embeddings=False)
    if model == "Minerva":
        return decoder_only_parameters(
            **hp, bias=False, gated_ffn=True, n_kv_heads=1, norms_per_layer=1, norm_bias=False
        )
    raise KeyError(model)


def table1_rows() -> list[dict]:
    """One row per Table 1 model: model, release, paper_value, computed, rel_error, note."""
    rows = []
    for model, entry in TABLE1.items():
        computed = _table1_count(model)
        rows.append(dict(
            model=model, release=entry["release"], paper_value=entry["paper_value"], computed=computed,
            rel_error=abs(computed - entry["paper_value"]) / entry["paper_value"], note=entry["note"],
        ))
    return rows
