"""What trained models learned, on a record holding the hand-built solutions (conftest): system 2 with solution 2's
weights stores q_true itself in its CC block, and the free flavour with solution 3's is solution 3 in every
measurement (values derived from the construction, float64)."""

import math

from attnlab.papers.logic.learned_mechanism import LEARNED, fit_cc_blocks, free_mechanism
from tolerances import FLOAT64

N, M = 3, 7


def test_fit_cc_blocks_reads_solution_2s_q_true(hand_trained):
    fits = fit_cc_blocks(hand_trained, N, M)
    assert [(f.name, f.seed_index) for f in fits] == [("system 2", 0), ("free", 0)]  # system 2, lean-2 (none), free
    # solution 2's A = k^t q has q_true as its CC block: centred correlation 1, scale 1
    assert abs(fits[0].corr - 1.0) <= FLOAT64 and abs(fits[0].scale - 1.0) <= FLOAT64
    # solution 3 routes by position: its CC block is zero, no correlation to speak of
    assert math.isnan(fits[1].corr) and fits[1].scale == 0.0


def test_free_mechanism_of_solution_3(hand_trained):
    fm = free_mechanism(hand_trained, N, M, "none")
    assert fm.seeds == [0] and fm.learned == [0] and fm.full[0] <= FLOAT64 <= LEARNED
    # solution 3's logits are positional and its attention reads the PP part: neither ablation costs anything,
    # removing the attention or the ReLU does
    assert fm.ablation("position-only logits")[0] <= FLOAT64
    assert fm.ablation("solution-1/3 path only")[0] <= FLOAT64
    assert fm.ablation("attention zero")[0] > 1.0 and fm.ablation("linear feed-forward")[0] > 10.0
    # its structure fractions are the hand-built solution 3's, to the last digit
    assert fm.fractions.keys() == fm.hand_fractions["3"].keys()
    assert all(abs(fm.fractions[k][0] - fm.hand_fractions["3"][k]) <= FLOAT64 for k in fm.fractions)
    assert fm.fractions["A: PP block (sol. 1, 3)"] == [1.0] and fm.fractions["v: PP block (sol. 2)"] == [0.0]
    # v's CC block is A_2^t exactly (centred |corr| 1); its N units gated by the current category carry Var(Y)
    assert abs(fm.corr_A2t[0] - 1.0) <= FLOAT64
    assert fm.units[0].needed == {0.9: N, 0.99: N, 0.999: N}
    assert abs(fm.units[0].cost["3"] - 1.0) <= FLOAT64 and abs(fm.units[0].cost["1"]) <= FLOAT64
    assert fm.hand_units[0]["3"].cost == fm.units[0].cost
    assert fm.over_learned([7.0]) == [7.0]
