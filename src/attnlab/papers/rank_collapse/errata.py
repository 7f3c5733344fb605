"""Where the rank-collapse notes (Xie, 2021) or the sources they copy are wrong or loose.

One :class:`attnlab.errata.TextError` per finding, registered for ``attnlab errata
rank-collapse`` and shown as a table in the ablations report. The notes copy Dong et al.
(2021) in §2.2 and §2.4 and Linformer (Wang et al., 2020) in §2.3; ``whose`` says which.
Numbers in ``witness`` are those of the named claim at seed 0.

No record for the composite "norm" breaking the triangle inequality: the notes do not claim
it (Definition 2.1 uses Dong et al.'s name, §2.4 problem 2 asks the question), so it is
attnlab's own statement (rank-collapse.composite-norm-triangle), not an error of the text.
"""

from __future__ import annotations

from attnlab.errata import TextError
from attnlab.registry import register_errata

DONG = "Dong et al. (2021)"

ERRATA: tuple[TextError, ...] = (
    TextError(
        id="rank-collapse.query-key-orientation",
        where="§2.1, attention",
        says="Q = W^Q X, K = W^K X",
        correct="Q = X W^Q, K = X W^K: X is n x d with tokens as rows (SA_h(X) = P_h (X W_V + e b'))",
        whose="the text",
        kind="notation",
        witness="W^Q X does not conform with X in R^{n x d}; softmax(Q K') needs Q and K with n rows",
        survives="yes",
        check="rank-collapse.path-decomposition",
    ),
    TextError(
        id="rank-collapse.scale-symbol",
        where="§2.1, attention",
        says="softmax(Q K' / sqrt(d))",
        correct="sqrt(d_qk), the query/key width of a head, as §2.2 and §2.3 write it",
        whose="the text",
        kind="notation",
        witness="§2.2's bound and §2.3's proof use sqrt(d_qk) for the same scale",
        survives="yes",
    ),
    TextError(
        id="rank-collapse.two-layer-order",
        where="§2.1, SA o SA",
        says="SA o SA(X) = sum_{h1,h2} P_{h1} P_{h2} X W_{h1} W_{h2} + e b'",
        correct="sum_{h1,h2} P_{2,h2} P_{1,h1} X W_{1,h1} W_{2,h2} + 1 b^T: the later layer's P acts leftmost, "
                "its W rightmost; P_{2,h2} is evaluated at SA_1(X)",
        whose="the text (Dong et al.'s Theorem 2.1 orders them right)",
        kind="typo",
        witness="whichever layer h1 indexes, one of the two products is reversed: on a random 2-layer, 2-head SAN "
                "the literal term is off by 0.14 (P's reversed) and 1.38 (W's reversed) relative",
        survives="yes",
        conclusion="Theorem 2.1 as stated with P_path and W_path holds to 4.9e-16 relative",
        check="rank-collapse.path-decomposition",
    ),
    TextError(
        id="rank-collapse.residual-argmin",
        where="§2.2, Definition 2.1",
        says="res(X) = X - 1 x' where x = argmin_x ||X - 1 x'||_2",
        correct="the row mean attains the minimum ((C + 1y')'(C + 1y') = C'C + n y y' with C = X - 1 mean'), so "
                "res is Dong et al.'s code's X - 1 mean'; but for d >= 2 the argmin is in general a set, and "
                "||res X||_{1,inf} depends on the minimiser taken: attnlab takes the row mean (residual kind 'two')",
        whose="the text",
        kind="omission",
        witness="X = [[1, 0], [-1, 0]]: every x = (0, s), |s| <= 1, attains ||X - 1x'||_2 = sqrt 2, and "
                "||X - 1x'||_{1,inf} runs from 1.414 to 2; random 3x2-6x4 matrices: a factor 1.14-1.37",
        survives="yes",
        conclusion="the minimum is defined and the row mean is the natural choice; the bound's ||res X||_{1,inf} "
                   "needs the choice to be stated",
        check="rank-collapse.two-norm-residual",
    ),
    TextError(
        id="rank-collapse.theorem22-title",
        where="§2.2, Theorem 2.2",
        says="'bound of a single head single layer'",
        correct="the statement is the L-layer bound; one layer is ||res SA(X)|| <= (4 beta/sqrt(d_qk)) ||res X||^3",
        whose="the text",
        kind="typo",
        witness="the exponents (3^L - 1)/2 and 3^L are those of L layers",
        survives="yes",
        check="rank-collapse.theorem22-bound",
    ),
    TextError(
        id="rank-collapse.bound-to-zero",
        where="§2.2, after Theorem 2.2",
        says="'we can use path decomposition theorem to prove that the right side of this inequality -> 0'",
        correct="the right side is ||res X|| kappa^{(3^L - 1)/2} with kappa = 4 beta ||res X||^2 / sqrt(d_qk): "
                "it goes to 0 only if kappa < 1",
        whose="the text",
        kind="missing hypothesis",
        witness="all-MiniLM-L6-v2: ||res X_0||_{1,inf} = 29-48 on 8 tokens (LayerNorm'ed embeddings) and layer-1 "
                "heads' beta = 80-335, against beta < 0.0016 needed; random SANs at logits of order 1: "
                "sqrt(c) ||res X_0|| = 66-99",
        survives="partly",
        conclusion="the bound holds (measured/bound <= 0.078, adversarial search included) and the residual does "
                   "collapse, but the bound proves it only for small inputs, not for trained models",
        check="rank-collapse.input-residual",
    ),
    TextError(
        id="rank-collapse.softmax-formula",
        where="§2.3, Theorem 2.3 proof",
        says="P = exp(sqrt(d_qk) A) . D_A^{-1}",
        correct="P = D_A^{-1} exp(A / sqrt(d_qk)): the scale divides, and the row normaliser multiplies from the left",
        whose="the text",
        kind="typo",
        witness="softmax normalises rows: D_A^{-1} scales row i by 1 / sum_j exp(A_ij / sqrt(d_qk))",
        survives="yes",
    ),
    TextError(
        id="rank-collapse.relative-error",
        where="§2.3, Theorem 2.3",
        says="P{||P~ w' - P w'|| <= eps ||P w'||} > 1 - o(1) with rank P~ = Theta(log n), for the values w",
        correct="the JL lemma gives the additive form ||P~w - Pw|| <= eps ||P||_F ||w|| (each row's inner product "
                "to eps ||p_i|| ||w||); the relative form follows only where ||P||_F ||w|| is of the order of "
                "||Pw||, e.g. values with a non-zero mean",
        whose="Wang et al. (2020, Linformer), Theorem 1, copied by the notes",
        kind="missing hypothesis",
        witness="k' = ceil(8 ln n), eps = 0.75, zero-mean values w ~ N(0, 1): P(relative error <= eps) = 0.00 at "
                "n = 256, 1024, 4096, median relative error 1.46, 4.45, 5.64 (grows like sqrt(n/k')); the additive "
                "error is 0.10-0.14 for both mean-0 and mean-1 values",
        survives="partly",
        conclusion="the additive JL form holds at rank Theta(log n) (rank-collapse.low-rank-additive); the relative "
                   "one only for values whose mean is not small",
        check="rank-collapse.low-rank-log-n",
    ),
    TextError(
        id="rank-collapse.rank-log-squared",
        where="§2.3, after Theorem 2.3",
        says="rank(P~) = Theta(log n) (Theorem 2.3), then 'rank P~ = Theta(log n . log n)' two lines later",
        correct="k' = Theta(log n / eps^2) (Linformer's proof); (log n)^2 matches it only with eps^2 ~ 1/log n",
        whose="the text",
        kind="omission",
        witness="the step from Theta(log n) to Theta(log n . log n) is not given",
        survives="yes",
    ),
    TextError(
        id="rank-collapse.low-rank-any-layer",
        where="§2.3, after Theorem 2.3",
        says="'we can find a low rank matrix, i.e. rank P~ = Theta(log n . log n), to replace P in any "
             "self-attention layer'",
        correct="P R^T R approximates P w for the vectors it is applied to, not P as a matrix; real attention "
                "matrices are low rank for most heads at a 90% energy tolerance, but positional heads are near "
                "full rank",
        whose="the text",
        kind="overstatement",
        witness="all-MiniLM-L6-v2, 72 heads: largest 90%-energy rank 28, 57, 114, 173 at n = 32, 64, 128, 256 "
                "(slope 0.89 against 0.45 for (ln n)^2); ||P R^T R - P||_F / ||P||_F = 1.55 at k = 89, n = 256",
        survives="partly",
        conclusion="the median head's 90%-energy rank is 2-4 (below ln n); 'any layer' fails for positional heads",
        check="rank-collapse.minilm-attention-spectrum",
    ),
    TextError(
        id="rank-collapse.low-rank-reason",
        where="§2.3, conclusion",
        says="'the low rank property of the softmax function is the reason of the losing of rank'",
        correct="Theorem 2.3 is a statement about P w for one vector; rank collapse comes from composing "
                "row-stochastic maps across layers (Theorem 2.2's residual, the path decomposition)",
        whose="the text",
        kind="overstatement",
        witness="single pretrained attention matrices keep most of their numerical rank (median 44 of 256 "
                "singular values above 1e-2 sigma_1), while stacking them without skips takes the relative "
                "residual to float64 rounding within 2-4 layers (ablations, SAN)",
        survives="no",
        check="rank-collapse.ablations",
    ),
    TextError(
        id="rank-collapse.eq9-sign",
        where="§2.4, eq. (9) (Dong et al., App. A.1)",
        says="PX <= 1x' + (I + 2D) 1 softmax(r)' R entry-wise, and the lower twin with (I - D)",
        correct="|P R - P~ R| = |(P - P~) R| <= 2 D P~ |R| (|R| entry-wise): an entry-wise inequality survives "
                "multiplication by R only if R >= 0, and R = X - 1x' has entries of both signs",
        whose=f"{DONG}, Appendix A.1, copied by the notes and flagged by them (§2.4, problem 1)",
        kind="wrong statement",
        witness="violated in 197 of 197 random trials with max D_ii <= 1.2564 (largest violation 0.833); the "
                "|R| form holds in all of them",
        survives="yes",
        conclusion="||.||_1 and ||.||_inf of |R| equal those of R, so the norm bound of Theorem 2.2 follows from "
                   "the |R| form",
        check="rank-collapse.eq9-sign-error",
    ),
    TextError(
        id="rank-collapse.lemma-a3-threshold",
        where="§2.4, after eq. (10) (Dong et al.'s Lemma A.3)",
        says="(I - D) P~ <= P <= (I + 2D) P~ entry-wise, invoked with no condition on D",
        correct="the lower half holds for every D (P_ij / P~_ij >= e^{-D_ii} >= 1 - D_ii); the upper half uses "
                "e^t <= 1 + 2t, true for t <= 1.2564: a sufficient condition, needed by the upper half only",
        whose=f"{DONG}, Lemma A.3, copied by the notes",
        kind="omission",
        witness="400 random trials: the lower half never fails; the upper half fails in 33 of the 203 with "
                "max D_ii > 1.2564 (largest violation 0.846, the smallest failing max D_ii 3.23) and in none of "
                "the 197 below",
        survives="yes",
        conclusion="in the regime of small residuals the bound needs (D small) the lemma holds",
        check="rank-collapse.lemma-a3-sandwich",
    ),
)

register_errata(ERRATA)

__all__ = ["ERRATA"]
