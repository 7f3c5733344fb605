"""§1's two fully connected examples (:mod:`attnlab.papers.logic.examples`), checked exactly."""

from __future__ import annotations

from attnlab.checks import Check

import numpy as np

from attnlab.checks import at_most
from attnlab.papers.logic.examples import (
    MOOD_RULES,
    all_binary,
    mood,
    or_of_ands,
    or_of_ands_truth,
    or_probability,
)
from attnlab.registry import claim

TOL = 1e-12
PS = (0.1, 0.3, 0.5, 0.9)


@claim("logic.or-of-ands", where="§1, eq. 1.1",
       statement="Y = h(C ReLU(B X, bias = -1)) with C = (1, 1, 1) realises "
                 "(X_1 and X_2) or (X_3 and X_4) or (X_5 and X_6)",
       paper_value="exact", anchor="logic.or-of-ands",
       falsifier="an input among the 64 of {0, 1}^6 where h(C ReLU(B X - 1)) differs from the logic of eq. 1.1 "
                 "(attnlab's B: a construction, so that would be attnlab's bug)")
def _or_of_ands(seed: int) -> Check:
    """Measured: mismatches over all 64 inputs plus the largest |P(Y=1) - (1 - (1 - p^2)^3)| over
    p in {0.1, 0.3, 0.5, 0.9} (the Bernoulli model of §1); <= 1e-12. B is lost from the text (the
    extraction), so the row is a construction realising the text's statement with attnlab's B."""
    X = all_binary(6)
    mismatches = int((or_of_ands(X) != or_of_ands_truth(X)).sum())
    prob_gap = max(abs(or_probability(p) - (1 - (1 - p * p) ** 3)) for p in PS)
    return at_most(mismatches + prob_gap, TOL, f"{mismatches} of 64 inputs wrong; P(Y=1) gap {prob_gap:.1e}",
                   {"mismatches": mismatches, "probability_gap": prob_gap}, role="construction")


@claim("logic.happy-sad", where="§1, eq. 1.3-1.7",
       statement="C ReLU(B X - 1) maps 'receive present' and 'pass exam' to happy and 'receive punishment' to sad",
       paper_value="(1, 0), (1, 0), (0, 1)", anchor="logic.happy-sad",
       falsifier="a word pair whose (happy, sad) output differs from its rule's by more than 1e-12")
def _happy_sad(seed: int) -> Check:
    """Measured: max |(happy, sad) - expected| over the three word pairs; <= 1e-12."""
    gaps = {" ".join(k): float(np.abs(mood(k) - np.array(v)).max()) for k, v in MOOD_RULES.items()}
    return at_most(max(gaps.values()), TOL, "; ".join(f"{k}: {mood(tuple(k.split()))}" for k in gaps), gaps)
