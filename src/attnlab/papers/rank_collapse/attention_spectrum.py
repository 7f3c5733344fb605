"""The singular-value spectrum of real attention maps, and Theorem 2.3's random projections on them.

Notes §2.3, Theorem 2.3 (Linformer): for an attention matrix P (n x n) and a random R (k' x n), P R^T R w
approximates P w to a relative error eps with k' = Theta(log n / eps^2). Measured on all-MiniLM-L6-v2's maps
(:func:`measure_n`: the spectrum statistics of every map, :func:`spectrum_stats`, and per map the median error
of P R^T R w beside the truncated SVD's on w a column of the head's values) and on SmolLM2-135M-Instruct's
causal maps (:func:`measure_smollm2`: the spectrum alone, one text and one layer at a time). Per map: k_90, k_99
(fewest singular values reaching 90% / 99% of sum sigma, and of sum sigma^2, the energy), the stable rank
||P||_F^2 / ||P||_2^2 and the numerical rank #{sigma_i > n eps sigma_1}; float64 throughout.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnlab.analysis.approximation import projection_action_errors
from attnlab.papers.rank_collapse.stacks import build_model, long_texts, run_model, smollm2_attention_maps, text_batch
from attnlab.stored import Stored


def k_reaching(c: torch.Tensor, level: float) -> torch.Tensor:
    """Fewest leading entries whose share c (cumulative, (..., n), ending at 1) reaches ``level``."""
    return (c < level - 1e-12).sum(-1) + 1


@dataclass(frozen=True)
class SpectrumStats:
    """Spectrum statistics of m attention matrices P (m = the product of P's leading dimensions)."""

    k90: torch.Tensor  # (m,) float64: fewest sigma_i with sum_{i<=k} sigma_i >= 0.9 sum_i sigma_i
    k99: torch.Tensor  # (m,) float64: the same at 99%
    k90_energy: torch.Tensor  # (m,) float64: fewest sigma_i with sum_{i<=k} sigma_i^2 >= 0.9 sum_i sigma_i^2
    k99_energy: torch.Tensor  # (m,) float64: the same at 99%
    stable_rank: torch.Tensor  # (m,) float64: ||P||_F^2 / ||P||_2^2
    numerical_rank: torch.Tensor  # (m,) float64: #{sigma_i > n eps sigma_1}, eps = 2^-52
    cumulative: list[float]  # (n,): mean over the m matrices of sum_{i<=k} sigma_i / sum_i sigma_i

    @classmethod
    def concat(cls, stats: list[SpectrumStats]) -> SpectrumStats:
        """The statistics of all matrices of ``stats`` (same n): per-matrix values joined, the mean
        cumulative spectrum averaged over the parts."""
        cat = lambda part: torch.cat([part(s) for s in stats])  # noqa: E731
        return cls(k90=cat(lambda s: s.k90), k99=cat(lambda s: s.k99), k90_energy=cat(lambda s: s.k90_energy),
                   k99_energy=cat(lambda s: s.k99_energy), stable_rank=cat(lambda s: s.stable_rank),
                   numerical_rank=cat(lambda s: s.numerical_rank),
                   cumulative=torch.tensor([s.cumulative for s in stats], dtype=torch.float64).mean(0).tolist())


@dataclass(frozen=True)
class SpectrumRow(Stored):
    """One model's attention spectrum at one n: medians over its m matrices unless said otherwise."""

    n: int  # sequence length n (tokens; P is n x n)
    matrices: int  # m, the attention matrices measured (layers x heads x texts)
    k90: float  # median k_90 of sigma
    k99: float  # median k_99 of sigma
    k90_energy: float  # median k_90 of sigma^2
    k99_energy: float  # median k_99 of sigma^2
    stable_rank: float  # median ||P||_F^2 / ||P||_2^2
    numerical_rank: float  # median #{sigma_i > n eps sigma_1}
    k90_q90: float  # 90th percentile of k_90 over the matrices
    k99_max: float  # largest k_99 over the matrices
    full_rank_share: float  # share of the matrices with numerical rank n
    cumulative: list[float]  # (n,): mean normalised cumulative spectrum sum_{i<=k} sigma_i / sum_i sigma_i


@dataclass(frozen=True)
class MiniLMRow(SpectrumRow):
    """MiniLM's spectrum at one n with Theorem 2.3's errors on w = one column of the head's values."""

    projection_error: list[float]  # (len k_values,): median ||P R^T R w - P w|| / ||P w|| per k'
    svd_error: list[float]  # (len k_values,): median ||P_k' w - P w|| / ||P w||, P_k' the truncated SVD


@dataclass(frozen=True)
class SmolLM2Row(SpectrumRow):
    """SmolLM2's spectrum at one n (causal maps; no projection errors)."""

    k99_energy_max: float  # largest k_99 of sigma^2 over the matrices


def spectrum_stats(P: torch.Tensor) -> SpectrumStats:
    """Per matrix of P (..., n, n): k_90, k_99 (sigma and sigma^2), stable and numerical rank; and the
    mean normalised cumulative spectrum (n,)."""
    s = torch.linalg.svdvals(P.to(torch.float64))  # (..., n)
    n = s.shape[-1]
    cum = s.cumsum(-1) / s.sum(-1, keepdim=True)
    cum2 = (s**2).cumsum(-1) / (s**2).sum(-1, keepdim=True)
    tol = n * torch.finfo(torch.float64).eps * s[..., :1]
    flat = lambda t: t.reshape(-1).to(torch.float64)  # noqa: E731
    return SpectrumStats(k90=flat(k_reaching(cum, 0.9)), k99=flat(k_reaching(cum, 0.99)),
                         k90_energy=flat(k_reaching(cum2, 0.9)), k99_energy=flat(k_reaching(cum2, 0.99)),
                         stable_rank=flat((s**2).sum(-1) / s[..., 0] ** 2), numerical_rank=flat((s > tol).sum(-1)),
                         cumulative=cum.reshape(-1, n).mean(0).tolist())


def median(t: torch.Tensor) -> float:
    """The median of a tensor's entries, as a float."""
    return float(t.median())


def full_rank_share(st: SpectrumStats, n: int) -> float:
    """Share of the matrices whose numerical rank is n."""
    return float((st.numerical_rank == n).to(torch.float64).mean())


def measure_n(n: int, texts: int, seed: int, k_values: tuple[int, ...], draws: int, g: torch.Generator,
              g_device: torch.Generator, device: str = "cpu") -> MiniLMRow:
    """Pretrained MiniLM's row at one n, on ``texts`` help topics ``seed`` picks: the spectrum of every map and,
    per map and k' of ``k_values``, the median over ``draws`` draws of R of Theorem 2.3's error on w, one
    column of the head's values, beside the truncated SVD's. ``g`` (CPU) picks the value columns,
    ``g_device`` (on ``device``) draws every R."""
    batch = text_batch(long_texts(texts, n, seed), n, device)
    model = build_model("pretrained", seed, device)
    out = run_model("pretrained", model, batch)
    P = torch.stack(out.attentions)  # (L, B, H, n, n)
    st = spectrum_stats(P)
    errs, svd_errs = [], []
    ks = list(k_values)
    U, S, Vh = torch.linalg.svd(P, full_matrices=False)
    for l, block in enumerate(model.blocks):
        with torch.no_grad():
            V = torch.einsum("bnd,hdv->bhnv", out.hidden_states[l], block.attn.W_V) + block.attn.b_V[:, None, :]
        for b in range(P.shape[1]):
            for h in range(P.shape[2]):
                j = int(torch.randint(V.shape[-1], (1,), generator=g))
                w = V[b, h, :, j]
                e = projection_action_errors(P[l, b, h], w, ks, draws=draws, generator=g_device)  # (k, draws)
                errs.append(e.median(-1).values)
                Pw = P[l, b, h] @ w
                Pk_w = [U[l, b, h, :, :k] @ (S[l, b, h, :k] * (Vh[l, b, h, :k] @ w)) for k in ks]  # P_k w
                svd_errs.append(torch.stack([(x - Pw).norm() / Pw.norm() for x in Pk_w]))
    E, Es = torch.stack(errs), torch.stack(svd_errs)  # (matrices, k)
    return MiniLMRow(n=n, matrices=int(E.shape[0]), k90=median(st.k90), k99=median(st.k99),
                     k90_energy=median(st.k90_energy), k99_energy=median(st.k99_energy),
                     stable_rank=median(st.stable_rank), numerical_rank=median(st.numerical_rank),
                     k90_q90=float(st.k90.quantile(0.9)), k99_max=float(st.k99.max()),
                     full_rank_share=full_rank_share(st, n), cumulative=st.cumulative,
                     projection_error=E.median(0).values.tolist(), svd_error=Es.median(0).values.tolist())


def measure_smollm2(n: int, texts: int, seed: int, layers: tuple[int, ...], device: str = "cpu") -> SmolLM2Row:
    """Spectrum statistics of SmolLM2's maps at one n, on ``texts`` help topics ``seed`` picks: every head of
    ``layers``, each text run alone and each layer's maps reduced to numbers before the next layer is computed."""
    stats = []
    for text in long_texts(texts, n, seed, model="smollm2"):
        batch = text_batch([text], n, device, model="smollm2")
        for _, P in smollm2_attention_maps(batch, layers, device):
            stats.append(spectrum_stats(P))
            del P
    st = SpectrumStats.concat(stats)
    return SmolLM2Row(n=n, matrices=int(st.k90.numel()), k90=median(st.k90), k99=median(st.k99),
                      k90_energy=median(st.k90_energy), k99_energy=median(st.k99_energy),
                      stable_rank=median(st.stable_rank), numerical_rank=median(st.numerical_rank),
                      k90_q90=float(st.k90.quantile(0.9)), k99_max=float(st.k99.max()),
                      k99_energy_max=float(st.k99_energy.max()), full_rank_share=full_rank_share(st, n),
                      cumulative=st.cumulative)


def k_needed(row: MiniLMRow, ks: list[int], eps: float) -> int | None:
    """Smallest k' whose median Theorem 2.3 error is <= eps (None: none of ``ks``)."""
    return next((k for k, e in zip(ks, row.projection_error) if e <= eps), None)
