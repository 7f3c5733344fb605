"""Feature maps phi for linear (kernel) attention, math text §2.1.2 eq. (14).

    sim(q, k) = phi(q)^T phi(k)                                              (14)

    x: (..., n, d)  ->  phi(x): (..., n, m)

| name     | phi(x)                                         | m      | kernel phi(q)·phi(k)          |
|----------|------------------------------------------------|--------|-------------------------------|
| "elu+1"  | elu(x) + 1 > 0                                 | d      | (Katharopoulos et al. 2020)   |
| "relu"   | max(x, 0) >= 0                                 | d      |                               |
| "taylor" | [1, x/|x|]                                     | d + 1  | 1 + q^·k^ in [0, 2] (§2.1.2)  |
| "favor+" | exp(w_r·x' - |x'|²/2)/sqrt(m), x' = x d^(-1/4) | chosen | unbiased for exp(q·k/sqrt(d)) |

FAVOR+ (Performer, Choromanski et al. 2021): for w ~ N(0, I_d),
E[exp(w·(x'+y'))] = exp(|x'+y'|²/2), so E[phi(q)·phi(k)] = exp(q'·k') = exp(q·k/sqrt(d)).
With ``orthogonal=True`` the rows of W come in blocks of d mutually orthogonal
directions, each rescaled to the norm of an independent N(0, I_d) vector, so every
row is still marginally N(0, I_d) (the estimate stays unbiased) and the variance drops.

Stabilisation of FAVOR+ (``role``): the attention output is unchanged when every
query feature row is multiplied by its own constant, or every key feature by one
constant shared by all keys (both cancel between numerator and denominator). So
queries subtract their own row maximum of the exponent and keys the maximum over
all their keys and features, before exp. The shifts are detached: the output does
not depend on them, and detaching keeps a key's influence exactly zero where a mask
hides it. ``role=None`` gives the raw, unshifted features (the unbiased estimate).

Underflow: a feature whose exact value is non-zero but which rounds to exactly 0
(elu(x) + 1 for x below about -745 in float64 or -6 in bfloat16; exp of a very
negative exponent in FAVOR+) is counted by :meth:`FeatureMap.underflow_count`; linear
attention reports the fraction as ``diagnostics["feature_underflow"]``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from attnlab.errors import ConfigError
from attnlab.ops.tables import table_cache

FEATURE_MAPS = ("elu+1", "relu", "taylor", "favor+")


def gaussian_features(
    d: int,
    m: int,
    *,
    generator: torch.Generator,
    orthogonal: bool = True,
    batch: tuple[int, ...] = (),
) -> Tensor:
    """Random projection W: (*batch, m, d), every row marginally N(0, I_d), float64, on the
    generator's device (a CUDA generator draws on its GPU).

    orthogonal: rows come in blocks of min(d, m) orthonormal directions (QR of a
    Gaussian d x d matrix), each row then scaled by the norm of an independent
    N(0, I_d) draw (a chi_d sample), as in Performer's ORF.
    """
    if d < 1 or m < 1:
        raise ConfigError(f"random features need d >= 1 and m >= 1, got d={d}, m={m}")
    draw = dict(generator=generator, dtype=torch.float64, device=generator.device)
    if not orthogonal:
        return torch.randn(*batch, m, d, **draw)
    blocks = math.ceil(m / d)
    G = torch.randn(*batch, blocks, d, d, **draw)
    Qm, R = torch.linalg.qr(G)  # Qm: (*batch, blocks, d, d), orthonormal columns
    # Fix the sign ambiguity of QR so Qm is Haar distributed.
    Qm = Qm * torch.sign(torch.diagonal(R, dim1=-2, dim2=-1)).unsqueeze(-2)
    rows = Qm.transpose(-2, -1).reshape(*batch, blocks * d, d)[..., :m, :]  # (*batch, m, d)
    norms = torch.randn(*batch, m, d, **draw).norm(dim=-1)
    return rows * norms.unsqueeze(-1)


def favor_exponent(x: Tensor, W: Tensor) -> Tensor:
    """w_r·x' - |x'|²/2 with x' = x d^(-1/4): x (..., n, d), W (..., m, d) -> (..., n, m)."""
    xs = x * x.shape[-1] ** -0.25
    return xs @ W.transpose(-2, -1) - 0.5 * (xs * xs).sum(-1, keepdim=True)


def favor_features(x: Tensor, W: Tensor) -> Tensor:
    """Raw FAVOR+ features exp(w_r·x' - |x'|²/2) / sqrt(m), (..., n, m); unbiased, unshifted."""
    return torch.exp(favor_exponent(x, W)) / math.sqrt(W.shape[-2])


