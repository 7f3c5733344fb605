"""Where the logic text (Shin & Matzinger) is wrong or loose, what is right, and why.

One entry per finding: (where in the text, what it says, what attnlab implements, the
reason). The entries are the ones documented beside the code that implements the correct
version (the modules named in each reason); the claims' docstrings point here.
"""

from __future__ import annotations

COLUMNS = ("where", "the text says", "attnlab implements", "why")

TEXT_ERRORS: tuple[tuple[str, str, str, str], ...] = (
    ("§1, eq. 1.5",
     "'pass an exam' is encoded as (0, 0, 1, 1, 0, 0)",
     "(0, 0, 1, 1, 0)",
     "the vocabulary has five words, so codes have five entries (examples.MOOD_B)."),
    ("§1, eq. 1.8",
     "X = w_1 X(receive) + w_2 X(a) + w_2 X(present), with w_1 = 1, w_2 = 0, w_3 = 1",
     "w_3 on X(present); 'a' is outside the vocabulary (its code is 0)",
     "the second w_2 must be w_3 for the stated weights to apply."),
    ("§1, eq. 1.1",
     "the matrix B of the OR-of-ANDs network is missing from the text",
     "B = [[1,1,0,0,0,0], [0,0,1,1,0,0], [0,0,0,0,1,1]]",
     "the only 0/1 matrix for which ReLU(B X - 1) holds the three ANDs (examples; claim logic.or-of-ands)."),
    ("§2, eq. 2.3-2.5",
     "w_ji = z exp(X_j^t k^t q X_i) with z = sum_{j <= i} exp(...)",
     "w_ji = exp(...) / z",
     "z normalises, so it divides; and the sum over j <= i is a causal mask that eq. 2.1-2.2 do not "
     "contain (the hand-programmed solutions use no mask and need none)."),
    ("§2.1, after eq. 2.6",
     "'if M is the number of categories in the text, D_-1 is M x M'",
     "M is the text length (number of positions); D_-1 acts on X_P",
     "N counts categories and M positions everywhere else (encoding.shift_matrix)."),
    ("§2.1, eq. 2.11",
     "C = (q(1,1), q(2,2), q(3,3), q(1,2), ..., q(4,3)) at N = 4",
     "diagonal pairs (a, a) for all a = 1..N first, then the off-diagonal pairs row by row",
     "q(4,4) is missing; this order is the one under which pair (3, 2) is row 12, as the text says "
     "(solutions.pair_order)."),
    ("§2.1, eq. 2.11-2.12",
     "C_ab = q_true(a, b) for every hidden unit; 'only the twelfth line of B yields five, other lines a "
     "smaller value'",
     "C_ab = q(a, b) for a != b, C_aa = q(a, a) - 2 sum_{b != a} q(a, b)",
     "row (a, b) = 2 e_a + e_b gives 6 > 5 on a repeated pair (a, a) (input 3 e_a), so unit (a, b) "
     "fires there with value 2 after bias -4. No choice of B helps: 2 e_a + e_b is the midpoint of "
     "the inputs of (a, a) and (b, a) and ReLU(affine) is convex (the same for any weight lambda != 1 "
     "in place of 2). The text's C errs by 2 sum_{b != a} q(a, b) at X_{i-1} = X_i = a "
     "(solutions.solution1; claim logic.solution-1)."),
    ("§2.1, numeric example",
     "'the category of the token X_3 was the third category, whilst the token X_2 was second'",
     "X_2 is category 3 and X_3 is category 2",
     "the example text is (1, 3, 2, 2); the column (0, 1, 2, 0) has 2 on category 3 (the previous token)."),
    ("§2.1, eq. 2.13",
     "Y = (0, Y_2, ..., Y_M) also for the linear read-out Y = C (ATTENTION_*^t + X)",
     "Y_1 = d_{X_1} (the digit of the first token)",
     "column 1 of the attention is 0, so the linear read-out sees e_{X_1} alone and returns C e_{X_1}; "
     "also Y_i = 10 X_{i-1} + X_i needs the categories to be the digits 0..9, not 1..N "
     "(solutions.solution1_linear; claim logic.solution-1-linear)."),
    ("§2.2, before eq. 2.15",
     "'assume M = 4, hence four categories'",
     "N = 4 (categories)",
     "N and M are swapped; A_2 is N x N."),
    ("§2.2 and §2.3, examples",
     "'the first category (1, 0, 0, 0, 0)' with a category-3 vector (0, 0, 1, 0)^t",
     "(1, 0, 0, 0)",
     "both one-hot vectors live in R^N with N = 4."),
    ("§2.2, ReLU example",
     "ReLU[100 e_3 + (12, 32, 25, 11) - (-100, -100, -100, -100)] = (0, 0, 25, 0)",
     "ReLU[100 e_3 + (12, 32, 25, 11) - (100, 100, 100, 100)]",
     "subtracting -100 adds 100 and every entry survives; the bias is -100."),
    ("§2.2, eq. 2.21 and §2.3, eq. 2.32",
     "the constant 100 'simply needs to be larger than all values of q_true'",
     "read-out with offset m = max(0, -min q): exact iff c >= max(0, max q) + max(0, -min q)",
     "the selected entry comes out as ReLU(q_true): every negative target is clipped to 0 whatever "
     "the constant (with q_true ~ N(0, 1), as in §4, half the table). With the offset the condition "
     "is on the range of q_true, up to 2 max |q_true|; 'larger' can be 'at least' since ReLU(0) = 0 "
     "(solutions; claim logic.relu-constant)."),
    ("§2.3, after eq. 2.23",
     "(100 I_M, A_2) with I_M the M x M identity",
     "(100 I_N, A_2)",
     "the block multiplies a one-hot category, which is in R^N."),
    ("§2.3, end",
     "'100 may need to be larger if the number of categories is more than ten'",
     "the constant depends on the values of q_true only, not on N",
     "see the condition above; with the two-digit table of eq. 2.15 at N = 10 and categories 1..10 "
     "the entries reach 110 > 100 already at ten categories."),
    ("§3.1, derivative in q_{(i-1)i} (before eq. 3.9)",
     "E[X_j^t v^t X_{i-1}] = Tr(v^t)/10 for j = i - 1",
     "Tr(v^t)/N",
     "E[X^t v^t X] = sum_a P(X = a) v_aa = Tr(v)/N for a uniform category; the next line has /N."),
    ("§3.1, before eq. 3.22",
     "'the sum of the entries of the k-th row of v divided by 100'; 'E[X_j] has entries 1/10'",
     "divided by N^2; entries 1/N",
     "the text's N = 10 slipped into the general formulas."),
    ("§3.1, eq. 3.1-3.3",
     "E[SSE] = E sum_{i=1}^M ||Y_i - v (q_1i X_1 + ... + q_Mi X_i)||^2 with Y_i = X_{i-1}",
     "sum over i = 2..M, inner sum over j = 1..M",
     "X_0 does not exist, so position 1 has no target; eq. 3.2 sums the inner terms to X_M and eq. 3.3 "
     "stops at X_i (gradients; claim logic.gradient-closed-form)."),
    ("§3.1, eq. 3.6-3.8 and 3.18",
     "dE[SSE]/dq_ji = E[X_j^t v^t X_{i-1}] - ...",
     "-2 times the printed bracket",
     "d/dq ||Y - v sum q X||^2 = -2 (Y - v sum q X) . v X_j; the zeros are the same, the descent "
     "direction is not (gradients.closed_form_gradient)."),
    ("§3.1, before eq. 3.18",
     "the term q_(i-1)i (delta_kl/N - 1/N^2) written twice",
     "once",
     "E[X_{i-1}^t E_kl sum_j q_ji X_j] = Q_i/N^2 + q_(i-1)i (delta_kl/N - 1/N^2); 3.18 itself has it once."),
    ("§3.1, eq. 3.23 and 3.31",
     "Delta v = sum_i q_{i-1} / sum q^2; (1 - 1/i) in 3.31",
     "sum_i q_{(i-1)i}; (1 - 1/M)",
     "the index of the shifted diagonal is dropped; the next line of the text has 1 - 1/M."),
    ("§3.1, eq. 3.23-3.34",
     "the only undesirable zeros of the gradient are degenerate points such as q = v = 0",
     "two larger degenerate sets are stationary as well: q = 0 with Tr v = 0 and 1^t v 1 = 0; v = 0 "
     "with sum_i q_(i-1)i = 0 and sum_{i>=2} sum_j q_ji = 0",
     "the derivation divides by sum q_ji^2 (3.23) and by Delta v (3.26), both 0 there; E[SSE] = M - 1 "
     "at all of them (gradients.stationary_points; claim logic.stationary-set)."),
    ("§3.1-3.2, softmax constraint",
     "'and all the q_ji >= 1'; 'with sum_{j != i-1} q_ji = 1'",
     "q_ji >= 0 and sum_{j <= M} q_ji = 1 (eq. 3.35)",
     "softmax weights are non-negative and sum to 1 over all j; with q_ji >= 1 the sum would be >= M "
     "(softmax_positions parametrises q = softmax of each column; claim logic.softmax-descent)."),
    ("§3.2, end",
     "'with softmax, gradient descent minimizing E[SSE] ... finds the correct solution' v = I, q_(i-1)i = 1",
     "the infimum: q_(i-1)i = 1 and q_ji = 0 lie on the boundary of the simplex, which softmax reaches only as "
     "the logits diverge",
     "E[SSE] > 0 at every finite point; with eps = 1 - q_(i-1)i, E[SSE] ~ eps^2 and plain gradient descent "
     "gives eps ~ t^(-1/2), E[SSE] ~ 1/t: measured distance ratio 1.40 and loss ratio 2.01 between 1000 and "
     "2000 steps, all 32 starts within 0.03 of (D_-1, I) (softmax_positions; claim logic.softmax-descent)."),
    ("§3.3, Y_hat_i and SSE_i",
     "Y_hat_i = sum_{j=1}^i v_ij q(X_j, X_i); SSE_i with sum_{j=1}^N v_ij q(X_i, X_j)",
     "Y_hat_i = sum_{j=1}^M v_ij q(X_j, X_i)",
     "eq. 3.36 has no causal mask, v is M x M (positions, not N), and w_ji = q(X_j, X_i) as in eq. 2.5 "
     "(category_attention)."),
    ("§3.3, after eq. 3.43; eq. 3.58, 3.66",
     "v_11 = ... = v_NN; v_ij = -1/(N-2); v_i1 (v_i1 (N-1) + Delta v) = 0; "
     "v_i(i-1) / sum_{j != i} v_ij^2 = 1 = 1 - 1/(N-1)",
     "v_MM; -1/(M-2); v_i1 ((M-1) v_i1 + Delta v) = 0; the ratio is 1 - 1/(M-1)",
     "v is M x M and a row has M - 2 entries j != i, i - 1. The ratio c = 1 - 1/(M-1) cannot also be 1: "
     "3.64 reduces to (c - c^2) Delta Q(q_true) = 0, which forces Delta Q(q_true) = 0 only because c != 0, 1."),
    ("§3.3, eq. 3.71 and the line after",
     "0 = a(t) + v_ii q(t, t), a(t) = -v_ii q_true(t, t) / (1 + v_ii) (with q_true = a(t) + q, v_i(i-1) = 1)",
     "a(t) = v_ii q(t, t) = v_ii q_true(t, t) / (1 + v_ii); in general q = (q_true - mu q_true(t,t)/(lambda + mu)) "
     "/ lambda",
     "Y_hat_i = q(X_{i-1}, X_i) + v_ii q(X_i, X_i) = q_true - a(t) + v_ii q(t, t); the printed a(t) leaves "
     "E[SSE] > 0 (measured >= 0.19 at N = M = 3) while the corrected family gives 1e-32 "
     "(category_attention.intended; claim logic.category-descent)."),
    ("§3.3, Delta Q != 0; §3.3.1",
     "'Delta Q != 0 ... except for degenerate q_true'; q_true depending on t only 'is not the case in any "
     "application ... we can reject this'",
     "an assumption the result needs: Delta Q(q) = sum_t p_t Var_r q(r, t), = Delta Q(q_true) / lambda^2 at a "
     "solution",
     "for q_true(r, t) = g(t), v = I, q = q_true is a zero-loss minimum with sum_{j != i} v_ij = 0 and "
     "v_i(i-1) = 0, and gradient descent ends off the intended family from 32 of 32 starts "
     "(seeds 0 and 3; claim logic.category-degenerate)."),
    ("§3.3.1, first paragraph",
     "'there can be no solution with 3.60 except the trivial where all the v_ij's and all the q_(r,t) are 0'",
     "v = 0 is a stationary point for every q in a subspace of codimension 3",
     "at v = 0 the q-gradient vanishes and dE/dv_is = -2 E[Y_i q(X_s, X_i)], three linear conditions on q; "
     "E[SSE] = E[Y^2] there, the analogue of §3.1's extra degenerate sets "
     "(category_attention.v_zero_stationary; claim logic.category-stationary)."),
)
