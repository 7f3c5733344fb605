"""Claims of §3.1 measured on the thesis's own attention maps (8 heads of its one-layer translation
model, :mod:`attnlab.papers.transformer_math.thesis_maps`): the like-for-like comparison with the
text's figures, and (attnlab's own statement: the text prints no distances) with the distance table of
the thesis's notebook.

Without the maps file each claim is inconclusive and says where it looked.
"""

from __future__ import annotations

from typing import Callable

from attnlab.checks import Check
from attnlab.papers.transformer_math.thesis_maps import (
    THESIS_ANCHORS,
    THESIS_CLAIMS,
    diagonal_check,
    distance_check,
    full_rank_check,
    thesis_fits,
)
from attnlab.registry import claim


def _register(name: str, build: Callable[..., Check]) -> None:
    where, statement, paper_value = THESIS_CLAIMS[name]

    @claim(f"transformer-math.{name}", where=where, statement=statement, paper_value=paper_value,
           **THESIS_ANCHORS[name])
    def check(seed: int) -> Check:
        return build(*thesis_fits())

    check.__doc__ = build.__doc__


_register("head-thesis-distances", distance_check)
_register("head-thesis-most-diagonal", diagonal_check)
_register("head-thesis-full-rank", full_rank_check)
