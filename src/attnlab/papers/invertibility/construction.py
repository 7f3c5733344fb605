"""Theorem 1 of the invertibility note as a construction: embeddings and W_QK^p with rank A = N^L.

``attnlab construct invertibility --set N=2 --set L=3 --set d=2 --set P=4`` builds
e (N x d), pos (L x d) and W_QK^p = w_p E_11 (w_p = w p, p = 1..P, distinct and positive),
the attention matrix A (N^L x Pd, :mod:`attnlab.papers.invertibility.matrix`) and
certifies its rank (:mod:`attnlab.analysis.certified_rank`): an N^L x N^L minor proved
nonsingular (up to 256 rows a ball determinant that excludes 0; above, Rump's test
||I - B R||_1 < 1 for an approximate inverse R of the minor B) proves rank A >= N^L.

What the theorem says, corrected (:mod:`attnlab.papers.invertibility.errata`): the note
writes "Pd >= N^k"; it means Pd >= N^L (rank A <= Pd makes that necessary). It is not
sufficient: every block A^p has its columns in span{1} + a space of dimension N + L - 2,
so rank A <= 1 + P (N + L - 2) for every embedding and W_QK, which is below N^L for few
heads when d > N + L - 2. A can be invertible only if Pd >= N^L and 1 + P (N + L - 2) >= N^L,
so at least max(ceil(N^L / d), ceil((N^L - 1) / (N + L - 2))) heads are needed
(:func:`minimal_heads`, the default P; a proof). That this many suffice, i.e. that the
construction reaches min(N^L, Pd, 1 + P (N + L - 2)) for generic w_p, is a conjecture,
certified case by case (the claims of this paper).

The check :func:`build` returns (ledger invertibility.theorem-1): where Theorem 1 applies
(positions, Pd >= N^L and 1 + P (N + L - 2) >= N^L), "certified rank A == N^L", a construction
row anchored to Theorem 1: reproduced, fail if attnlab's construction misses N^L, or inconclusive
where the certificate does not pin the rank. Where it does not apply, attnlab's own statement
(its conjecture) "certified rank A == its cap", unanchored (role own: holds, refuted or
inconclusive): for Pd < N^L and without positions the text says nothing; where Pd >= N^L but
1 + P (N + L - 2) < N^L (e.g. (N, L, d, P) = (3, 3, 5, 6): Pd = 30 >= 27, rank 25) the text's
statement is false for every embedding and W_QK, one error that its record counts once
(errata invertibility.cap-below-n-to-the-l, witnessed by the claims positional-cap and
minimal-heads): a note says so, and the check is the cap's.

Proof sketch of the lower bound (what the certificate replaces): the entries of A are
analytic in (w_1, ..., w_P); det of an N^L x N^L minor is an analytic function that is
not identically zero (the note's expansion in exp(-w gap) argues this; its last step, written
with v_t in R^d, fails for d >= L, and with a scalar u_t per sequence it holds for every d, see the
errata; it bounds no number of heads), so it is nonzero for all but a null set of w, in particular
for generic distinct w_p. No w needs to be large: the certificate holds at w = 0.01 as at w = 100;
w -> oo is only the proof's device, and it makes A worse conditioned. Measured (explicit
embeddings, w_p = w p, minimal P, 150-digit SVD): sigma_min/sigma_max of A for
(N, L, d) = (2,3,2), (2,4,4), (3,3,4), (2,5,5), (2,6,6) is 1e-6, 1e-6, 1e-9, 1e-10, 1e-27 at
w = 1, 1e-9, 1e-7, 1e-10, 1e-15, 1e-14 at w = 0.1, 1e-12..1e-23 at w = 0.01 and 1e-9..1e-155
at w = 10; extra heads help a little ((2,4,4): 1e-7.3 at P = 4, 1e-5.6 at P = 8). At
N^L = 256 the ball determinant needs 128 bits at w = 0.1, 256 at w = 1, 768 at w = 3.
With d = N + L - 2 and the minimal P, log2 of the condition number of the N^L x N^L
minor (as Rump's right residual measures it) grows to ~190 (L = 2) and 350-400 (N = 2,
L = 10; N = 4, L = 5) at 1024 rows: Rump's test certifies those in one attempt at 256 and
448 bits (:func:`start_bits`; times per case in benchmarks/results/invertibility_certificate.md).

The .npz holds e, pos, W_QK (P x d x d), sequences (N^L x L, 0-based, the row order of A)
and A (float64), so the rank can be re-checked with other code. The certificate is for
the exact values: with ``embedding=explicit`` the transcendental c_i = 2^(-m_i)
exp(sqrt(p_i)) (:mod:`attnlab.papers.invertibility.embeddings`), with ``random`` the
float64 draws as stored.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from attnlab.analysis.certified_rank import DET_MAX, RankCertificate, certified_rank
from attnlab.checks import Bound, equals, info
from attnlab.config import (Config, check_bool, check_choice, check_int, check_number, check_seed, format_power, param,
                            power_exceeds)
from attnlab.errors import ConfigError
from attnlab.estimates import Estimate, svd_flops
from attnlab.papers.invertibility.anchors import THEOREM_1
from attnlab.papers.invertibility.embeddings import explicit_balls, explicit_embeddings, random_embeddings
from attnlab.papers.invertibility.matrix import (
    attention_matrix,
    attention_matrix_arb,
    class_count,
    default_w,
    duplicate_row_null_vectors,
    minimal_heads,
    permutation_classes,
    qk_matrices,
    rank_cap,
    sequences,
)
from attnlab.registry import Construction, ConstructionResult, register_construction

MAX_ROWS = 4096  # N^L the construction accepts (A is dense; the certificate is O(N^{3L}))
EMBEDDINGS = ("explicit", "random")


@dataclass(frozen=True)
class InvertibilityParams(Config):
    N: int = param(2, "number of tokens N")
    L: int = param(3, "sequence length L (>= 2)")
    d: int = param(2, "embedding dimension d")
    P: int | None = param(None, "number of single-head modules P (default: the fewest the proved rank cap allows, "
                                "max(ceil(N^L/d), ceil((N^L-1)/(N+L-2))))")
    embedding: str = param("explicit", "explicit (2^-m exp(sqrt(prime))) or random (U(0.5, 1.5) from seed)")
    w: float = param(0.1, "scale of the W_QK entries: w_p = w p (0.1: fewest bits to certify at N^L >= 256)")
    positions: bool = param(True, "add the positional embeddings pos_j (false: pos = 0)")
    seed: int = param(0, "seed of the random embeddings")
    certify: bool = param(True, "certify the rank with ball arithmetic")

    def validate(self) -> None:
        check_int("N", self.N, 1)
        check_int("L", self.L, 2)
        check_int("d", self.d, 1)
        if self.P is not None:
            check_int("P", self.P, 1)
        check_choice("embedding", self.embedding, EMBEDDINGS)
        check_number("w", self.w, 0.0, open_min=True)
        check_bool("positions", self.positions)
        check_bool("certify", self.certify)
        check_seed(self.seed)
        if power_exceeds(self.N, self.L, MAX_ROWS):
            raise ConfigError(f"N^L = {format_power(self.N, self.L)} rows exceeds {MAX_ROWS}; lower N or L")

    @property
    def heads(self) -> int:
        return self.P if self.P is not None else minimal_heads(self.N, self.L, self.d, self.positions)


@dataclass(frozen=True)
class Case:
    """One instance: e (N, d), pos (L, d), w (P,), W_QK (P, d, d), sequences (N^L, L), A (N^L, P d)."""

    params: InvertibilityParams
    e: np.ndarray
    pos: np.ndarray
    w: np.ndarray
    W_QK: np.ndarray
    sequences: np.ndarray
    A: np.ndarray

    def arb_matrix(self, prec: int):
        """A as an Arb ball matrix at ``prec`` bits (flint's working precision is set by the caller)."""
        p = self.params
        if p.embedding == "explicit":
            e, pos = explicit_balls(p.N, p.L, p.d)
            if not p.positions:
                import flint

                pos = [[flint.arb(0)] * p.d for _ in range(p.L)]
            return attention_matrix_arb(e, pos, self.w, self.sequences)
        return attention_matrix_arb(self.e, self.pos, self.w, self.sequences)


def build_case(params: InvertibilityParams) -> Case:
    """The embeddings, the proof's W_QK^p = w p E_11 and A in float64."""
    N, L, d, P = params.N, params.L, params.d, params.heads
    if params.embedding == "explicit":
        e, pos = explicit_embeddings(N, L, d)
    else:
        e, pos = random_embeddings(N, L, d, params.seed)
    if not params.positions:
        pos = np.zeros_like(pos)
    w = default_w(P, params.w)
    W = qk_matrices(w, d)
    seqs = sequences(N, L)
    return Case(params, e, pos, w, W, seqs, attention_matrix(e, pos, W, seqs))


def start_bits(rows: int, L: int | None = None, method: str = "inverse", P: int | None = None) -> int:
    """The first working precision for certifying an r x r minor of this construction
    (w = 0.1, explicit embeddings, minimal P, d = N + L - 2). A guess that only saves time:
    a miss costs a second attempt at the precision the residual asks for (at least 64 bits
    more), never a wrong certificate.

    method="inverse" (Rump's right residual ||I - B R||_1): 64 ceil((2.6 P + 60) / 64) bits
    for L >= 3 with P heads (r / 3 when P is not given) and 64 ceil((0.08 r + 112) / 64) for
    L = 2. The heads set the cost more than the rows: log2 of the condition number implied
    by the residual (prec + log2 delta; benchmarks/results/invertibility_certificate.md) is
    264 for N = 10, L = 3 (1000 rows, P = 91) but 353 and 402 at 1024 rows for N = 2, L = 10
    (P = 103) and N = 4, L = 5 (P = 147): 2.7 to 3.4 bits per head for L >= 3 from 343 to 1024
    rows, and 100 to 189 bits (3.5 to 7 per head, P = N) for L = 2 from 289 to 1024 rows.
    Both rules leave >= 16 bits above it on all 25 cases from 289 to 1024 rows.

    method="det" (a ball determinant, 128 < r <= 256): 64 ceil((0.4 r + 48) / 64) bits for
    L >= 3 and 64 ceil((0.15 r + 96) / 64) for L = 2, which certify every such case of the
    benchmark in one attempt (128 or 192 bits)."""
    if method == "det":
        return int(64 * math.ceil(((0.15 * rows + 96) if L == 2 else (0.4 * rows + 48)) / 64))
    if L == 2:
        return int(64 * math.ceil((0.08 * rows + 112) / 64))
    heads = rows / 3 if P is None else P
    return int(64 * math.ceil((2.6 * heads + 60) / 64))


def certify_case(case: Case, **kwargs) -> RankCertificate:
    """Certified rank of the case's exact A: the leading N^L columns when the cap is the full
    row rank; otherwise one row per permutation class (no positions) and a pivoted minor of
    the cap's size. Without positions the duplicate rows are exhibited as null vectors.

    kwargs go to :func:`attnlab.analysis.certified_rank.certified_rank`; by default
    method="auto" (a ball determinant up to 256 rows, Rump's test above, starting at
    :func:`start_bits` and raised as the residual asks, up to 8192 bits; a determinant of
    more than 128 rows also starts at :func:`start_bits` and doubles) and flint's thread
    count as set (``threads=2`` uses two cores)."""
    p = case.params
    P, T = len(case.w), len(case.sequences)
    cap = rank_cap(p.N, p.L, p.d, P, p.positions)
    method, r = kwargs.get("method", "auto"), min(cap, T)
    if "precisions" not in kwargs and (method == "inverse" or (method == "auto" and r > DET_MAX)):
        kwargs["precisions"] = (start_bits(r, p.L, "inverse", P), 8192)
    elif "precisions" not in kwargs and method in ("auto", "det") and r > 128:
        first = start_bits(r, p.L, "det")
        kwargs["precisions"] = tuple(first << k for k in range(8) if first << k <= 8192)
    left = None
    if not p.positions:
        classes = permutation_classes(case.sequences)
        left = duplicate_row_null_vectors(classes, T)
    if p.positions and cap == T and P * p.d >= T and p.d <= p.N + p.L - 2:
        kwargs.setdefault("rows", range(T))
        kwargs.setdefault("cols", range(T))
    else:
        kwargs.setdefault("size", cap)
    return certified_rank(case.arb_matrix, left_null=left, **kwargs)


RUMP_COST = 50  # Rump's test on an r x r minor: ~50 r^3 ball operations (approximate LU, R, B R), measured
DET_COST = 70  # a ball determinant of r x r: ~70 r^3 ball operations at r = 128..256, measured
EINSUM_SLOWDOWN = 12  # numpy's einsum without optimize= (C loops, no BLAS) against a BLAS product, measured
PIVOT_COST = 20  # one step of select_minor's elimination (indexing, abs, a ball comparison) in loop operations
BASE_BYTES = 8 * 2 ** 20  # what any build holds beside its arrays, measured (10 MiB more with flint)


def ball_bytes(prec: int) -> int:
    """Bytes of one Arb ball at ``prec`` bits: the 48-byte arb_struct, plus the mantissa's
    ceil(prec / 64) limbs and their heap header once it outgrows the two inline limbs (128 bits)."""
    return 48 + (0 if prec <= 128 else 8 * math.ceil(prec / 64) + 16)


def certificate_plan(params: InvertibilityParams) -> tuple[str, int, int, bool]:
    """(method, first working precision, minor size r, whether the leading rows and columns
    are the minor) that :func:`certify_case` uses for these parameters."""
    N, L, d, P, T = params.N, params.L, params.d, params.heads, params.N ** params.L
    cap = rank_cap(N, L, d, P, params.positions)
    r = min(cap, T)
    method = "det" if r <= DET_MAX else "inverse"
    if method == "inverse":
        prec = start_bits(r, L, "inverse", P)
    else:
        prec = start_bits(r, L, "det") if r > 128 else 64
    leading = params.positions and cap == T and P * d >= T and d <= N + L - 2
    return method, prec, r, leading


def estimate(params: InvertibilityParams) -> Estimate:
    """Peak memory and work of :func:`build`, from N, L, d, P: T = N^L rows, c = P d columns,
    K = L N^2 pieces, r the certified minor, b = :func:`ball_bytes` of its first precision
    (:func:`certificate_plan`; a second attempt, when the residual asks for more bits, is not
    counted).

    memory  BASE_BYTES + 8 (T L d + P d^2                      X and W_QK in float64
                            + max(4 T c, T c + 3 P T L))       A and its SVD, or the scores
            certify: + 10 MiB + b (K (c + P) + T K + 2 T (c + P))   flint; A in ball arithmetic
                     + Rump's test: 9 r^2 b + r^2 (b + 40)     B, R, B R, I - B R, ...,
                                                               the column sums' Python balls
                     | a determinant: 4 r^2 b
                     + without the leading minor: 2 T c (b + 24)   select_minor's Python copy
    lapack  3 svd_flops(T, c)                  rank and sigma ratio of A, and of its midpoint
    gemm    EINSUM_SLOWDOWN (3 T P L d^2 + 2 P T L d)    the scores and A (einsum, no BLAS)
    arb     RUMP_COST r^3 | DET_COST r^3 + 2 T K (c + P)   the certificate; the pieces' sums
    python  2 K P (d + 1) + T c                the pieces and the division, one ball at a time
            + r^2 for Rump's column sums
            + PIVOT_COST 2 (T c r - (T + c) r^2 / 2 + r^3 / 3)   select_minor's elimination
                                                                  (no leading minor)
    calls   600 with the certificate (flint's set-up, the embeddings' balls), else 50

    Measured against this estimate (one BLAS thread; 16 to 729 rows): peak memory within
    1.5x, time within 3x (the benchmark's 1024-row cases take 45 to 52 s where this
    estimate says RUMP_COST r^3 / R_arb).
    """
    N, L, d, P, T = params.N, params.L, params.d, params.heads, params.N ** params.L
    c = P * d
    peak = BASE_BYTES + 8 * (T * L * d + P * d * d + max(4 * T * c, T * c + 3 * P * T * L))
    lapack = 3 * svd_flops(T, c)
    gemm = EINSUM_SLOWDOWN * (3.0 * T * P * L * d * d + 2.0 * P * T * L * d)
    arb = python = 0.0
    what = (f"W_QK ({P} x {d} x {d} float64)" if P * d * d > T * L * d + max(4 * T * c, T * c + 3 * P * T * L)
            else f"A ({T} x {c} float64) and its SVD")
    if params.certify:
        method, prec, r, leading = certificate_plan(params)
        balls, arb, python = certificate_work(N, L, d, P, method, prec, r, leading)
        if balls > peak:
            what = (f"A ({T} x {c}) in {prec}-bit balls and the {r} x {r} minor's certificate "
                    f"({'Rump' if method == 'inverse' else 'determinant'})")
        peak += balls
    return Estimate(peak, what, gemm=gemm, lapack=lapack, arb=arb, python=python,
                    calls=600 if params.certify else 50,
                    lower=("L", "N", "P", "d"))


def certificate_work(N: int, L: int, d: int, P: int, method: str, prec: int, r: int,
                     leading: bool) -> tuple[float, float, float]:
    """(bytes, arb operations, interpreted operations) of certifying an r x r minor of A
    (N^L x P d) by ``method`` ("inverse": Rump's test, "det": a ball determinant) at ``prec``
    bits, A built in ball arithmetic from its L N^2 pieces; ``leading``: the minor is given
    (no select_minor). The certificate's terms of :func:`estimate`."""
    T, c, K = N ** L, P * d, L * N * N
    b = ball_bytes(prec)
    balls = 10 * 2 ** 20 + b * (K * (c + P) + T * K + 2 * T * (c + P))
    python = 0.0
    if method == "inverse":
        balls += 9 * r * r * b + r * r * (b + 40)
        arb = RUMP_COST * float(r) ** 3
        python = float(r) ** 2
    else:
        balls += 4 * r * r * b
        arb = DET_COST * float(r) ** 3
    if not leading:
        balls += 2 * T * c * (b + 24)
        python += PIVOT_COST * 2.0 * (T * c * r - (T + c) * r * r / 2 + r ** 3 / 3)
    arb += 2.0 * T * K * (c + P)
    python += 2.0 * K * P * (d + 1) + T * c
    return balls, arb, python


def build(params: InvertibilityParams) -> ConstructionResult:
    """The case, its float64 spectrum and its certified rank, judged as the module docstring says."""
    case = build_case(params)
    N, L, d, P = params.N, params.L, params.d, len(case.w)
    T = N ** L
    cap = rank_cap(N, L, d, P, params.positions)
    heads_cap = 1 + P * (N + L - 2)
    notes = ["the note's 'Pd >= N^k' is read as Pd >= N^L"]
    if params.positions and d > N + L - 2:
        notes.append(f"d = {d} > N + L - 2 = {N + L - 2}: rank A <= 1 + P (N + L - 2) = {heads_cap} for every "
                     "embedding and W_QK" + (f", below N^L = {T}: A cannot be invertible although Pd = {P * d} >= "
                                             "N^L (Theorem 1 as printed differs here: errata "
                                             "invertibility.cap-below-n-to-the-l, counted by the claims "
                                             "positional-cap and minimal-heads)" if heads_cap < T <= P * d else ""))
    if not params.positions:
        notes.append(f"no positions: rows equal within {class_count(N, L)} permutation classes; Theorem 1 "
                     "(which needs positions) is not judged")
    fewest = minimal_heads(N, L, d, params.positions)
    target = "rank N^L" if params.positions else "the class count"
    text_says = (" (Theorem 1 states it here, P = ceil(N^L/d), but its proof does not bound the number of heads: "
                 "errata invertibility.rows-span)" if params.positions and fewest == math.ceil(T / d) else "")
    notes.append(f"minimal_P = {fewest}: fewer heads cannot reach {target} (proved: rank_cap); that {fewest} heads "
                 f"suffice is a conjecture{text_says}, certified only in the cases the claims list")
    values = dict(N=N, L=L, d=d, P=P, rows=T, cols=P * d, minimal_P=fewest,
                  rank_cap=cap, w_min=float(case.w.min()), w_max=float(case.w.max()))
    arrays = dict(e=case.e, pos=case.pos, W_QK=case.W_QK, sequences=case.sequences, A=case.A)
    s = np.linalg.svd(case.A, compute_uv=False)
    values.update(float_rank=int(np.linalg.matrix_rank(case.A)), float_sigma_ratio=float(s[-1] / s[0]))
    if not params.certify:
        return ConstructionResult(arrays, values, info("float64 rank of A (not certified: certify=false)",
                                                       values["float_rank"], where="Theorem 1"), notes)
    cert = certify_case(case)
    upper = min(cert.upper, cap)
    values.update(certified_lower=cert.lower, certified_upper=upper, prec_bits=cert.prec,
                  det_margin=cert.margin, certify_seconds=cert.seconds,
                  log10_det=None if math.isnan(cert.log10_det) else cert.log10_det,
                  certify_method=cert.method)
    pinned = cert.lower == upper
    proof = ("ball determinant excludes 0" if cert.method == "det" else
             f"||I - B R||_1 <= {cert.residual:.3g} < 1 (Rump)")
    rank = cert.lower if pinned else Bound(cert.lower, upper, "the certificate did not pin the rank")
    cap_text = ("min(N^L, Pd, 1 + P (N + L - 2))" if params.positions else "the no-positions cap") + f" = {cap}"
    how = (f"an {cert.lower} x {cert.lower} minor's {proof} at {cert.prec} bits (margin {cert.margin:.3g}); "
           f"rank cap {cap_text}" if pinned else f"certified rank >= {cert.lower}, rank cap {cap_text}")
    if params.positions and P * d >= T and heads_cap >= T:
        # Theorem 1 applies: Pd >= N^L (its hypothesis) and the cap allows rank N^L; the text states rank N^L
        check = equals(rank, T, how, quantity="certified rank of A (Theorem 1: N^L when Pd >= N^L)",
                       role="construction", where="Theorem 1", paper_value="A invertible (rank N^L)",
                       anchor=THEOREM_1, falsifier="a certified rank below N^L")
    else:
        # Pd < N^L or no positions (the text says nothing), or the cap 1 + P (N+L-2) < N^L (the text's statement
        # fails for every choice: one error, its record's): attnlab's conjecture that the rank reaches its cap
        why = ("no positions: Theorem 1 (which needs them) does not apply" if not params.positions else
               f"Pd = {P * d} < N^L = {T}: Theorem 1 does not apply" if P * d < T else
               f"1 + P (N + L - 2) = {heads_cap} < N^L = {T}: no embedding or W_QK reaches N^L, so Theorem 1 as "
               "printed does not hold here (errata invertibility.cap-below-n-to-the-l, counted once by its claims)")
        check = equals(rank, cap, f"{how}; {why}", role="own", where="Theorem 1 (rank_cap)",
                       quantity="certified rank of A = its rank cap (attnlab's conjecture)")
    return ConstructionResult(arrays, values, check, notes)


register_construction(Construction(
    name="invertibility",
    paper="invertibility",
    description="Theorem 1: embeddings and W_QK^p = w_p E_11 with a certified full-rank attention matrix A",
    params_cls=InvertibilityParams,
    build=build,
    estimate=estimate,
    anchors=(THEOREM_1,),
))

__all__ = ["Case", "InvertibilityParams", "build", "build_case", "certificate_plan", "certificate_work", "certify_case",
           "estimate", "start_bits"]
