"""Where the logic text (Shin & Matzinger) is wrong or loose: one :class:`attnlab.errata.TextError`
per finding, with the witness and the claim or experiment that measures it.

Every record is the text's own: the text copies no derivation from another source. Some things
are *not* recorded because they are not errors of the text:

* what the extraction of the PDF lost or garbled: the matrices B of eq. 1.1 and eq. 2.10 (and the
  matrices 2.18-2.20) are absent from attnlab's copy of the text (the sentences around them
  describe them, and :mod:`~attnlab.papers.logic.examples` and :mod:`~attnlab.papers.logic.solutions`
  build what they describe); the display before eq. 3.18, which ends in a truncated LaTeX fragment
  repeating its own last term "+ q_(i-1)i (delta_kl/N - 1/N^2" with no closing bracket (eq. 3.18 has
  the term once); the left cells of §4's table ("N imes N");
* conventions: eq. 3.6-3.8 and 3.18 write the bracket alone as "dE[SSE]/dq_ji" (and /dv_kl), -1/2
  of the derivative, the direction descent moves, with the same zeros; attnlab reads them up to that
  factor (the ledger entry logic.gradient-q says so);
* the text's numbers for its own case: "E[X_j] has entries ... in our case 1/10" and "divided by
  100" (before eq. 3.18) are N = 10's values, said as such;
* the text's restrictions that it states itself (the exclusion of a q_true that depends on X_i only
  in §3.3; "100 may need to be larger" with more categories, true of the two-digit table of
  eq. 2.15, whose entries reach 11 N): they are the text's claims (the ledger), not listed here.
"""

from __future__ import annotations

from attnlab.errata import TextError
from attnlab.registry import register_errata

TEXT = "the text"

