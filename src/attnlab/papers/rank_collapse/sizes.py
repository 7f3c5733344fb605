"""What the rank-collapse networks hold and do, counted for the experiments' estimates.

Every experiment config of this paper says, before anything is loaded, what its run needs
(``Config.estimate``, :mod:`attnlab.estimates`). The pieces they share are counted here, from
the networks' shapes alone (no weights are read). The networks of
:mod:`attnlab.papers.rank_collapse.stacks`, all in float64 (8 bytes a number):

    network      L    H   kv  d    d_head  d_ff  m   parameters P
    pretrained   6    12  12  384  32      1536  2   22,565,376   all-MiniLM-L6-v2 (pooler left out)
    random       6    12  12  384  32      1536  2   22,565,376   the same architecture, drawn
    attnlab-12   12   12  12  384  32      1536  2   33,212,160   12 blocks and MiniLM's embedding
    smollm2      30   9   3   576  64      1536  3   134,515,008  SmolLM2-135M-Instruct (tied head)
    bert-base    12   12  12  768  64      3072  2   108,891,648  BertConfig()'s BERT-base, drawn (float32)

(L blocks, H query heads sharing kv key/value heads, width d, FFN width d_ff with m matrices:
GELU's two, SwiGLU's three). The shapes are :mod:`attnlab.pretrained.sizes`'s.

Weights (:func:`resident_bytes`, measured as the process's resident memory): a loaded checkpoint
holds about 9 bytes per parameter (MiniLM: its float64 weights and tokenizer) or 14 (SmolLM2: also
the loader's cached float32 dequantized GGUF tensors and its tokenizer), and reaches about
:data:`LOAD_PEAK` = 21 bytes per parameter while it loads (read, dequantized and converted: 0.46
GiB for MiniLM, 2.6 GiB for SmolLM2); a drawn network holds its 8 P bytes. Loading takes about
0.1 us per parameter (2.3 s for MiniLM, 15 s for SmolLM2 on 2 cores), counted as :data:`LOAD_OPS`
= 2 interpreted operations per parameter (:func:`load_work`).

BERT-base (:mod:`attnlab.papers.rank_collapse.bert_base`) is drawn, not loaded: transformers' float32
BertModel, its float64 state dict (attnlab's BERT loader) and attnlab's float32 Encoder are held at once,
:data:`DRAW_PEAK` = 20 bytes per parameter (measured 20.1: 2.0 GiB), and one draw takes about as long
as loading a checkpoint of its size (8.7 s measured on 2 shared cores: LOAD_OPS per parameter);
afterwards it holds its 4 P bytes. :func:`bert_base_work` counts rank-collapse.ablations' passes of
one draw.

One pass of B texts of n tokens through k blocks with every state and every head's map kept
(``run_model``, ``run_dong``; :func:`states_bytes`, :func:`maps_bytes`, :func:`layer_bytes`,
:func:`pass_work`):

    held       8 B ((k + 1) n d + k H n^2)           the states X_0..X_k and the maps P_1..P_k
    one layer  8 B (3 H n^2 + n (4 d + m d_ff))      logits, their exp and the weights; q, k, v and
                                                     the heads' output; the FFN's hidden outputs
    gemm       B k (2 n d (2 d + 2 kv d_head) + 4 H n^2 d_head + 2 m n d d_ff)
    traffic    8 B k (100 H n^2 + 40 n (d + d_ff))   element-wise work (masks, softmax, norms, the
                                                     inputs' finiteness checks), fitted to a measured
                                                     pass (MiniLM, B = 8, n = 256: 4 s on 2 cores)
    calls      40 k TORCH_OP                         the ops of a block; :data:`TORCH_OP` = 0.1 small
                                                     calls, a torch op on small tensors (~20 us against
                                                     the reference 32 x 64 SVD's ~0.2 ms)

Measured against the process's peak resident memory, held + one layer overcounts a MiniLM pass by
about 15% (B = 8, n = 256: 546 MiB counted, 471 MiB measured; B = 4, n = 512: 978 and 857).

The exact composite residual (:func:`attnlab.analysis.residuals.composite_shift`, linear programs
over n d + d + 2 variables per n x d matrix, HiGHS): :data:`LP_BYTES` per entry of the matrix
(measured 13 MiB at 8 x 384 to 103 MiB at 64 x 384, linear in n d) and :data:`LP_WORK` (n d)^2
operations at the LAPACK rate per matrix (fitted to 1 s at 8 x 384 and 8 s at 16 x 384 on MiniLM's
states; the number of LPs, and so the time, varies by a few times between matrices).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Sequence

from attnlab.estimates import svd_flops
from attnlab.pretrained.sizes import MINILM as MINILM_SIZE
from attnlab.pretrained.sizes import SMOLLM2 as SMOLLM2_SIZE
from attnlab.pretrained.sizes import ModelSize

F64 = 8  # bytes of a float64
LOAD_PEAK = 21.0  # bytes per parameter while a checkpoint loads (module docstring)
LOAD_OPS = 2.0  # interpreted operations per parameter that loading a checkpoint costs (module docstring)
LP_BYTES = 4400.0  # HiGHS's memory per entry of the n x d matrix of one composite residual
LP_WORK = 1200.0  # LAPACK-rate operations per (n d)^2 of one composite residual
TRAFFIC_MAPS, TRAFFIC_STATES, OPS_PER_BLOCK = 100, 40, 40  # a pass's element-wise work (module docstring)
LOADING = "no setting changes a checkpoint's weights: free memory for them"  # the load step's change
TORCH_OP = 0.1  # one torch op on small tensors, in small calls (~20 us against the 32 x 64 SVD's ~0.2 ms)


@dataclass(frozen=True)
class Net:
    """The shape of one network (module docstring's table); ``resident``: bytes per parameter held
    once it is built or loaded; ``loaded``: read from a checkpoint (LOAD_PEAK while it loads)."""

    name: str
    layers: int
    heads: int
    kv_heads: int
    d: int
    d_head: int
    d_ff: int
    ffn_matrices: int
    params: int
    resident: float
    loaded: bool


def _net(name: str, size: ModelSize, params: int, resident: float, loaded: bool) -> Net:
    """A network of the shapes of ``size`` (:mod:`attnlab.pretrained.sizes`)."""
    return Net(name, size.n_layers, size.n_heads, size.n_kv_heads, size.d_model, size.head_dim, size.d_ff,
               3 if size.gated else 2, params, resident, loaded)


MINILM = _net("pretrained", MINILM_SIZE, 22_565_376, 9.0, True)  # parameters with biases, norms, positions
RANDOM = dataclasses.replace(MINILM, name="random", resident=8.0, loaded=False)
ATTNLAB_12 = dataclasses.replace(RANDOM, name="attnlab-12", layers=12, params=33_212_160)
SMOLLM2 = _net("smollm2", SMOLLM2_SIZE, 134_515_008, 14.0, True)
NETS = {n.name: n for n in (MINILM, RANDOM, ATTNLAB_12, SMOLLM2)}
BERT_BASE = Net("bert-base", 12, 12, 12, 768, 64, 3072, 2, 108_891_648, 4.0, False)
DRAW_PEAK = 20.0  # bytes per parameter while BERT-base is drawn (module docstring)
F32 = 4  # bytes of a float32


def resident_bytes(nets: Sequence[Net]) -> float:
    """The weights every network of ``nets`` holds at once (MiniLM counted once)."""
    return sum(n.resident * n.params for n in {n.name: n for n in nets}.values())


def load_bytes(nets: Sequence[Net]) -> float:
    """The extra bytes of the largest checkpoint of ``nets`` while it loads (LOAD_PEAK per parameter,
    less what it then holds)."""
    return max([(LOAD_PEAK - n.resident) * n.params for n in nets if n.loaded], default=0.0)


def load_work(nets: Sequence[Net]) -> dict[str, float]:
    """Loading every checkpoint of ``nets`` (each once): LOAD_OPS interpreted operations per parameter."""
    return {"python": LOAD_OPS * sum(n.params for n in {n.name: n for n in nets if n.loaded}.values())}


def states_bytes(net: Net, B: float, n: float, layers: float | None = None) -> float:
    """8 B (k + 1) n d: the states X_0..X_k of B texts of n tokens (k = ``layers`` or all)."""
    k = net.layers if layers is None else layers
    return F64 * B * (k + 1) * n * net.d


def maps_bytes(net: Net, B: float, n: float, layers: float | None = None) -> float:
    """8 B k H n^2: every head's map of k blocks."""
    k = net.layers if layers is None else layers
    return F64 * B * k * net.heads * n * n


def layer_bytes(net: Net, B: float, n: float) -> float:
    """8 B (3 H n^2 + n (4 d + m d_ff)): one block's temporaries (module docstring)."""
    return F64 * B * (3 * net.heads * n * n + n * (4 * net.d + net.ffn_matrices * net.d_ff))


def pass_work(net: Net, B: float, n: float, layers: float | None = None) -> dict[str, float]:
    """gemm, traffic and calls of one pass (module docstring), as Estimate keywords."""
    k = net.layers if layers is None else layers
    d, H = net.d, net.heads
    gemm = B * k * (2 * n * d * (2 * d + 2 * net.kv_heads * net.d_head) + 4 * H * n * n * net.d_head
                    + 2 * net.ffn_matrices * n * d * net.d_ff)
    traffic = F64 * B * k * (TRAFFIC_MAPS * H * n * n + TRAFFIC_STATES * n * (d + net.d_ff))
    return {"gemm": gemm, "traffic": traffic, "calls": TORCH_OP * OPS_PER_BLOCK * k}


def state_residuals_work(B: float, n: float, d: float, states: float) -> dict[str, float]:
    """The token-mean, rank-one SVD and 2-norm residuals of ``states`` (B, n, d) states
    (``ablations._curves``): one SVD with vectors and two without per matrix, about 20 passes
    over each state, 30 torch ops per state."""
    lapack = B * states * (svd_flops(n, d, vectors=True) + 2 * svd_flops(n, d))
    return {"lapack": lapack, "traffic": 20 * F64 * B * states * n * d, "calls": 30 * TORCH_OP * states}


def bert_draw_bytes() -> float:
    """DRAW_PEAK P: the most one draw of BERT-base holds (module docstring)."""
    return DRAW_PEAK * BERT_BASE.params


def bert_base_work(B: float, n: float, draws: float) -> dict[str, float]:
    """rank-collapse.ablations' work on BERT-base: per draw, the draw itself (LOAD_OPS per parameter),
    on the text five passes of 12 blocks (SAN, SAN+skip and the notes' SAN of attention alone; SAN+MLP
    and the transformer whole) and on random ids three (SAN through 2 blocks, SAN+skip, transformer),
    and the token-mean residual of every state (about 20 passes over it, 10 torch ops). gemm counted as
    float64's (float32 runs about twice as fast: an upper bound)."""
    N, attention = BERT_BASE, dataclasses.replace(BERT_BASE, d_ff=0, ffn_matrices=0)
    passes = add(scaled(pass_work(attention, B, n), 4), pass_work(attention, B, n, 2),
                 scaled(pass_work(N, B, n), 3))
    states = 5 * (N.layers + 1) + 3 + 2 * (N.layers + 1)  # text: 5 passes; random ids: 2 + one of 2 blocks
    residuals = {"traffic": 20 * F32 * B * states * n * N.d, "calls": 10 * TORCH_OP * states}
    return scaled(add(passes, residuals, {"python": LOAD_OPS * N.params}), draws)


def add(*works: dict[str, float]) -> dict[str, float]:
    """The sum of Estimate keyword dicts."""
    out: dict[str, float] = {}
    for w in works:
        for k, v in w.items():
            out[k] = out.get(k, 0.0) + v
    return out


def scaled(work: dict[str, float], factor: float) -> dict[str, float]:
    """``work`` repeated ``factor`` times."""
    return {k: v * factor for k, v in work.items()}


def by_excess(cfg: Any, names: Sequence[str]) -> tuple[str, ...]:
    """``names`` in the order a user should lower them: the one furthest above its paper preset
    (or its default, for a field without a preset) first, value / reference, a tuple by its
    largest number; ties keep the order given (the one that weighs most, first)."""
    fields = {f.name: f.default for f in dataclasses.fields(cfg)}
    preset = getattr(cfg, "PRESETS", {}).get("paper", {})

    def size(v: Any) -> float:
        if isinstance(v, (tuple, list)):
            return max((size(x) for x in v), default=1.0)
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 1.0

    def excess(name: str) -> float:
        ref = preset.get(name, fields.get(name))
        return size(getattr(cfg, name)) / max(size(ref), 1.0)

    return tuple(sorted(names, key=lambda name: -excess(name)))


def paths_count(L: int, H: int, skip: bool = True) -> float:
    """(H + 1)^L (or H^L without the skip) as a float, inf past float64's range: never a big int."""
    base = H + (1 if skip else 0)
    log = L * math.log(base) if base > 1 else 0.0
    return math.exp(log) if log < 700 else math.inf


__all__ = ["ATTNLAB_12", "BERT_BASE", "DRAW_PEAK", "F32", "F64", "bert_base_work", "bert_draw_bytes", "LOADING", "LOAD_OPS", "LOAD_PEAK", "LP_BYTES", "LP_WORK", "MINILM", "NETS",
           "Net", "RANDOM", "SMOLLM2", "TORCH_OP", "add", "by_excess", "layer_bytes", "load_bytes", "load_work",
           "maps_bytes", "pass_work", "paths_count", "resident_bytes", "scaled", "state_residuals_work",
           "states_bytes"]