@dataclass(frozen=True, eq=False)
class FeatureMap:
    """phi: (..., n, d) -> (..., n, m). Build it with :func:`feature_map`.

    name:  one of FEATURE_MAPS
    W:     (m, d) float64 random projection (favor+ only)
    """

    name: str
    W: Tensor | None = None

    @property
    def positive(self) -> bool:
        """phi(x) > 0 entrywise in exact arithmetic, so every denominator is > 0."""
        return self.name in ("elu+1", "favor+")

    def num_features(self, d: int) -> int:
        """m for inputs with d features."""
        if self.W is not None:
            return self.W.shape[-2]
        return d + 1 if self.name == "taylor" else d

    def __call__(self, x: Tensor, role: str | None = None) -> Tensor:
        """phi(x), (..., n, m). role: "query", "key" or None (see module docstring)."""
        if self.name == "elu+1":
            return F.elu(x) + 1.0
        if self.name == "relu":
            return F.relu(x)
        if self.name == "taylor":
            norm = x.norm(dim=-1, keepdim=True).clamp_min(torch.finfo(x.dtype).tiny)
            return torch.cat([torch.ones_like(x[..., :1]), x / norm], dim=-1)  # (..., n, d+1)
        return self._favor(x, role)

    def _favor(self, x: Tensor, role: str | None) -> Tensor:
        if x.shape[-1] != self.W.shape[-1]:
            raise ConfigError(
                f"favor+ features were drawn for d={self.W.shape[-1]} but the inputs have "
                f"d={x.shape[-1]}: build the feature map with d={x.shape[-1]}"
            )
        # W is drawn once, in float64 on the generator's device; it follows the inputs, copied
        # once per (device, dtype) rather than in every forward pass.
        s = favor_exponent(x, _placed(self.W, x.device, x.dtype))  # (..., n, m)
        if role == "query":
            s = s - s.detach().amax(dim=-1, keepdim=True)
        elif role == "key":
            s = s - s.detach().amax(dim=(-2, -1), keepdim=True)
        elif role is not None:
            raise ConfigError(f"role must be 'query', 'key' or None, got {role!r}")
        return torch.exp(s) / math.sqrt(self.W.shape[-2])

    def underflow_count(self, x: Tensor, phi: Tensor) -> Tensor:
        """How many entries of phi = self(x) are exactly 0 but non-zero in exact arithmetic:
        a 0-d int64 tensor on phi's device (counting never reads the device)."""
        if self.positive:  # every exact value is > 0
            return phi.numel() - torch.count_nonzero(phi)
        if self.name == "relu":  # relu(x) = x exactly where x > 0: it cannot underflow
            return torch.zeros((), dtype=torch.int64, device=phi.device)
        nonzero = torch.cat([torch.ones_like(x[..., :1], dtype=torch.bool), x != 0], dim=-1)
        return torch.count_nonzero((phi == 0) & nonzero)


@table_cache(maxsize=32)
def _placed(W: Tensor, device: torch.device, dtype: torch.dtype) -> Tensor:
    """The projection W on ``device`` in ``dtype`` (W is keyed by identity: one copy per map)."""
    return W.to(device=device, dtype=dtype)


def feature_map(
    name: str | FeatureMap,
    *,
    d: int | None = None,
    num_features: int | None = None,
    generator: torch.Generator | None = None,
    orthogonal: bool = True,
) -> FeatureMap:
    """The feature map called ``name``; favor+ draws its m = num_features (default d)
    random directions for inputs of size d from ``generator`` (required)."""
    if isinstance(name, FeatureMap):
        if num_features is not None and num_features != name.num_features(d or 1):
            raise ConfigError("num_features conflicts with the FeatureMap passed; leave it unset")
        return name
    if name not in FEATURE_MAPS:
        raise ConfigError(f"unknown feature map {name!r}: choose one of {', '.join(FEATURE_MAPS)}")
    if name != "favor+":
        if num_features is not None:
            raise ConfigError(
                f"num_features applies to favor+ only; {name!r} has a fixed size, leave it unset"
            )
        return FeatureMap(name)
    if d is None:
        raise ConfigError("favor+ needs the input size d to draw its random features: pass d=")
    if generator is None:
        raise ConfigError(
            "favor+ draws random features: pass generator=torch.Generator().manual_seed(<seed>)"
        )
    m = d if num_features is None else num_features
    if isinstance(m, bool) or not isinstance(m, int) or m < 1:
        raise ConfigError(f"num_features must be a positive integer, got {num_features!r}")
    return FeatureMap(name, gaussian_features(d, m, generator=generator, orthogonal=orthogonal))
