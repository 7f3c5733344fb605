"""attnlab analyze on SmolLM2-135M-Instruct (shipped GGUF): a Llama-family decoder with grouped-query
attention, its evidence beside the patterns (sinks at the causal chance level, value-weighted sinks,
copying scores, direct logit attribution, ablations with intervals over segments), each number
recomputed here from the library functions."""

from __future__ import annotations

import json

import pytest
import torch
from tolerances import FLOAT64, FLOAT64_LONG, VIEWER_ROUNDING

pytest.importorskip("gguf")
pytest.importorskip("transformers")
pytestmark = pytest.mark.slow  # SmolLM2's load and 270 heads: about 30 s
# Segments and repeated-random-token prompts of at most 16 tokens (halves of 7 random tokens): every number
# below is recomputed from them, and the forward passes of the 36 + 18 exact ablations scale with the length.
MAX_TOKENS = 16


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from attnlab.pretrained.gguf import smollm2_path
    from attnlab.commands.analyze import analyze

    smollm2_path()  # skips nothing: the models extra installs it; a clear error otherwise
    return analyze("smollm2", max_tokens=MAX_TOKENS, segments=2, dtype="float64",
                   out=tmp_path_factory.mktemp("a") / "run")


@pytest.fixture(scope="module")
def pm():
    from attnlab.pretrained import load_pretrained

    return load_pretrained("smollm2", dtype="float64")


def test_heads_are_grouped_by_their_key_value_head(run):
    p = run.payload
    assert (p["layers"], p["heads_per_layer"], p["kv_heads_per_layer"], p["causal"]) == (30, 9, 3, True)
    assert [x["kv_head"] for x in p["heads"][:9]] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert any("9 query heads share 3 key/value heads" in n for n in p["notes"])


def test_sink_chance_is_causal_uniform_attention(run):
    segs = json.loads((run.path / "segments.json").read_text())
    lengths = [len(x) for x in segs["input_ids"]]
    harmonic = [sum(1 / k for k in range(1, n + 1)) / n for n in lengths]
    assert run.payload["chance"]["sink"] == pytest.approx(sum(harmonic) / len(harmonic), abs=FLOAT64)
    assert run.payload["chance"]["sink"] > 2 / min(lengths)  # well above the bidirectional 1/n


def test_sinks_equal_the_first_column_of_the_maps(run, pm):
    """Each head's sink is the mean over segments of the mean first-column weight of its maps, recomputed
    here from one forward pass per segment (float64, both runs)."""
    segs = json.loads((run.path / "segments.json").read_text())
    per = []
    for ids in segs["input_ids"]:
        A = torch.stack([P[0] for P in pm.forward(torch.tensor([ids])).attentions])  # (L, H, n, n)
        per.append(A[..., :, 0].mean(-1))
    direct = torch.stack(per).mean(0)
    for x in run.payload["heads"]:
        assert abs(x["sink"] - direct[x["layer"], x["head"]].item()) <= FLOAT64_LONG
        lo, hi = x["ci"]["sink"]
        assert lo - FLOAT64 <= x["sink"] <= hi + FLOAT64
        assert -1 - 1e-9 <= x["copying"] <= 1 + 1e-9 and x["qk_norm"] > 0 and x["ov_norm"] > 0
        assert 0 <= x["sink_norm"] <= 1 + FLOAT64


def test_exact_zero_ablation_is_removing_the_head(run, pm):
    from attnlab.analysis.heads.ablation import segment_loss

    p = run.payload
    ab = p["ablation"]
    assert ab["mode"] == "top" and len(ab["exact_heads"]) == 12 and ab["segments"] == 2
    segs = json.loads((run.path / "segments.json").read_text())
    m = ab["tokens"]
    x = torch.tensor([r[:m] for r in segs["input_ids"]])
    l, h = ab["exact_heads"][0]
    head = p["heads"][l * 9 + h]
    assert head["ablation"]["zero"]["measured"] == "exact"
    with torch.no_grad():
        clean = segment_loss(pm.model(x).logits, x)
        W_O = pm.model.blocks[l].attn.W_O
        saved = W_O.clone()
        W_O[h] = 0
        ablated = segment_loss(pm.model(x).logits, x)
        W_O.copy_(saved)
    assert clean.mean().item() == pytest.approx(ab["base_loss"], abs=1e-9)
    assert head["ablation"]["zero"]["delta_loss"] == pytest.approx((ablated - clean).mean().item(), abs=1e-9)
    lo, hi = head["ablation"]["zero"]["ci"]
    assert lo < head["ablation"]["zero"]["delta_loss"] < hi
    others = [x for x in p["heads"] if [x["layer"], x["head"]] not in ab["exact_heads"]]
    assert len(others) == 270 - 12 and all("ablation" not in x and "ablation_estimate" in x for x in others)


