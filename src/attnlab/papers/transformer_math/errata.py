"""Errors in the math text, as sourced records (:class:`attnlab.errata.TextError`).

Each record says where the text is wrong or loose, what attnlab implements instead, whose error it
is, the witness and whether the text's conclusion survives; ``check`` names the claim or experiment
that measures it. ``attnlab errata transformer-math`` lists them and every report of the paper
shows them as a table.
"""

from __future__ import annotations

from attnlab.errata import TextError
from attnlab.registry import register_errata

_P = "transformer-math"
TEXT = "the text"

ERRATA: tuple[TextError, ...] = (
    # ---- §1.1 -------------------------------------------------------------------------------
    TextError(
        f"{_P}.chain-rule-conditioning", "§1.1, the factorisation of p(y_1, ..., y_n')",
        "p(y_1, ..., y_n') = p(y_1) p(y_2|y_1) ... p(y_n'|y_1, ..., y_n'-1) = prod_t p(y_t|y_t)",
        "prod_t p(y_t | y_{<t}), as the line below it and §1.1's argmax write", TEXT, "typo",
        "p(y_t | y_t) = 1 for every t, so the product printed is 1 for every sequence", "yes"),
    TextError(
        f"{_P}.loss-sign", "§1.1, the loss at a one-hot target", "Loss(p*, p) = log(p_{y_t}) = -log(p(y_t|y_<t, x))",
        "Loss(p*, p) = -log(p_{y_t}): the first equality drops the minus sign of -sum_i p*_i log(p_i)", TEXT, "typo",
        "at p_{y_t} = 1/2 the first member is -0.693 and the last +0.693", "yes"),
    TextError(
        f"{_P}.search-space-length", "§1.1, decoding", "The total amount of feasible solution is |V|^n",
        "|V|^{n'}: the target y* has length n' (n is the source's length)", TEXT, "typo",
        "§1.1 writes y* = (y*_1, ..., y*_n') and the product over t = 1..n'", "yes"),
    TextError(
        f"{_P}.context-vector-range", "§1.1.1, the context vector", "c_t = a_{t,1} s_1 + ... + a_{t,m} s_m = "
        "sum_{i=1}^m a_{t,i} s_i", "c_t = sum_{i=1}^n a_{t,i} s_i over the n encoder states s_1, ..., s_n that the "
        "weights a_{t,k}, k = 1, ..., n, are defined on", TEXT, "notation",
        "the weights a_{t,k} sum to 1 over k = 1..n; m is defined nowhere in §1.1.1", "yes"),
    # ---- §1.2 -------------------------------------------------------------------------------
    TextError(
        f"{_P}.pe-complex-form", "§1.2.1, after eq. (1)", "f(t)^(i) = e^{i t / w_k}",
        "f(t)^(k) = e^{i w_k t} (the real and imaginary parts are eq. (1)'s cos and sin)", TEXT, "typo",
        "e^{i t / w_k} has frequency 1/w_k = N^{2k/d}, not eq. (1)'s w_k", "yes",
        check=f"{_P}.pe-shift-linear"),
    TextError(
        f"{_P}.pe-shift-affine", "§1.2.1, the shift by s",
        "f(t+s)^(2k) = a sin(w_k t) + b (likewise a' cos(w_k t) + b')",
        "b = sin(w_k s) cos(w_k t) depends on t through the pair's other coordinate: PE(t+s) = M_s PE(t) with M_s "
        "one 2x2 rotation per frequency, not a per-coordinate affine map", TEXT, "notation",
        "max |PE(t+s) - M_s PE(t)| = 1.7e-13 over 512 positions with the rotation; b varies with t", "yes",
        "a shift is a fixed linear map, as the text concludes", f"{_P}.pe-shift-linear"),
    TextError(
        f"{_P}.pe-vector-indices", "§1.2.1, the vector of one position",
        "the output for a fixed t is (sin(w_1 t), ..., sin(w_d t))",
        "eq. (1)'s vector (sin(w_0 t), cos(w_0 t), ..., sin(w_{d/2-1} t), cos(w_{d/2-1} t)): sines and cosines in "
        "pairs, frequencies w_0 .. w_{d/2-1}", TEXT, "notation",
        "eq. (1) gives f(t)^(1) = cos(w_0 t) (i = 2k + 1, k = 0) where the display has sin(w_1 t); w_d = N^{-2} is "
        "outside k <= d/2 - 1, below the smallest frequency N^{-(d-2)/d}", "yes"),
    TextError(
        f"{_P}.score-transpose", "§1.2.2, the block's attention weights",
        "Q^(h)(x_i) = W_{h,q}^T(x_i), and alpha_ij = softmax_j(Q^(h)(x_i) . (K^(h)(x_j))^T / sqrt(k))",
        "with Q^(h)(x_i) = W_{h,q}^T x_i a column of R^k the score is Q^(h)(x_i)^T K^(h)(x_j) (or, in the row "
        "convention of §1.2.4 and eq. (5), x_i W_{h,q} (x_j W_{h,k})^T)", TEXT, "notation",
        "W_{h,q}^T x_i is k x 1 and (W_{h,k}^T x_j)^T is 1 x k: their product is a k x k matrix, not a score",
        "yes"),
    TextError(
        f"{_P}.ffn-bias-shape", "§1.2.2, the block's FFN; §1.2.4",
        "W_1 in R^{d x m}, W_2 in R^{m x d}, b_1, b_2 in R",
        "b_1 in R^m and b_2 in R^d (one bias per unit, as [1]; attnlab's blocks)", TEXT, "notation",
        "with scalar biases the FFN has 2 d m + 2 = 2,097,154 parameters at d = 512, m = 2048 instead of "
        "2 d m + m + d = 2,099,712: 2558 fewer per block", "yes"),
    TextError(
        f"{_P}.second-norm-index", "§1.2.2, the block, last line",
        "z_i = LayerNorm(u_i + z'_i; gamma_2, beta_2), gamma_1, beta_1 in R^d",
        "gamma_2, beta_2 in R^d: the second LayerNorm has its own gain and bias", TEXT, "typo",
        "as printed gamma_1, beta_1 are declared twice and gamma_2, beta_2 never", "yes"),
    TextError(
        f"{_P}.layernorm-range", "§1.2.2, after eq. (2)",
        "mu_z = (1/k) sum_{i=1}^k z_i, sigma_z = sqrt((1/k) sum_{i=1}^k (z_i - mu_z)^2)",
        "the sums run over the d coordinates of z in R^d: mu_z = (1/d) sum_{i=1}^d z_i (k is the head width, "
        "k = 64 against d = 512)", TEXT, "notation",
        "z in R^512 with ones in its first 64 coordinates and zeros elsewhere: the printed mu_z is 1, the mean of z "
        "is 0.125; the printed sigma_z is 0, so z would be divided by eps alone", "yes"),
    TextError(
        f"{_P}.head-split-shape", "§1.2.2, before eq. (3) and after eq. (6)",
        "W_q, W_k, W_v in R^{d x d} are split into submatrices of dimension (n, k); each W_{i,q}, W_{i,k}, W_{i,v} "
        "is of dimension (n, k), so it is \"looking\" at the whole sentence",
        "the slices W_q[:, (i-1) k : i k] are d x k, whatever the sentence length n (as the text's own \"from "
        "(d, d) to (d, k)\" says); n x k is the shape of Q^(i) = X W_{i,q}", TEXT, "notation",
        "W_q[:, :64] of a 512 x 512 matrix is 512 x 64 for every n", "yes"),
    TextError(
        f"{_P}.eq3-value-slice", "§1.2.2, eq. (3)", "W_v -> W_{1,v} = W_v[:, :d_k], ..., W_{d/k,v} = W_k[:, d-d_k:d]",
        "W_{d/k,v} = W_v[:, d-d_k:d]", TEXT, "typo",
        "as printed the last head's value map is its key map: V^(H)(x) = K^(H)(x) for every input x", "yes"),
    TextError(
        f"{_P}.eq4-subscript", "§1.2.2, eq. (4)", "Q^(h)(x_i) = W_{h,a}^T(x_i), K^(h)(x_i) = W_{h,k}^T(x_i)",
        "Q^(h)(x_i) = W_{h,q}^T x_i (and V^(h)(x_i) = W_{h,v}^T x_i, which eq. (4) leaves out)", TEXT, "typo",
        "no W_{h,a} is defined: eq. (3) splits W_q, W_k and W_v only", "yes"),
    TextError(
        f"{_P}.scale-by-k", "§1.2.2, eq. (5); §2.1.3, the display before (16) and eq. (17)",
        "Softmax(Q K^T / k)", "Softmax(Q K^T / sqrt(k)), as §1.2.3 motivates and [1] defines", TEXT, "typo",
        "§1.2.3 and §2.1.1 write sqrt(d_k); dividing by k shrinks the logits' variance to 1/k", "yes",
        check=f"{_P}.dot-product-variance"),
    TextError(
        f"{_P}.eq7-head-count", "§1.2.2, eq. (7)", "MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W_c",
        "Concat(head_1, ..., head_H) W_c: in the text h indexes the heads and H = d/k counts them ([1] writes "
        "head_h with h its number of heads)", "the text (copies [1]'s head_h into its own notation)", "notation",
        "the text's h runs over 1..H in eq. (4) and the block; head_h as the last head names one head, not H",
        "yes"),
    TextError(
        f"{_P}.jacobian-sign", "§1.2.3, the matrix J_s after eq. (8)",
        "diagonal entries (2,2) and (n,n) printed -s_2 (1 - s_2), -s_n (1 - s_n)",
        "+s_i (1 - s_i) on the whole diagonal, as the derivation above the matrix gives", TEXT, "typo",
        "max |autograd Jacobian - (diag(s) - s s^T)| = 7.6e-17", "yes", check=f"{_P}.softmax-jacobian"),
    TextError(
        f"{_P}.gamma-division", "§1.2.4", "the parameter gamma is used to avoid division by 0",
        "epsilon avoids division by 0 (as the text says after eq. (2)); gamma is the learned gain", TEXT, "typo",
        "a constant row z has sigma_z = 0: with eps = 0 eq. (2) divides by 0 for every gamma", "yes"),
    TextError(
        f"{_P}.layernorm-matrix-form", "§1.2.4",
        "U = gamma_1 (X + U' - mu_{x,u}) / (sigma_{x,u} + eps) + beta_1 in R^{n x d}, gamma_1, beta_1 in R^d",
        "row by row, u_i = LayerNorm(x_i + u'_i; gamma_1, beta_1) (eq. 2): mu and sigma are n per-row statistics "
        "and gamma_1 scales columns, (X + U' - mu 1^T) / (sigma + eps) diag(gamma_1) + 1 beta_1^T", TEXT, "notation",
        "gamma_1 in R^d times an n x d matrix has no meaning for n > 1; read with one mu and one sigma for the whole "
        "matrix, U's row i would move when another token j changes, while eq. (2) keeps rows apart", "yes"),
    TextError(
        f"{_P}.encoder-stack-index", "§1.2.4, the encoder", "f_{theta_1} o ... o f_{theta_1}(X)",
        "f_{theta_L} o ... o f_{theta_1}(X), as §1.2.2 writes: L blocks with their own parameters", TEXT, "typo",
        "as printed the encoder applies one block, theta_1, L times", "yes"),
    TextError(
        f"{_P}.masked-scores-name", "§1.2.5, the mask",
        "Let A be the matrix of scaled values a_{i,j} ... If we add matrix M to matrix S ... elements s_ij",
        "M + A, with elements a_ij for i >= j and -inf otherwise", TEXT, "typo",
        "S is not defined in §1.2.5; s_i names the softmax's outputs in eq. (8)", "yes"),
    TextError(
        f"{_P}.masked-row-combination", "§1.2.5, after eq. (10)",
        "the j-th row, the attention coefficients for input x_j, are computed as (a'_{j,1}, ..., a'_{j,j}, 0, ..., "
        "0) . V; they are linear combinations of a'_{j,1}, ..., a'_{j,j}",
        "the j-th output row is sum_{i <= j} a'_{j,i} v_i: a combination of the value rows v_1, ..., v_j, the "
        "a'_{j,i} its coefficients (not the other way round)", TEXT, "typo",
        "the row is linear in V and does not change when v_{j+1}, ..., v_n change; it is not linear in the a'", "yes",
        "the decoder is only influenced by preceding positions, as the text concludes"),
    TextError(
        f"{_P}.cross-attention-projections", "§1.2.5, cross-attention", "softmax(X Z^T / sqrt(k)) Z",
        "softmax(X W_q (Z W_k)^T / sqrt(k)) Z W_v per head, then W_c, as [1]: queries from the decoder, keys and "
        "values from the encoder, each through its own projection", TEXT, "omission",
        "the printed layer has no parameters, and each of its output rows is a convex combination of the encoder's "
        "rows", "yes", "the query comes from the decoder, keys and values from the encoder"),
    # ---- §2.1 -------------------------------------------------------------------------------
    TextError(
        f"{_P}.taylor-display", "§2.1.2, the first-order Taylor example (both displays)",
        "sum_j (1 + q^_i^T sum_j k^_j) V_j / sum_j (1 + q^_i^T k^_j); simplified: (sum_j V_j + q^_i^T k^_j V_j) / "
        "(n + q^_i^T sum_j k^_j)",
        "(sum_j V_j + q^_i^T sum_j k^_j V_j^T) / (n + q^_i^T sum_j k^_j): phi(x) = [1, x/|x|] in eq. (15)",
        TEXT, "wrong statement",
        "the first display weights every V_j by the same 1 + q^_i.sum_j k^_j: off by 1.90 (n = 29); the second "
        "leaves q^_i^T k^_j V_j outside the sum over j", "yes",
        "the Taylor kernel is a linear attention, as the text concludes", f"{_P}.linear-taylor-identity"),
    TextError(
        f"{_P}.eq16-any-w", "§2.1.3, eq. (16)", "Pr(||P~ w - P w|| < eps ||P w||) > 1 - o(1) for any w",
        "the JL lemma bounds each entry by eps ||p_i|| ||w||; relative to ||P w|| the error grows like sqrt(n/k') "
        "for zero-mean w", "Wang et al. (2020), Linformer, Theorem 1, copied by the text", "missing hypothesis",
        "w ~ N(0, 1), k' = 8 ln n: mean relative error 1.75 at n = 256 and 7.8 at n = 2048; no draw below 1",
        "partly", "low rank suffices for values with a non-zero mean (error 0.26 at k' = 128, n = 256, w ~ N(1, 1))",
        f"{_P}.lowrank-relative-error"),
    TextError(
        f"{_P}.eq16-typos", "§2.1.3, eq. (16) and Lemma 2.1",
        "||P w^T - P w^T||; the \"JR lemma\"; P = exp(A) D_A^{-1}; softmax of an n x n matrix costs o(n^2)",
        "||P~ w^T - P w^T||; the Johnson-Lindenstrauss lemma; P = D_A^{-1} exp(A) (rows normalised); O(n^2)",
        TEXT, "typo", "eq. (16) as printed compares a matrix with itself; exp(A) D_A^{-1} normalises columns",
        "yes", check="transformer-math.efficient-attention-error"),
    TextError(
        f"{_P}.eq17-value-shape", "§2.1.3, eq. (17)", "F_i V^(i) is k' x d",
        "k' x k: V^(i) is n x k in the text's notation (its next sentence projects K and V into k' x k layers)",
        "the text (copies Linformer's k x d, where Linformer's d is its head width)", "notation",
        "F_i in R^{k' x n} times V^(i) in R^{n x k} is k' x k; the head's output, n x k' times k' x k, is n x k",
        "yes"),
    # ---- §3 ---------------------------------------------------------------------------------
    TextError(
        f"{_P}.geometric-qk-shapes", "§3, the geometric reading of Q K^T", "Q K^T is W_q X . (W_k X)^T",
        "X W_q (X W_k)^T with the tokens as rows of X in R^{n x d}, as §1.2 (or (W_q X)^T (W_k X) with tokens "
        "as columns)", TEXT, "notation",
        "X in R^{n x d}, W_q in R^{d x d}: W_q X is undefined for n != d; with tokens as columns (X in R^{d x n}) "
        "W_q X (W_k X)^T is d x d, not the n x n matrix Q K^T", "yes"),
    TextError(
        f"{_P}.attends-index", "§3, the geometric reading of eq. (18)", "now if, for example, q_i attends mostly "
        "k_1, then o_j ~ (1/C) <q_j, k_1> g(v_1)", "if q_j attends mostly k_1: the output o_j belongs to the query "
        "q_j", TEXT, "typo", "o_j depends on q_j alone among the queries (eq. 18); q_i is another query's", "yes"),
    # ---- §3.1 -------------------------------------------------------------------------------
    TextError(
        f"{_P}.most-heads-diagonal", "§3.1, Figs. 11-12", "Most of the heads show a diagonal structure",
        "on the thesis's own eight saved heads no head is diagonal: Sigma_2 or Sigma_3 fits each better than the "
        "identity or any shift; the weight concentrates in a band around the diagonal", TEXT, "overstatement",
        "0 of 8 positional; d_Sigma1 / 2n = 0.81-0.97 against d_Sigma / 2n = 0.38-0.59; the largest weight on "
        "the token itself in 0-25% of rows; weight within |i - j| <= 2: 0.47-0.82 (uniform 0.29)", "partly",
        "attention concentrates near the diagonal (§3.1.1), in bands (Sigma_2), not on it (Sigma_1)",
        f"{_P}.head-thesis-most-diagonal"),
    TextError(
        f"{_P}.low-l2-norm", "§3.1", "all the matrix involved are full rank with low l_2 norm",
        "the author's l_2 norm is NumPy's default matrix norm, the Frobenius norm, taken of the padded 350 x 350 "
        "maps (np.linalg.norm in the thesis's notebook \"Experiment with norm and rank 1 l 8 h\"), not a spectral "
        "norm: for an attention map whose 350 rows are each a distribution over the 16 real keys (the saved maps "
        "also carry dropout's 1/0.9) it lies in [sqrt(350/16), sqrt(350)] = [4.7, 18.7] whatever the head does "
        "(uniform rows give the low end, one-hot rows the high end), so \"low\" compares with no reference and "
        "moves with the padding. The rank that notebook prints is the padded map's (17 of 350), the number of real "
        "keys: full rank holds of the maps cut to the sentence", TEXT, "omission",
        "the thesis's eight saved maps: Frobenius norm of the padded map 7.5-9.3 (its notebook prints 7.2-9.6 for "
        "its heads), inside [4.7, 18.7]; rank 16 of 350 padded, 16 of 16 cut to the sentence", "partly",
        "full rank holds of the 16 x 16 crops", f"{_P}.head-thesis-full-rank"),
    TextError(
        f"{_P}.permutation-matrix", "§3.1.1, eq. (19) and §3.1.2", "P is a permutation matrix taken from Sigma",
        "only I_n in Sigma is a permutation: a Sigma_3 member repeats the column e_t in w rows (rank "
        "n - sum (w_i - 1)) and a Sigma_2 member has several nonzeros per row", TEXT, "wrong statement",
        "sigma3(5, [3], [3]) has rank 3 < 5", "partly",
        "the families are well defined as templates; the best true permutation is fitted apart",
        f"{_P}.head-sigma-fits-exact"),
    TextError(
        f"{_P}.sigma3-block-diagonal", "§3.1.2, \"up to a proper permutation of rows as block-diagonal\"",
        "the maps sigma_i: (1, 0, ..., 0) -> (0, ..., 1, ..., 0) make a rare-token matrix diagonal",
        "no permutation of rows or columns makes a Sigma_3 member diagonal (w rows share one column); it is "
        "already block diagonal", TEXT, "wrong statement", "a permutation keeps the rank; a Sigma_3 member has "
        "rank < n and I_n rank n", "partly", "the set X of band + error does contain every family",
        f"{_P}.head-sigma-fits-exact"),
    TextError(
        f"{_P}.pr-anchor", "§3.1.2, P_r and Fig. 13", "P_r has its w ones in the first column (token t opens its "
        "window); Fig. 13 has tokens 3, 4, 5 attend token 4", "either anchor: blocks (t, a, w) with a <= t < a + w; "
        "P_r in R^{w_1 x w_1} and d_1 + w + d_2 = n name one width w_1 = w", TEXT, "notation",
        "Fig. 13's block has t in the middle of its window", "yes", check=f"{_P}.head-sigma-fits-exact"),
    TextError(
        f"{_P}.x-convex", "§3.1.2, existence of solution",
        "X is convex: \"sum of error matrices, according to our definition, is an error matrix, hence X_t in X\", "
        "where E_rr is \"a sparse matrix\" with max |e_ij| <= eps",
        "a convex combination keeps every entry within eps (|t e1 + (1 - t) e2| <= eps) and t B1 + (1 - t) B2 is a "
        "band matrix: only the sparsity budget breaks, since the supports of two errors of s nonzeros each join "
        "into up to 2s. With no budget (the box |e_ij| <= eps) X is convex", TEXT, "wrong statement",
        "n = 13, w = 2, eps = 0.05, s = 4: 100% of 200 midpoints leave X (7-8 nonzeros off the band), and every "
        "one of them keeps its entries within eps (100% inside the box)", "partly",
        "X is convex in the box reading; with a budget of s nonzeros it is a finite union of convex sets, closed, "
        "so a minimiser of (21) exists either way", f"{_P}.head-set-convex"),
    TextError(
        f"{_P}.uniqueness", "§3.1.2, Theorem 3.1", "existence and uniqueness of the solution to (21), by the "
        "Hilbert projection theorem", "Theorem 3.1 needs a Hilbert norm and a convex set; the L1 norm of (22) is "
        "not one (the parallelogram law fails). With a sparsity budget the minimiser is not unique; in the box "
        "case it is, by |H - X| = |H - X~| + |X - X~|", TEXT, "wrong statement",
        "H = [[0.7, 0, 0.3], [0, 1, 0], [0.3, 0, 0.7]], w = 0, eps = 0.1, s = 1: two minimisers at distance 0.5, "
        "|X1 - X2| = 0.2", "partly", "existence holds; uniqueness holds in the box case only",
        f"{_P}.head-projection-unique"),
    TextError(
        f"{_P}.closedness", "§3.1.2, X closed", "the limit of the sparse errors \"is mostly 0\"",
        "for a fixed budget s, X is a finite union over supports of closed boxes, hence closed", TEXT, "omission",
        "the argument never fixes the number of nonzeros that \"sparse\" allows", "yes",
        "X is closed for every fixed s", f"{_P}.head-projection-exact"),
)
register_errata(list(ERRATA))


__all__ = ["ERRATA"]
