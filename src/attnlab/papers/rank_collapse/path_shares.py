"""How the output of a network with skips splits over path lengths: the measurements of rank-collapse.path-lengths.

Notes §2.1, remark after Theorem 2.1: with skip connections a SAN is a sum over (H+1)^L paths, of which
C(L, k) H^k have length k (:func:`count_shares`). :func:`exact_stack` decomposes one random skip SAN into
its length-k terms S_k, by the recursion and by enumerating every path; :func:`minilm_linearised` does the
same for all-MiniLM-L6-v2 reduced to attention with skips (its maps held at the full model's values,
LayerNorm and MLP dropped); :func:`path_products` samples Dong et al.'s products of maps along a path, and
:func:`bert_base_products` takes them on BERT-base at random initialisation (their control). Two shares per
length (:func:`shares`): ||S_k||_F / sum_j ||S_j||_F and <S_k, Y - 1 b^T>_F / ||Y - 1 b^T||_F^2.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import torch

from attnlab.analysis.path_decomposition import (SANLayer, accumulated_bias, path_length_counts,
                                                 path_length_terms, path_term, paths, random_san, san_forward)
from attnlab.analysis.residuals import relative_residual
from attnlab.estimates import Estimate
from attnlab.papers.rank_collapse import bert_base
from attnlab.papers.rank_collapse.sizes import F64, TORCH_OP, paths_count
from attnlab.papers.rank_collapse.stacks import build_model, long_texts, run_model, text_batch
from attnlab.stored import Stored

ARCHITECTURES = {"BERT-base (L=12, H=12)": (12, 12), "all-MiniLM-L6-v2 (L=6, H=12)": (6, 12),
                 "BERT-large (L=24, H=16)": (24, 16), "DeiT-Tiny (L=12, H=3)": (12, 3)}


def count_shares(L: int, H: int) -> list[float]:
    """C(L,k) H^k / (H+1)^L for k = 0..L, from exact fractions."""
    total = (H + 1) ** L
    return [float(Fraction(c, total)) for c in path_length_counts(H, L)]


@dataclass(frozen=True)
class PathShares:
    """How the output Y (bias term removed) splits over path lengths k = 0..L."""

    norm_share: list[float]  # (L + 1,): ||S_k||_F / sum_j ||S_j||_F
    signed_share: list[float]  # (L + 1,): <S_k, Y>_F / ||Y||_F^2 (sums to 1 for an exact decomposition)


@dataclass(frozen=True)
class ExactStack(Stored):
    """Section 1 of the module docstring: one random skip SAN of L layers of H heads, every path enumerated."""

    L: int  # layers
    H: int  # heads per layer
    norm_share: list[float]  # (L + 1,): ||S_k||_F / sum_j ||S_j||_F
    signed_share: list[float]  # (L + 1,): <S_k, Y - 1 b^T>_F / ||Y - 1 b^T||_F^2
    count_share: list[float]  # (L + 1,): C(L,k) H^k / (H+1)^L, the share of paths of length k
    recursion_vs_enumeration: float  # max |S_k (recursion) - S_k (enumeration)| / max |Y|
    sum_vs_output: float  # max |sum_k S_k - (Y - 1 b^T)| / max |Y|
    residual_by_length: list[float]  # (L + 1,): ||res S_k|| / ||S_k|| (token mean, 1,inf)


@dataclass(frozen=True)
class ProductResiduals(Stored):
    """Relative residual ||M - rank1(M)||_{1,inf} / ||M||_{1,inf} of sampled path products M at one depth k."""

    median: float  # median over the sampled paths
    q25: float  # 25th percentile
    q75: float  # 75th percentile
    min: float  # smallest
    max: float  # largest


@dataclass(frozen=True)
class LinearisedMiniLM(Stored):
    """Sections 2 and 3 of the module docstring: all-MiniLM-L6-v2 reduced to attention with skips."""

    L: int  # layers
    H: int  # heads per layer
    norm_share: list[float]  # (L + 1,): ||S_k||_F / sum_j ||S_j||_F, mean over texts
    signed_share: list[float]  # (L + 1,): <S_k, Y - 1 b^T>_F / ||Y - 1 b^T||_F^2, mean over texts
    count_share: list[float]  # (L + 1,): C(L,k) H^k / (H+1)^L
    residual_by_length: list[float]  # (L + 1,): relative residual of S_k (token mean), mean over texts
    linear_vs_paths: float  # max |sum_k S_k - (Y - 1 b^T)| / max |Y|
    products: dict[int, ProductResiduals]  # depth k = 1..L -> residuals of the products of k maps


def shares(S: torch.Tensor, Y: torch.Tensor) -> PathShares:
    """Norm and signed shares of S (L+1, ..., n, d) in Y (..., n, d) (Y without its bias term)."""
    norms = torch.stack([s.norm() for s in S])
    signed = torch.stack([(s * Y).sum() for s in S]) / (Y * Y).sum()
    return PathShares(norm_share=(norms / norms.sum()).tolist(), signed_share=signed.tolist())


def mean_share(shares: list[list[float]]) -> list[float]:
    """Entry-wise mean of equally long share vectors."""
    return [sum(s[k] for s in shares) / len(shares) for k in range(len(shares[0]))]


def exact_stack(L: int, H: int, d_model: int, tokens: int, g: torch.Generator, device: str = "cpu") -> ExactStack:
    """One random skip SAN of L layers of H heads (width d_model, d_h = d_v = max(1, d_model // H)) on a
    Gaussian input of ``tokens`` x d_model, both drawn from ``g``: its length-k terms by the recursion and by
    enumerating all (H+1)^L paths, their shares and their residuals."""
    layers = random_san(L, H, d_model, max(1, d_model // H), max(1, d_model // H), g)
    layers = [SANLayer(*(t.to(device) if t is not None else None for t in (
        ly.W_Q, ly.W_K, ly.W_V, ly.W_O, ly.b_Q, ly.b_K, ly.b_V, ly.b_O))) for ly in layers]
    X = torch.randn(tokens, d_model, generator=g, dtype=torch.float64).to(device)
    Y, P = san_forward(X, layers, skip=True)
    S = path_length_terms(X, P, [ly.path_weights() for ly in layers])
    enum = torch.zeros_like(S)
    for p in paths(H, L, skip=True):
        enum[sum(h != H for h in p)] += path_term(X, P, layers, p)
    scale = Y.abs().max()
    Yb = Y - accumulated_bias(layers, skip=True)
    split = shares(S, Yb)
    return ExactStack(L=L, H=H, norm_share=split.norm_share, signed_share=split.signed_share,
                      count_share=count_shares(L, H),
                      recursion_vs_enumeration=float((S - enum).abs().max() / scale),
                      sum_vs_output=float((S.sum(0) - Yb).abs().max() / scale),
                      residual_by_length=relative_residual(S, "mean").tolist())


def stack_estimate(L: int, H: int, d: int, n: int, lower: tuple[str, ...] = ()) -> Estimate:
    """What :func:`exact_stack` needs for a random skip SAN of L layers of H heads, width d, on n
    tokens, float64 (:meth:`~attnlab.papers.rank_collapse.experiments.path_lengths.PathLengthsConfig.estimate`): 8 (4 L H d d_h + 2 L H d^2 + L H n^2
    + H n (n + d) + 4 (L + 1) n d) bytes, d_h = max(1, d // H); the (H + 1)^L paths counted in floats."""
    dh, count = max(1, d // H), paths_count(L, H)
    L, H, d, n = float(L), float(H), float(d), float(n)  # floats throughout: any size is quick
    peak = F64 * (4 * L * H * d * dh + 2 * L * H * d * d + L * H * n * n + H * n * (n + d) + 4 * (L + 1) * n * d)
    work = {"gemm": count * L * (2 * H * d * d * dh + 2 * n * n * d + 2 * n * d * d)
            + L * L * H * (2 * n * n * d + 2 * n * d * d),
            "traffic": F64 * count * L * 2 * n * d, "calls": TORCH_OP * (count * (3 * L + 3) + 10 * L * L)}
    return Estimate(peak, f"the stack {L:.0f}:{H:.0f} (d = {d:.0f}, n = {n:.0f}): its {L:.0f} x {H:.0f} path "
                          f"weights of {d:.0f} x {d:.0f} and maps of {n:.0f} x {n:.0f}, float64", **work, lower=lower)


def minilm_linearised(texts: int, tokens: int, seed: int, path_samples: int, device: str = "cpu") -> LinearisedMiniLM:
    """Pretrained all-MiniLM-L6-v2 on ``texts`` help topics of ``tokens`` tokens (``seed`` picks them), its maps
    recorded in one pass of the full model and held fixed, reduced to attention with skips: the path shares of
    that linear network, and ``path_samples`` path products per depth (:func:`path_products`)."""
    batch = text_batch(long_texts(texts, tokens, seed), tokens, device)
    model = build_model("pretrained", seed, device)
    out = run_model("pretrained", model, batch)  # the full model, as trained
    layers = [SANLayer(*(None if t is None else t.detach() for t in (
        b.attn.W_Q, b.attn.W_K, b.attn.W_V, b.attn.W_O, b.attn.b_Q, b.attn.b_K, b.attn.b_V, b.attn.b_O)))
        for b in model.blocks]
    W = [ly.path_weights() for ly in layers]
    X0, P = batch.X0, out.attentions  # (B, n, d), each (B, H, n, n)
    Y = X0
    for Pl, Wl, ly in zip(P, W, layers):  # the linearised network, directly
        Y = Y + torch.einsum("bhij,bjd,hde->bie", Pl, Y, Wl) + ly.bias()
    S = path_length_terms(X0, P, W)  # (L+1, B, n, d)
    Yb = Y - accumulated_bias(layers, skip=True)
    H, L = layers[0].n_heads, len(layers)
    per_text = [shares(S[:, b], Yb[b]) for b in range(S.shape[1])]
    res_by_length = relative_residual(S, "mean").mean(-1).tolist()  # (L+1,) mean over texts
    products = path_products(P, path_samples, torch.Generator().manual_seed(seed))
    return LinearisedMiniLM(L=L, H=H, norm_share=mean_share([s.norm_share for s in per_text]),
                            signed_share=mean_share([s.signed_share for s in per_text]),
                            count_share=count_shares(L, H), residual_by_length=res_by_length,
                            linear_vs_paths=float((S.sum(0) - Yb).abs().max() / Y.abs().max()), products=products)


def path_products(P: list[torch.Tensor], samples: int, g: torch.Generator) -> dict[int, ProductResiduals]:
    """Dong et al.'s path products (module docstring, 3.) of the maps P (L tensors (B, H, n, n)): at each
    depth k = 1..L, ``samples`` paths l_1 < ... < l_k with one head each on a random text, and the relative
    residual (rank-one SVD) of P_{l_k,h_k} ... P_{l_1,h_1}; the quartiles of each depth."""
    L, (B, H, n, _) = len(P), P[0].shape
    products = {}
    for depth in range(1, L + 1):
        vals = []
        for _ in range(samples):
            chosen = sorted(torch.randperm(L, generator=g)[:depth].tolist())
            b = int(torch.randint(B, (1,), generator=g))
            M = torch.eye(n, dtype=P[0].dtype, device=P[0].device)
            for l in chosen:
                h = int(torch.randint(H, (1,), generator=g))
                M = P[l][b, h] @ M  # later layers act on the left
            vals.append(float(relative_residual(M, "svd")))
        vals.sort()
        q = lambda f: vals[min(len(vals) - 1, int(f * len(vals)))]  # noqa: E731
        products[depth] = ProductResiduals(median=q(0.5), q25=q(0.25), q75=q(0.75), min=vals[0], max=vals[-1])
    return products


def bert_base_products(texts: int, tokens: int, seed: int, path_samples: int,
                       device: str = "cpu") -> dict[str, dict[int, ProductResiduals]]:
    """The control of the path-product row: BERT-base at random initialisation (one draw, ``seed``, float32
    as Dong et al.), its maps in the full model on ``texts`` x ``tokens`` of the text and of random token ids
    (:mod:`~attnlab.papers.rank_collapse.bert_base`), and :func:`path_products` at depths 1..12."""
    model = bert_base.bert_base_random(seed, device=device)
    out = {}
    for kind in bert_base.INPUTS:
        ids = bert_base.input_ids(kind, texts, tokens, seed).to(device)
        with torch.no_grad():
            P = model(ids, token_type_ids=torch.zeros_like(ids), position_ids=torch.arange(ids.shape[-1])[None]
                      .expand_as(ids).to(device), output_attentions=True).attentions
        out[kind] = path_products(P, path_samples, torch.Generator().manual_seed(seed))
    return out


def mean_length(shares: list[float]) -> float:
    """The mean path length sum_k k s_k under the shares s_k."""
    return sum(k * s for k, s in enumerate(shares))


def architecture_counts() -> dict[str, list[float]]:
    """Name -> the share of paths of each length k = 0..L, for every network of :data:`ARCHITECTURES`."""
    return {name: count_shares(L, H) for name, (L, H) in ARCHITECTURES.items()}
