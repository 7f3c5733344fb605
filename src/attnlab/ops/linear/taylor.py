"""The first-order Taylor form of linear attention in closed form, math text §2.1.2.

With e^{q·k} ~ 1 + q^·k^ (q^ = q/|q|_2, k^ = k/|k|_2, so 1 + q^·k^ in [0, 2]),
eq. (12) becomes

    V'_i = sum_j (1 + q^_i·k^_j) V_j / sum_j (1 + q^_i·k^_j)
         = (sum_j V_j + q^_i^T sum_j k^_j V_j^T) / (n + q^_i^T sum_j k^_j)          (T)

The text prints two versions of (T), both with a misplaced sum:
* the first has sum_j twice in the numerator, sum_j (1 + q^_i^T sum_j k^_j) V_j, which
  is (1 + q^_i·sum_j k^_j) sum_j V_j: every value gets the same weight;
* the "simplified" one writes the numerator as sum_j V_j + q^_i^T k^_j V_j with the
  second term outside the sum (j unbound); it must be q^_i^T sum_j k^_j V_j^T.
Its denominator n + q^_i^T sum_j k^_j is right. :func:`taylor_closed_form` is (T);
:func:`taylor_as_printed` is the first printed version, for measuring the difference.
"""

from __future__ import annotations

from torch import Tensor


def _unit(x: Tensor) -> Tensor:
    return x / x.norm(dim=-1, keepdim=True)


def taylor_closed_form(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    """(T): q (..., n_q, d), k (..., n, d), v (..., n, d_v) -> (..., n_q, d_v), O(n d d_v)."""
    qh, kh = _unit(q), _unit(k)
    n = k.shape[-2]
    num = v.sum(-2, keepdim=True) + qh @ (kh.transpose(-2, -1) @ v)  # (..., n_q, d_v)
    den = n + qh @ kh.sum(-2).unsqueeze(-1)  # (..., n_q, 1)
    return num / den


def taylor_as_printed(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    """The text's first display: sum_j (1 + q^_i^T sum_j k^_j) V_j / sum_j (1 + q^_i^T k^_j)."""
    qh, kh = _unit(q), _unit(k)
    n = k.shape[-2]
    s = qh @ kh.sum(-2).unsqueeze(-1)  # q^_i^T sum_j k^_j, (..., n_q, 1)
    return (1 + s) * v.sum(-2, keepdim=True) / (n + s)
