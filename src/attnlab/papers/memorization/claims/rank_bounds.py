"""Claims of memorization-capacity-of-mha on upper bounds of rank Z and on the assumptions:
Proposition 2 (§4.2, App. E), Proposition 5 (App. I) and Proposition 4 (§4.4, App. G).

Each upper bound is attacked by :func:`attnlab.papers.memorization.rank_search.adversarial_rank_search`
(random weights, then gradient ascent on a rank surrogate) and compared with the largest rank
found; a control without the bound's hypothesis shows that the hypothesis matters (so the
search can find ranks above the bound: each row could have differed). Each is anchored to the
proposition it attacks.
"""

from __future__ import annotations

import numpy as np

from attnlab.analysis.kruskal import kruskal_rank
from attnlab.papers.memorization.assumptions import assumption2_holds, assumption3_holds, assumption3_vectors
from attnlab.papers.memorization.rank_search import RANK_RTOL, SCALES, adversarial_rank_search, skip_layer_outputs
from attnlab.checks import Check, at_least, at_most
from attnlab.registry import claim


def _bound_measurement(found: dict, control: dict, bound: int, sizes: str, control_name: str,
                       values: dict) -> Check:
    """max rank found - bound (<= 0), with the search's numbers and the control's."""
    return at_most(
        found["max_rank"] - bound, 0,
        f"max rank Z found - bound; {sizes}; bound {bound}, max rank {found['max_rank']} over "
        f"{found['attempts']} weight sets (random at logit scales {SCALES} + Adam ascent on log det), "
        f"max sigma_(bound+1)/sigma_1 {found['max_ratio_above_bound']:.1e}; rank counts sigma > "
        f"{RANK_RTOL:g} sigma_1; control ({control_name}): max rank {control['max_rank']}; a search finds "
        f"counterexamples, it cannot prove the bound",
        values={**values, "bound": bound, "max_rank": found["max_rank"], "attempts": found["attempts"],
                "max_ratio_above_bound": found["max_ratio_above_bound"], "logit_scales": list(SCALES),
                "rank_rtol": RANK_RTOL, "control_max_rank": control["max_rank"]})


@claim(
    "memorization.proposition2-shared-upper",
    where="§4.2, Proposition 2 (proof: App. E)",
    statement="with a shared context, rank Z <= H(n-1)+1 for ANY W_K, W_Q (adversarial search)",
    paper_value="rank Z <= H(n-1)+1 (tight with Proposition 1)",
    anchor="memorization.proposition-2",
    falsifier="a weight set with rank Z > H(n-1)+1 on a shared context (the search finds such ranks on "
              "per-example contexts, its control)",
)
def _proposition2(seed: int) -> Check:
    H, n, d, d_h, T = 3, 3, 7, 7, 12  # bound 7 < H n = 9 < H d = 21
    rng = np.random.default_rng(seed)
    E, e = rng.uniform(size=(n, d)), rng.uniform(size=(T, d))
    bound = H * (n - 1) + 1
    found = adversarial_rank_search(E, e, H, d_h, bound, seed)
    control = adversarial_rank_search(rng.uniform(size=(T, n, d)), e, H, d_h, bound, seed)
    return _bound_measurement(found, control, bound, f"H={H} n={n} d={d} d_h={d_h} T={T}, U(0,1) tokens",
                              "per-example contexts, the bound need not hold",
                              dict(H=H, n=n, d=d, d_h=d_h, T=T))


@claim(
    "memorization.proposition5-constant-rowsum",
    where="App. I, Proposition 5",
    statement="if every context token has 1^T e_i = C, rank Z <= H(d-1)+1 for ANY W_K, W_Q (adversarial search)",
    paper_value="rank Z <= H(d-1)+1",
    anchor="memorization.proposition-5",
    falsifier="a weight set with rank Z > H(d-1)+1 on contexts whose tokens sum to C (the search finds such "
              "ranks on the same tokens before the shift, its control)",
)
def _proposition5(seed: int) -> Check:
    H, n, d, T, C = 2, 3, 4, 12, 1.0  # per-example contexts; bound 7 < H d = 8
    rng = np.random.default_rng(seed)
    raw = rng.uniform(size=(T, n, d))
    E = raw - (raw.sum(axis=-1, keepdims=True) - C) / d  # each token's entries sum to C
    e = rng.uniform(size=(T, d))
    bound = H * (d - 1) + 1
    found = adversarial_rank_search(E, e, H, d, bound, seed)
    control = adversarial_rank_search(raw, e, H, d, bound, seed)
    rowsum_error = float(np.abs(E.sum(-1) - C).max())
    return _bound_measurement(found, control, bound, f"H={H} n={n} d=d_h={d} T={T}, C={C}, max |1^T e_i - C| "
                              f"{rowsum_error:.1e}", "the same tokens before the row-sum shift",
                              dict(H=H, n=n, d=d, d_h=d, T=T, C=C, max_rowsum_error=rowsum_error))


@claim(
    "memorization.proposition4-skip",
    where="§4.4, Proposition 4 (proof: App. G)",
    statement="one layer with W_K = W_Q = 0, W_V = W_O = I and a skip connection turns Assumptions 2+3 "
              "into Assumptions 2+1",
    paper_value="Assumption 1 holds after the layer (Table 1: fails at the embedding, holds after attention)",
    anchor="memorization.proposition-4",
    falsifier="after the layer the queries' Kruskal rank is below n, or a context's rank is below n",
)
def _proposition4(seed: int) -> Check:
    T, n, d = 9, 3, 7
    rng = np.random.default_rng(seed)
    cls = rng.standard_normal(d)  # the shared [CLS] query, also the first context token (self-attention)
    E = rng.uniform(size=(T, n, d))
    E[:, 0] = cls
    e = np.tile(cls, (T, 1))  # (T, d): Kruskal rank 1, Assumption 1 fails
    E_out, e_out = skip_layer_outputs(E, e)
    before, after = kruskal_rank(e), kruskal_rank(e_out)
    ctx_rank = int(min(np.linalg.matrix_rank(E_out)))
    gap = float(np.abs(e_out - assumption3_vectors(E, e)).max())
    margin = min(after - n, ctx_rank - n)
    a2_before, a3 = assumption2_holds(E), assumption3_holds(E, e)
    return at_least(margin, 0, (
        f"min(Kruskal rank of e' - n, min_t rank E'^(t) - n); T={T} n={n} d={d}, every query the same "
        f"[CLS] vector; Kruskal rank of queries {before} before, {after} after (need {n}); Assumption 2 "
        f"before {a2_before}, after: min rank E' {ctx_rank}; Assumption 3 {a3}; "
        f"max |e' - e~| {gap:.1e}; Kruskal rank by enumeration, independence at sigma_min > 1e-10 sigma_max"),
        values={"T": T, "n": n, "d": d, "kruskal_rank_before": before, "kruskal_rank_after": after,
                "assumption2_before": a2_before, "min_context_rank_after": ctx_rank, "assumption3": a3,
                "max_gap_to_assumption3_vectors": gap},
        cannot_decide="" if a2_before and a3 else "the drawn data do not satisfy Proposition 4's hypotheses "
                                                   "(Assumptions 2 and 3)")
