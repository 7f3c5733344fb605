"""``attnlab analyze``: segment 0's maps as the report's interactive viewer block
(:mod:`attnlab.reports.viewer`), with the scores of heads.json beside the map (:data:`VIEWER_SCORES`:
the picked head's value, to four significant digits, and its rank among all heads).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch

from attnlab.commands.analyze.records import HeadRow, HeadsPayload
from attnlab.commands.analyze.text import Segments


@dataclass(frozen=True)
class ViewerScore:
    """A score the report's viewer shows beside the map: its heads.json name (a dotted path into a head's
    entry), what the viewer's table says it is, and a head's value (NaN where the head has none)."""

    name: str
    description: str
    value: Callable[[HeadRow], float]


def _exact_of(kind: str) -> Callable[[HeadRow], float]:
    """A head's exact ``kind`` ablation change (NaN for a head that was not re-run)."""
    return lambda x: x.exact_change(kind)


VIEWER_SCORES: tuple[ViewerScore, ...] = (
    ViewerScore("entropy", "Clark et al.: smoothed attention entropy, mean over queries (nats)",
                lambda x: x.scores.entropy),
    ViewerScore("previous", "mean attention to the previous token, a(i, i-1)", lambda x: x.scores.previous),
    ViewerScore("next", "mean attention to the next token, a(i, i+1)", lambda x: x.scores.next),
    ViewerScore("to_cls", "mean attention to [CLS] (the tokenizer's cls token, else bos)", lambda x: x.scores.to_cls),
    ViewerScore("to_sep", "mean attention to [SEP] (the tokenizer's sep token, else eos)", lambda x: x.scores.to_sep),
    ViewerScore("to_punctuation", "mean attention to punctuation (. ,)", lambda x: x.scores.to_punctuation),
    ViewerScore("voita_argmax_previous", "Voita et al.: share of queries whose largest weight is on key i-1 "
                                         "(positional -1)", lambda x: x.voita_argmax_previous),
    ViewerScore("voita_argmax_next", "Voita et al.: share of queries whose largest weight is on key i+1 "
                                     "(positional +1)", lambda x: x.voita_argmax_next),
    ViewerScore("tl_repeated_previous_token", "TransformerLens previous-token score on repeated random tokens",
                lambda x: x.scores.tl_repeated_previous_token),
    ViewerScore("tl_repeated_duplicate_token", "TransformerLens duplicate-token score on repeated random tokens",
                lambda x: x.scores.tl_repeated_duplicate_token),
    ViewerScore("tl_repeated_induction", "TransformerLens detect_head induction score on repeated random tokens "
                                         "(a perfect head scores s/n, about 0.5)",
                lambda x: x.scores.tl_repeated_induction),
    ViewerScore("repeated_induction_stripe", "induction stripe score on repeated random tokens: mean attention on "
                                             "i -> i - s + 1 over the second copy (a perfect head scores 1)",
                lambda x: x.scores.repeated_induction_stripe),
    ViewerScore("sink", "attention on the first token (an attention sink)", lambda x: x.sink),
    ViewerScore("sink_norm", "value-weighted share of the first token, ||a_i1 v_1 W_O|| / sum_j ||a_ij v_j W_O|| "
                             "(Kobayashi et al. 2020)", lambda x: x.sink_norm),
    ViewerScore("copying", "copying score of the OV circuit, sum lambda / sum |lambda| (Elhage et al. 2021): "
                           "+1 copies, -1 suppresses", lambda x: x.copying),
    ViewerScore("dla", "direct logit attribution to the next token (mean logit units; final norm scale frozen at "
                       "the clean run, gamma folded into W_U; {unembedding} W_U)",
                lambda x: math.nan if x.dla is None else x.dla),
    *(ViewerScore(f"ablation.{k}.delta_loss", f"exact: change in next-token loss when the head is {k}-ablated "
                                              f"({what}), re-run with its hook_z replaced (nats per token); only "
                                              "the re-run heads have a value and a rank", _exact_of(k))
      for k, what in (("zero", "z_h := 0"), ("mean", "z_h := its mean over segments and positions"),
                      ("resample", "z_h := the next segment's"))),
)
"""The scores of heads.json the viewer shows beside the map, in this order."""


def viewer_block(A: torch.Tensor, segs: Segments, payload: HeadsPayload) -> dict:
    """Segment 0's maps for the report's attention viewer (its first 64 tokens, at most ~2 MB), with every
    head's scores of :data:`VIEWER_SCORES` that the run computed (heads.json's numbers, means over segments;
    a score no head has, NaN everywhere, is left out)."""
    from attnlab.reports.viewer import viewer_data

    L, H = payload.layers, payload.heads_per_layer
    scores, descriptions = {}, {}
    for score in VIEWER_SCORES:
        v = torch.tensor([float(score.value(x)) for x in payload.heads], dtype=torch.float64).reshape(L, H)
        if not bool(v.isnan().all()):  # not computed (no output head: no DLA, no ablations) or undefined for
            scores[score.name] = v    # every head (a causal model's key i+1): left out
            descriptions[score.name] = score.description.replace("{unembedding}", str(payload.dla_unembedding))
    return viewer_data(A, segs.labels[0], title="Attention maps of segment 0",
                       caption="Every head's weights on segment 0, as the model computed them. The scores beside "
                               f"the map are the head's numbers of heads.json, means over all {payload.segments} "
                               "segments (not segment 0's alone), named by their heads.json keys. Every "
                               "ablation value is exact (a re-run with the head's z replaced); heads that were not "
                               "re-run have none.",
                       scores=scores, score_descriptions=descriptions)