def test_report_shows_the_evidence(run):
    html = (run.path / "report.html").read_text()
    for text in ("Causal evidence", "value-weighted", "Copying score", "Direct logit attribution",
                 "Head ablations"):
        assert text in html


def test_induction_heads_are_ablated_on_the_second_copy(run):
    p = run.payload
    ia = p["induction_ablation"]
    assert len(ia["heads"]) == 6 and ia["prompts"] == 8
    half = p["repeated_random_tokens"]["half"]
    assert ia["scored_predictions"] == half - 1
    top = sorted(p["heads"], key=lambda x: -x["tl_repeated_induction"])[:6]
    assert sorted([x["layer"], x["head"]] for x in top) == ia["heads"]
    for x in top:
        for k in ("zero", "mean", "resample"):
            a = x["induction_ablation"][k]
            assert a["measured"] == "exact" and a["ci"][0] <= a["delta_loss"] <= a["ci"][1]


def test_the_report_viewer_carries_dla_and_the_ablations_of_every_head(run):
    """With an output head the viewer's table also lists DLA for every head and the three exact ablations for the
    re-run heads (no value for the others), heads.json's numbers to four significant digits."""
    block = json.loads((run.path / "results.json").read_text())["experiments"]["analyze"]["results"]["interactive"][0]
    scores = {s["name"]: s for s in block["scores"]}
    named = {"sink", "copying", "dla", "ablation.zero.delta_loss", "ablation.mean.delta_loss",
             "ablation.resample.delta_loss"}
    assert named <= set(scores) and all(scores[k]["ranked"] == 270 for k in ("sink", "copying", "dla"))
    assert all(scores[f"ablation.{k}.delta_loss"]["ranked"] == 12 for k in ("zero", "mean", "resample"))
    assert "voita_argmax_next" not in scores and "voita_argmax_previous" in scores  # causal: no key i+1
    checked = 0
    for x in run.payload["heads"]:
        if x["layer"] not in block["layer_ids"]:
            continue
        li, hi = block["layer_ids"].index(x["layer"]), block["head_ids"].index(x["head"])
        for name, want in (("dla", x["dla"]),
                           ("ablation.zero.delta_loss", x["ablation"]["zero"]["delta_loss"] if "ablation" in x else None)):
            got = scores[name]["values"][li][hi]
            assert (got is None if want is None else abs(got - want) <= VIEWER_ROUNDING * abs(want)), \
                (x["layer"], x["head"], name)
        checked += 1
    assert checked >= 9 * 2  # the first and the last layer at least


def test_every_smollm2_segment_starts_with_its_bos(run, pm):
    """SmolLM2's tokenizer adds no BOS; analyze prepends "<|im_start|>" (id 1) to every text segment, within
    --max-tokens, so the sink is measured on the token the model sees first; the notes say so."""
    from attnlab.commands.analyze.text import make_segments

    bos = pm.tokenizer.bos_token_id
    assert (bos, pm.tokenizer.bos_token) == (1, "<|im_start|>") and pm.tokenizer("The cat")["input_ids"][0] != bos
    segs = json.loads((run.path / "segments.json").read_text())
    assert segs["input_ids"] and all(ids[0] == bos and ids.count(bos) == 1 and len(ids) <= MAX_TOKENS
                                     for ids in segs["input_ids"])
    assert all(t[0] == "<|im_start|>" for t in segs["tokens"])
    assert run.payload["bos"] == "<|im_start|>"
    assert any("starts with the model's BOS token <|im_start|>" in n for n in run.payload["notes"])
    s = make_segments(pm, ["The cat sat on the mat.", "It was warm.", "Then it left the room."], 8, 2)
    text = pm.tokenizer("The cat sat on the mat. It was warm.", add_special_tokens=False)["input_ids"]
    assert s.input_ids[0] == [bos] + text[:7] and all(len(x) <= 8 and x[0] == bos for x in s.input_ids)