ERRATA: tuple[TextError, ...] = (
    TextError(
        "logic.pass-exam-code", "§1, eq. 1.5", "'pass an exam' is encoded as (0, 0, 1, 1, 0, 0)",
        "(0, 0, 1, 1, 0): the vocabulary has five words", TEXT, "typo",
        "the table of eq. 1.3 has five one-hot codes of length 5", "yes", check="logic.happy-sad"),
    TextError(
        "logic.weights-w3", "§1, eq. 1.8",
        "X = w_1 X(receive) + w_2 X(a) + w_2 X(present) with w_1 = 1, w_2 = 0, w_3 = 1",
        "the weight of X(present) is w_3", TEXT, "typo",
        "w_3 is named but never used; with w_2 = 0 on 'present' the sum would lose it", "yes"),
    TextError(
        "logic.softmax-normaliser", "§2, after eq. 2.4",
        "w_ji = z exp(X_j^t k^t q X_i) with the normalisation z = sum_{j <= i} exp(...)",
        "w_ji = exp(...) / z; eq. 2.1-2.2 have no causal mask, so the sum runs over all j", TEXT, "typo",
        "with w_ji = z exp(...) a column sums to z^2, not 1", "yes"),
    TextError(
        "logic.shift-dimension", "§2.1, after eq. 2.6", "'if M is the number of categories in the text, D_-1 is M x M'",
        "M is the number of positions; D_-1 acts on X_P", TEXT, "typo",
        "N counts categories and M positions everywhere else (eq. 2.8: k = (0 | I_M))", "yes"),
    TextError(
        "logic.c-order", "§2.1, eq. 2.11",
        "C = (q(1,1), q(2,2), q(3,3), q(1,2), ..., q(4,3)) at N = 4",
        "the N diagonal pairs (a, a) first, q(4, 4) included, then the other pairs row by row", TEXT, "typo",
        "q(4, 4) is missing; with it, pair (3, 2) is entry 12, as the text's numeric example says", "yes"),
    TextError(
        "logic.solution1-repeated-pairs", "§2.1, eq. 2.11-2.12",
        "C_ab = q_true(a, b) for every hidden unit: the ReLU layer outputs the one-hot category pair",
        "C_ab = q_true(a, b) for a != b and C_aa = q_true(a, a) - 2 sum_{b != a} q_true(a, b)", TEXT,
        "wrong statement",
        "no ReLU unit on x = 2 e_c + e_d is on for the pair (a, b) alone: 2 e_a + e_b is the midpoint of the "
        "inputs 3 e_a of (a, a) and e_a + 2 e_b of (b, a), and ReLU(affine) is convex; with rows 2 e_a + e_b the "
        "unit (a, b) also fires with value 2 on (a, a), so the text's C errs by 2 sum_{b != a} q(a, b) when "
        "X_{i-1} = X_i (the text's own example (1, 3, 2, 2) has one)",
        "partly", "the architecture solves the task with the corrected C", check="logic.solution-1"),
    TextError(
        "logic.example-categories", "§2.1, numeric example",
        "'the category of the token X_3 was the third category, whilst the token X_2 was second'",
        "X_2 is category 3 and X_3 is category 2", TEXT, "typo",
        "the text is (1, 3, 2, 2) and the column (0, 1, 2, 0) has the 2 (the previous token) on category 3", "yes"),
    TextError(
        "logic.linear-first-entry", "§2.1, eq. 2.13",
        "with B and ReLU left out, C (ATTENTION_*^t + X) = Y = (0, Y_2, ..., Y_M)",
        "entries 2..M are Y_i; entry 1 is C e_{X_1} = d_{X_1}, the digit of the first token", TEXT, "omission",
        "column 1 of the attention is 0 (D_-1 has no predecessor), so the linear read-out sees X_1 alone",
        "yes", check="logic.solution-1-linear"),
    TextError(
        "logic.n-m-swapped", "§2.2, before eq. 2.15", "'assume M = 4, hence four categories'",
        "N = 4 (categories); A_2 is N x N", TEXT, "typo", "A_2 of eq. 2.15 is indexed by category pairs", "yes"),
    TextError(
        "logic.one-hot-length", "§2.2 and §2.3, examples",
        "'the first category (1, 0, 0, 0, 0)' beside a category-3 vector (0, 0, 1, 0)^t",
        "(1, 0, 0, 0)", TEXT, "typo", "both vectors are one-hot codes in R^N with N = 4", "yes"),
    TextError(
        "logic.relu-example-sign", "§2.2, ReLU example",
        "ReLU[100 e_3 + (12, 32, 25, 11) - (-100, -100, -100, -100)] = (0, 0, 25, 0)",
        "ReLU[100 e_3 + (12, 32, 25, 11) - (100, 100, 100, 100)]", TEXT, "typo",
        "subtracting -100 adds 100: the left side is (112, 132, 225, 111)", "yes"),
    TextError(
        "logic.negative-targets", "§2.2, eq. 2.21; §2.3, eq. 2.32",
        "the read-out 'add a large number to the entry, subtract it from all and apply ReLU' returns q_true "
        "for any functional q_true into R, once the constant exceeds every value of q_true",
        "it returns ReLU(q_true): exact for q_true >= 0 (constant >= max q_true); a signed q_true (as in §4, "
        "N(0, 1)) needs an offset m = max(0, -min q_true) in the bias and C, and then the constant "
        "c >= max(0, max q_true) + m", TEXT, "missing hypothesis",
        "with the text's read-out every negative target comes out 0 whatever the constant: the largest error "
        "equals -min q_true (0.70, 2.33, 2.24 for the N(0, 1) tables of seed 0 at (N, M) = (3, 6), (4, 5), (10, 50))",
        "partly", "exact for q_true >= 0; signed tables need the offset, which the bias and C can hold",
        check="logic.solution-2, logic.solution-3"),
    TextError(
        "logic.identity-dimension", "§2.3, after eq. 2.23", "(100 I_M, A_2) with I_M the M x M identity",
        "(100 I_N, A_2)", TEXT, "typo", "the block multiplies a one-hot category, in R^N", "yes"),
    TextError(
        "logic.sse-range", "§3.1, eq. 3.1-3.3",
        "E[SSE] = E sum_{i=1}^M ||Y_i - v (q_1i X_1 + ... + q_Mi X_M)||^2 with Y_i = X_{i-1}; eq. 3.3 stops "
        "the inner sum at X_i",
        "sum over i = 2..M, inner sum over j = 1..M", TEXT, "notation",
        "X_0 does not exist, so position 1 has no target; eq. 3.2 sums to X_M, eq. 3.3 to X_i", "yes",
        check="logic.gradient-closed-form"),
    TextError(
        "logic.trace-over-ten", "§3.1, before eq. 3.7", "E[X_j^t v^t X_{i-1}] = Tr(v^t)/10 for j = i - 1",
        "Tr(v^t)/N", TEXT, "typo",
        "E[X^t v^t X] = sum_a P(X = a) v_aa = Tr(v)/N for a uniform category; eq. 3.7 itself has /N", "yes"),
    TextError(
        "logic.init-scale", "§3.1, after eq. 3.13",
        "'as soon as sigma is taken any order smaller than O(1/sqrt N) we are in business' (the blue term of "
        "eq. 3.9 dominates the red one), comparing term 3.12, Tr(v^t)/N = +- sigma O(1/sqrt N), with term 3.10, "
        "Tr(v^t v)/N = sigma^2 O(N)",
        "the red term of eq. 3.9 is (q_(i-1)i - q_ji) (Tr(v^t v)/N - 1^t v^t v 1/N^2), and q_(i-1)i - q_ji is itself "
        "O(sigma) at initialisation: with q and v at the same sigma the blue term dominates iff sigma << N^(-3/4) "
        "(E|blue| / E|red| = 1 / (sqrt 2 sigma^2 N sqrt(N - 1)) exactly), not for every sigma << N^(-1/2)", TEXT,
        "overstatement",
        "at sigma = N^(-3/4), an order below N^(-1/2), E|blue| / E|red| = sqrt(N/(N - 1)) / sqrt 2 = 0.745, 0.714, "
        "0.711 at N = 10, 50, 100 (measured over 1000 draws: logic.init-threshold); at the typical sigma = "
        "1/sqrt(parameters) it is P / (sqrt 2 N sqrt(N - 1)) >= 2.36 for N, M in {10, 50, 100} (P = M^2 + N^2, "
        "the parameters of q and v: 4.7 to 238; P = N^2, v's alone: 2.36 to 7.1; logic.init-scale)", "yes",
        "at the typical initialisation, sigma = 1/sqrt(number of parameters), the blue term dominates, as the text "
        "concludes ('if this is at initialization we are in business'); only the threshold 1/sqrt N is too high",
        check="logic.init-threshold, logic.init-scale"),
    TextError(
        "logic.shifted-index", "§3.1, eq. 3.23 and 3.31",
        "Delta v = sum_i q_{i-1} / sum q^2; (1 - 1/i) in eq. 3.31",
        "sum_i q_{(i-1)i}; (1 - 1/M)", TEXT, "typo", "the next line of the text has 1 - 1/M", "yes"),
    TextError(
        "logic.i-qbar", "§3.1, eq. 3.27", "the middle term (1^t v^t v 1 / N^2) i q_bar_i",
        "(1^t v^t v 1 / N^2) M q_bar_i", TEXT, "typo",
        "averaging eq. 3.6 over j gives sum_s q_si = M q_bar_i; eq. 3.28 has the factor M", "yes"),
    TextError(
        "logic.degenerate-sets", "§3.1, eq. 3.23-3.34",
        "the only unwanted zeros of the gradient are degenerate points, like q = v = 0",
        "two degenerate sets, not points, are stationary: q = 0 with Tr v = 0 and 1^t v 1 = 0; v = 0 with "
        "sum_i q_(i-1)i = 0 and sum_{i>=2} sum_j q_ji = 0", TEXT, "omission",
        "the derivation divides by sum q_ji^2 (eq. 3.23) and by Delta v (eq. 3.26), both 0 there; measured "
        "gradient <= 1e-15 and E[SSE] = M - 1 at points of both sets", "yes",
        "they are degenerate (q = 0 or v = 0), as the text says", check="logic.stationary-set"),
    TextError(
        "logic.simplex", "§3.2, after eq. 3.35",
        "'and all the q_ji >= 1'; later 'with sum_{j != i-1} q_ji = 1'",
        "q_ji >= 0 and sum_{j <= M} q_ji = 1 (eq. 3.35)", TEXT, "typo",
        "softmax weights are non-negative and sum to 1; with q_ji >= 1 a column would sum to >= M", "yes",
        check="logic.softmax-descent"),
    TextError(
        "logic.sum-range-3-3", "§3.3, Y_hat_i and SSE_i",
        "Y_hat_i = sum_{j=1}^i v_ij q(X_j, X_i); SSE_i with sum_{j=1}^N v_ij q(X_i, X_j)",
        "Y_hat_i = sum_{j=1}^M v_ij q(X_j, X_i)", TEXT, "notation",
        "eq. 3.36 has no causal mask, v is M x M (positions), and w_ji = q(X_j, X_i) as in eq. 2.5", "yes"),
    TextError(
        "logic.positions-not-categories", "§3.3, after eq. 3.43; eq. 3.58, 3.66",
        "v_11 = ... = v_NN; v_ij = -1/(N-2); v_i1 (v_i1 (N-1) + Delta v) = 0; "
        "v_i(i-1) / sum_{j != i} v_ij^2 = 1 = 1 - 1/(N-1)",
        "v_MM; -1/(M-2); v_i1 ((M-1) v_i1 + Delta v) = 0; the ratio is 1 - 1/(M-1)", TEXT, "typo",
        "v is M x M and a row has M - 2 entries j != i, i - 1; the ratio c = 1 - 1/(M-1) cannot also be 1: "
        "eq. 3.64 reduces to (c - c^2) Delta Q(q_true) = 0, which forces Delta Q(q_true) = 0 because c != 0, 1",
        "yes"),
    TextError(
        "logic.q-qtrue-swapped", "§3.3, the line before eq. 3.71",
        "'we obtain q_true(r, t) = a(t) + q(r, t)'",
        "q(r, t) = a(t) + q_true(r, t): eq. 3.55 with v_i(i-1) = 1, sum_{j != i} v_ij^2 = 1 and Delta q = 0", TEXT,
        "typo",
        "the text's next steps use q = q_true + a(t): eq. 3.71 0 = a(t) + v_ii q(t, t) and "
        "a(t) = -v_ii q_true(t, t) / (1 + v_ii) follow from it, and the family it states after eq. 3.71 "
        "(q = q_true + a(t)) is exact: measured E[SSE] <= 1e-30 at random v_ii", "yes",
        check="logic.category-descent"),
    TextError(
        "logic.v-ii-twice", "§3.3.1, eq. 3.63",
        "v_ii E[q(X_2, X_2) q(X_1, X_2)] = v_ii E[v_ii q(X_2, X_2) q(X_1, X_2)] = E[E[q_true(X_1, X_2) | X_2] q(X_1, X_2)]",
        "v_ii E[q(X_2, X_2) q(X_1, X_2)] = E[v_ii q(X_2, X_2) q(X_1, X_2)] = E[E[q_true(X_1, X_2) | X_2] q(X_1, X_2)]",
        TEXT, "typo", "the middle term has v_ii twice; eq. 3.62, v_ii q(t, t) = E[q_true(X, t)], gives the last "
        "equality with one", "yes"),
    TextError(
        "logic.trivial-zero", "§3.3.1, first paragraph",
        "'there can be no solution with 3.60 except the trivial where all the v_ij's and all the q_(r,t) are 0'",
        "v = 0 is a zero of the gradient for every q in a subspace of codimension 3", TEXT, "wrong statement",
        "at v = 0 the q-gradient vanishes and dE/dv_is = -2 E[Y_i q(X_s, X_i)], three linear conditions on q; "
        "measured gradient <= 3e-16 at v = 0 with max |q| >= 1.1 (E[SSE] = E[Y^2] there; N = M = 3, seed 0)", "yes",
        "these zeros are degenerate (v = 0), like §3.1's", check="logic.category-stationary"),
    TextError(
        "logic.n-equals-m", "§4, before the table of §4",
        "'We will have to take N = M in order to have compatibility' (of solutions 2 and 3 in one architecture)",
        "any N, M: both solutions are weights of one encoder with d = N + M inputs and h >= N + M hidden units",
        TEXT, "wrong statement",
        "the text's own experiment uses N = 10, M = 50; measured: attnlab's solutions 1, 2 and 3 (solution 1's "
        "corrected C, the offset of 2 and 3: neither involves N or M) loaded into one trainable model at N = 5, "
        "M = 12 give MSE <= 1e-20 without the normalisation (a sanity row of logic.learning)", "yes",
        check="logic.learning"),
    TextError(
        "logic.figure-references", "§4.2",
        "'Results ... are presented in Figures 4.2 and 4.2'; 'Figure 4.2 shows log - MSE of the running losses of the "
        "combined system'; 'Figure 4.2 shows the attention weights of the combined system'; 'Figure 4.2 shows the "
        "atentions weights of the system tailored exclusively towards the second solution'",
        "Figures 1-3: the log-MSE is Fig. 2 ('Log-MSE for the combined model in four flavors'), the combined "
        "system's attention weights are Fig. 3 ('Four flavours of the combined model'), the system tailored to the "
        "second solution is Fig. 1 ('Compare q_true with learned attention weights for the second solution')",
        TEXT, "typo",
        "the text has three figures, numbered 1, 2, 3 by their captions (Fig. 3's caption stands after the "
        "references); every reference in §4.2 reads 'Figure 4.2', the section's number", "yes"),
    TextError(
        "logic.original-paper-citation", "§2, before eq. 2.1",
        "'We consider here self-attention as it is defined in the original paper [4]'",
        "[7] (Vaswani et al. 2017, 'Attention is all you need'), the 'original transformer paper [7]' of the "
        "paragraph's first sentence", TEXT, "typo",
        "the reference list's [4] is Krizhevsky, Sutskever and Hinton 2012, 'Imagenet classification with deep "
        "convolutional neural networks', which has no self-attention; eq. 2.1-2.2 are [7]'s formulas", "yes"),
    TextError(
        "logic.two-solutions", "§2, first sentence",
        "'we present our two hand programmed one-level transformers in the Subsections 2.1 and 2.2'",
        "three, in Subsections 2.1, 2.2 and 2.3", TEXT, "typo",
        "the section's title is 'Three different hand programmed solutions', §2.3 is the 'Third approach', and §1 "
        "and §4 say three", "yes"),
    TextError(
        "logic.factor-two-in-q", "§2.1, numeric example",
        "'we simply move every column of X, to the right, and then v deletes the part below the line, and "
        "multiplies what is above by a factor 2'",
        "v deletes the part below the line; the factor 2 is in q (eq. 2.7: q = (0 | 2 D_-1)), so the attention "
        "weight w_(i-1)i = X_(i-1)^t k^t q X_i is 2", TEXT, "typo",
        "eq. 2.9's v = diag(I_N, 0) is a projection (v X has entries 0 and 1); with eq. 2.7-2.9 the product "
        "v X (X^t k^t q X) has column i equal to 2 X_C,(i-1), so eq. 2.14 holds as printed", "yes"),
)

register_errata(list(ERRATA))
