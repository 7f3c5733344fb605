"""The ids that the paper's rows name: ledger entries they check (``ledger.toml``, anchors) and
errata records they evidence (:mod:`attnlab.papers.invertibility.errata`).

A row anchored to an entry says that the text states what it measures; a differs row names
the one record of the error it witnesses, so that rows of one error count as one finding.
"""

THEOREM_1 = "invertibility.theorem-1"
"""Theorem 1: 'For Pd >= N^k, there exists matrices W_QK^p and embeddings ... such that A is invertible.'"""
PROOF_HYPERPLANE = "invertibility.proof-hyperplane"
"""'take (v_t) such that sum_t v_t^T f_{x(t,j)} = 0 as functional equality' (v_t in R^d)"""
PROOF_TAYLOR = "invertibility.proof-taylor"
"""the Taylor display 1/(1 + x) = 1 + sum_{j>=1} x^j"""
PROOF_FINAL_DETERMINANT = "invertibility.proof-final-determinant"
"""'The matrix of this system has non-zero determinant by property (2), so the system solves for v_t = 0.'"""

CAP = "invertibility.cap-below-n-to-the-l"
"""the errata record of the rank cap 1 + P (N + L - 2) < N^L (Theorem 1 needs it >= N^L)"""
HYPERPLANE_VT = "invertibility.hyperplane-vt"
"""the errata record of the hyperplane written with v_t in R^d"""
TAYLOR_SIGN = "invertibility.taylor-sign"
"""the errata record of the Taylor series' missing signs"""
FINAL_DETERMINANT = "invertibility.final-determinant"
"""the errata record of the final d x d system (singular for d >= L with v_t in R^d)"""

__all__ = ["CAP", "FINAL_DETERMINANT", "HYPERPLANE_VT", "PROOF_FINAL_DETERMINANT", "PROOF_HYPERPLANE", "PROOF_TAYLOR",
           "TAYLOR_SIGN", "THEOREM_1"]
