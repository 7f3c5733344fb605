"""Where the rank-collapse notes (Xie, 2021) are wrong or loose, what is right, and why.

One entry per finding: (where in the notes, what the text says, what attnlab implements,
the reason). The entries are the ones documented beside the code that implements the
correct version (the modules named in each reason); the report prints them as one table.
"""

from __future__ import annotations

NOTES_ERRORS: tuple[tuple[str, str, str, str], ...] = (
    ("§2.1, attention",
     "Q = W^Q X, K = W^K X",
     "Q = X W^Q, K = X W^K",
     "X is n x d with tokens as rows, so W^Q X does not conform; the softmax(Q K^T) that follows "
     "needs Q and K with n rows (analysis.path_decomposition)."),
    ("§2.1, attention",
     "softmax(Q K' / sqrt(d))",
     "d is the query/key width d_qk (per head), not the model width",
     "the scale in the bound of §2.2 is written with d_qk; the same symbol must be meant here."),
    ("§2.1, SA o SA",
     "sum_{h1,h2} P_{h1} P_{h2} X W_{h1} W_{h2} + e b'",
     "sum_{h1,h2} P_{2,h2} P_{1,h1} X W_{1,h1} W_{2,h2} + 1 b^T",
     "the layer indices are dropped and the order of the P's is reversed: the later layer's P acts "
     "last (leftmost), its W last (rightmost); P_{2,h2} is evaluated at SA_1(X), not at X "
     "(analysis.path_decomposition; claim rank-collapse.path-decomposition)."),
    ("§2.1, Theorem 2.1",
     "'b isn't the same all the time'",
     "b^T = sum_l b_l^T prod_{m>l} (sum_h W_{m,h}) (with skips: I + sum_h W_{m,h})",
     "the accumulated bias is a definite expression, and it needs P 1 = 1: it fails for "
     "unnormalized attention (analysis.path_decomposition.accumulated_bias)."),
    ("§2.1, Theorem 2.1 remark",
     "with skip connections there are (H+1)^L paths",
     "right as a count; the paths are not equally long: C(L,k) H^k of them have length k",
     "the count hides that almost all paths are long (k near L H/(H+1)), which is Dong et al.'s "
     "argument that the short paths carry the output (experiment rank-collapse.path-lengths)."),
    ("§2.2, Definition 2.1",
     "||X||_{1,inf} = sqrt(||X||_1 ||X||_inf) is a 'composite norm'",
     "a quasi-norm: ||A + B|| <= (nd)^{1/4} (||A|| + ||B||)",
     "the triangle inequality fails already for 1 x 2 matrices: A = [1, 0], B = [1, 1]/sqrt(2) have "
     "norm 1 and ||A + B|| = 2.03 (analysis.residuals; claim on the composite norm)."),
    ("§2.2, Definition 2.1",
     "res(X) = X - 1 x^T with x = argmin ||X - 1 x^T||_2",
     "three residuals, each stated: row mean (Dong et al.'s code), exact composite argmin (their "
     "theorem), rank-one SVD",
     "the theorem measures res in ||.||_{1,inf}, so the argmin must be of that norm; the 2-norm "
     "argmin is a different x. Dong et al.'s plotting code uses the row mean (the Frobenius "
     "argmin) (analysis.residuals)."),
    ("§2.2, Definition 2.1 (implicit)",
     "the argmin defining res(X) is treated as a convex problem",
     "exact solution over the vertices of a Pareto frontier (bi-objective LP)",
     "sqrt(||R||_1 ||R||_inf) is not convex in x: at x = (1, 0), (1, 1)/sqrt(2) it is 1, at their "
     "midpoint 1.015 (analysis.residuals.composite_shift)."),
    ("§2.2, Theorem 2.2",
     "condition ||W_QK||_1 ||W_V||_{1,inf} <= beta, bound (4 beta / sqrt(d_qk))^{(3^L-1)/2} ||res X||^{3^L}",
     "the same, with the caveats that it shrinks only if 4 beta ||res X||^2 / sqrt(d_qk) < 1 and that "
     "Dong et al.'s statement carries a further constant gamma the notes drop",
     "for MiniLM's embeddings ||res X||_{1,inf} is in the tens and beta far above the threshold, so "
     "the bound is vacuous for a trained model (experiment rank-collapse.bound; claim on the input residual)."),
    ("§2.3, Theorem 2.3 proof",
     "P = exp(sqrt(d_qk) A) D_A^{-1}",
     "P = D_A^{-1} exp(A / sqrt(d_qk))",
     "the scale divides, and the row normaliser multiplies from the left (it scales rows)."),
    ("§2.3, Theorem 2.3",
     "rank(P~) = Theta(log n), later 'rank Theta(log n . log n)'",
     "k' = Theta(log n / eps^2) (Linformer's Theorem 1); the measured spectra are in rank-collapse.low-rank",
     "the two statements in the notes disagree; the JL argument gives log n for a fixed eps."),
    ("§2.3, conclusion",
     "'the low rank property of the softmax function is the reason of the losing of rank'",
     "a JL projection shows P acts like a low-rank matrix on a few vectors; rank collapse is about "
     "products of P's across layers",
     "a single pretrained attention matrix is full rank numerically (low-rank experiment); the collapse "
     "comes from composing row-stochastic maps (ablations: SAN)."),
    ("§2.4, eq. (9)",
     "PX <= 1 x^T + (I + 2D) 1 softmax(r)^T R (entry-wise)",
     "|(P - P~) R| <= 2 D P~ |R|",
     "an entry-wise inequality survives multiplication by R only if R >= 0, and R = X - 1 x^T has "
     "entries of both signs (claim on the entry-wise sandwich)."),
    ("§2.4, Lemma A.3 as used",
     "(I - D) P~ <= P <= (I + 2D) P~ with no condition",
     "holds when every D_ii <= 1.2564",
     "e^t <= 1 + 2t holds only up to t = 1.2564."),
)

COLUMNS = ("where", "the notes say", "attnlab implements", "why")

__all__ = ["COLUMNS", "NOTES_ERRORS"]
