"""Claims of memorization-capacity-of-mha §4: Theorem 1 and Proposition 1, by construction.

Both are existence statements; attnlab's realisation of the proof's weights must do what the
proof says, so both checks have the role "construction" (a miss is attnlab's bug), anchored to
the statement they realise (the data are drawn where its hypotheses hold: n < d, U(0, 1) tokens,
so Assumptions 1 and 2 hold almost surely)."""

from __future__ import annotations

from attnlab.papers.memorization.construction import memorize_drawn_dataset
from attnlab.checks import Check, at_least, at_most
from attnlab.registry import claim

D, N = 64, 32  # the paper's §5.2 sizes


@claim(
    "memorization.theorem1-construction",
    where="§4, Theorem 1 (proof: §4.1, App. B)",
    statement="the proof's weights memorize T = H(min(n, d_h) - 1) + 1 real labels exactly",
    paper_value="T = 32 (H=1), 125 (H=4) at d=64, n=32, d_h=64",
    anchor="memorization.theorem-1",
    falsifier="the proof's weights leave max |y_hat - y| > 1e-8 on T = H(r-1)+1 examples (H = 1, 4)",
)
def _theorem1(seed: int) -> Check:
    worst, parts, cases = 0.0, [], []
    for H in (1, 4):
        T = H * (N - 1) + 1
        _, _, r = memorize_drawn_dataset(T, N, D, 1, H=H, d_h=D, shared=True, seed=seed)
        worst = max(worst, r["max_abs_error"])
        parts.append(f"H={H} T={T}: err {r['max_abs_error']:.1e}, rank Z {r['rank_Z']}, "
                     f"sigma_min {r['sigma_min_Z']:.1e}, c {r['c']:.2g}")
        cases.append({"H": H, "T": T, "max_abs_error": r["max_abs_error"], "rank_Z": r["rank_Z"],
                      "sigma_min_Z": r["sigma_min_Z"], "c": r["c"]})
    return at_most(worst, 1e-8, "max |y_hat - y|, float64, shared context, d=64, n=32, d_h=64, y ~ N(0,1); "
                   + "; ".join(parts), values={"d": D, "n": N, "d_h": D, "cases": cases}, role="construction")


@claim(
    "memorization.proposition1-rank",
    where="§4.1, Proposition 1",
    statement="with the constructed W_K, W_Q, rank Z >= min(H(r-1)+1, T), r = min(n, d_h)",
    paper_value="rank Z >= H(r-1)+1",
    anchor="memorization.proposition-1",
    falsifier="rank Z of the constructed W_K, W_Q below min(H(r-1)+1, T) in a case (r = 32, 16; shared and "
              "per-example contexts)",
)
def _proposition1(seed: int) -> Check:
    plan = [  # (T, H, d_h, shared): r = 32, 16, 32
        (4 * 31 + 1, 4, D, False),
        (3 * 15 + 1, 3, 16, True),
        (40, 2, D, True),
    ]
    margin, parts, cases = None, [], []
    for T, H, d_h, shared in plan:
        _, _, r = memorize_drawn_dataset(T, N, D, 1, H=H, d_h=d_h, shared=shared, seed=seed)
        need = min(H * (min(N, d_h) - 1) + 1, T)
        margin = r["rank_Z"] - need if margin is None else min(margin, r["rank_Z"] - need)
        parts.append(f"H={H} d_h={d_h} T={T} {'shared' if shared else 'per-example'}: rank {r['rank_Z']} "
                     f"(need {need}), sigma_min {r['sigma_min_Z']:.1e}")
        cases.append({"H": H, "d_h": d_h, "T": T, "shared": shared, "rank_Z": r["rank_Z"], "need": need,
                      "sigma_min_Z": r["sigma_min_Z"]})
    return at_least(margin, 0, "min over cases of rank Z - min(H(r-1)+1, T); rank counts singular values "
                    "> sigma_max max(T, Hd) eps; d=64, n=32; " + "; ".join(parts),
                    values={"d": D, "n": N, "cases": cases}, role="construction")
