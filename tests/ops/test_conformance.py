"""The conformance suite: every operator in conformance.OPERATORS passes all of it.

Sizes are distinct primes (batch 2, heads 3, n_q 5, n_k 7, d_k 11, d_v 13) so an
axis mix-up changes a shape or a number. Tolerances come from tests/tolerances.py.
"""

from __future__ import annotations

import pytest
import torch

from conformance import OPERATORS, OperatorEntry, draw_qkv, entries
from tolerances import ROW_SUM_TOL_FLOAT64, assert_close, max_rel_error, tolerance

from attnlab.errors import ConfigError
from attnlab.ops import CATALOGUE, attention_pooling, causal_mask, reference_attention, softmax_attention
from attnlab.ops.catalogue import ROUNDING
from attnlab.ops.linear import feature_map
from attnlab.ops.lowrank import linformer_projections
from attnlab.ops.sparse import graph_to_mask

SHAPES = {
    "B2-H3-nq5-nk7": (2, 3, 5, 7, 11, 13),
    "B2-H3-nq7-nk7": (2, 3, 7, 7, 11, 13),
    "B3-nq5-nk7": (3, 5, 7, 11, 13),
}
DTYPES = [torch.float64, torch.float32]


def _cases(entry_list, shapes=SHAPES):
    """(entry, shape) pairs where the shape has enough axes for the entry."""
    return [
        pytest.param(e, s, id=f"{e.name}-{name}")
        for e in entry_list
        for name, s in shapes.items()
        if len(s) - 2 >= e.min_ndim
    ]


def _masks(kind: str, shape: tuple[int, ...], seed: int) -> dict:
    """Keyword arguments for one kind of masking, sized for shape (*batch, n_q, n_k, d_k, d_v)."""
    *batch, n_q, n_k, _, _ = shape
    g = torch.Generator().manual_seed(seed)
    if kind == "none":
        return {}
    if kind == "bool":
        return {"mask": torch.rand(*batch, n_q, n_k, generator=g) < 0.6}
    if kind == "float":
        m = torch.randn(*batch, n_q, n_k, generator=g, dtype=torch.float64) * 2
        m = m.masked_fill(torch.rand(*batch, n_q, n_k, generator=g) < 0.3, float("-inf"))
        return {"mask": m}
    if kind in ("top_left", "bottom_right"):
        return {"causal": kind}
    if kind == "causal_true":
        return {"causal": True}
    if kind == "key_padding":
        kpm = torch.zeros(batch[0], n_k, dtype=torch.bool)
        kpm[0, -2:] = True  # batch item 0: last two keys are padding
        kpm[-1, :3] = True  # last batch item: first three keys are padding
        return {"key_padding_mask": kpm}
    raise AssertionError(kind)


MASK_FEATURE = {
    "none": (),
    "bool": ("mask",),
    "float": ("mask", "float_mask"),
    "top_left": ("causal",),
    "bottom_right": ("causal",),
    "key_padding": ("key_padding",),
}


def _mask_cases(shape_name: str, exact_only: bool = False):
    shape = SHAPES[shape_name]
    return [
        pytest.param(e, kind, id=f"{e.name}-{kind}")
        for e in OPERATORS
        for kind, feats in MASK_FEATURE.items()
        if e.supports(*feats) and len(shape) - 2 >= e.min_ndim and (e.exact or not exact_only)
    ]


# --- shapes and dtypes ---------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("entry,shape", _cases(OPERATORS))
def test_output_shape_and_dtype(entry: OperatorEntry, shape, dtype):
    *batch, n_q, n_k, d_k, d_v = shape
    q, k, v = draw_qkv(shape, dtype, seed=1)
    res = entry.fn(q, k, v, return_weights=entry.supports("weights"))
    assert res.output.shape == (*batch, n_q, d_v)
    assert res.output.dtype == dtype
    if entry.supports("weights"):
        assert res.weights.shape == (*batch, n_q, n_k)
        assert res.weights.dtype == dtype


@pytest.mark.parametrize("entry,shape", _cases(entries("weights")))
def test_weights_only_when_asked(entry: OperatorEntry, shape):
    q, k, v = draw_qkv(shape, torch.float64, seed=2)
    assert entry.fn(q, k, v, return_weights=False).weights is None


@pytest.mark.parametrize(
    "entry,shape", _cases([e for e in entries("weights") if e.normalized])
)
def test_weight_rows_sum_to_one(entry: OperatorEntry, shape):
    q, k, v = draw_qkv(shape, torch.float64, seed=3)
    w = entry.fn(q, k, v, return_weights=True).weights
    assert (w >= 0).all()
    assert (w.sum(-1) - 1).abs().max().item() <= ROW_SUM_TOL_FLOAT64


# --- agreement with the float64 reference --------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("entry,kind", _mask_cases("B2-H3-nq5-nk7"))
def test_matches_reference(entry: OperatorEntry, kind, dtype):
    shape = SHAPES["B2-H3-nq5-nk7"]
    q, k, v = draw_qkv(shape, dtype, seed=4)
    masks = _masks(kind, shape, seed=5)
    if "mask" in masks and masks["mask"].is_floating_point():
        masks["mask"] = masks["mask"].to(dtype)
    res = entry.fn(q, k, v, return_weights=entry.supports("weights"), **masks)
    ref = entry.reference(q, k, v, **masks)  # float64 on the same (rounded) inputs
    if entry.exact:
        assert_close(res.output, ref.output, dtype)
        if entry.supports("weights"):
            assert_close(res.weights, ref.weights, dtype)
    else:
        assert max_rel_error(res.output, ref.output) <= entry.approx_rel_error


@pytest.mark.parametrize("entry,shape", _cases(entries(), {"B3-nq7-nk7": (3, 7, 7, 11, 13)}))
def test_matches_reference_self_attention_shapes(entry: OperatorEntry, shape):
    q, k, v = draw_qkv(shape, torch.float64, seed=6)
    assert_close(entry.fn(q, k, v).output, entry.reference(q, k, v).output)


@pytest.mark.parametrize("entry,kind", _mask_cases("B2-H3-nq5-nk7", exact_only=True))
def test_gradients_match_reference(entry: OperatorEntry, kind):
    """d/d(q, k, v) of <R, out> for a random R equals the reference's, in float64."""
    shape = SHAPES["B2-H3-nq5-nk7"]
    q, k, v = draw_qkv(shape, torch.float64, seed=7, requires_grad=True)
    masks = _masks(kind, shape, seed=8)
    out = entry.fn(q, k, v, **masks).output
    R = torch.randn(out.shape, generator=torch.Generator().manual_seed(9), dtype=torch.float64)
    grads = torch.autograd.grad((out * R).sum(), (q, k, v))
    ref_grads = torch.autograd.grad((entry.reference(q, k, v, **masks).output * R).sum(), (q, k, v))
    for g_, r_ in zip(grads, ref_grads):
        assert_close(g_, r_)


# --- causality -----------------------------------------------------------------------


CAUSAL_SIZES = [(5, 7), (7, 5), (5, 5)]


CAUSAL_CASES = [
    pytest.param(e, n_q, n_k, a, id=f"{e.name}-{n_q}x{n_k}-{a}")
    for e in entries("causal")
    for n_q, n_k in CAUSAL_SIZES
    for a in ("top_left", "bottom_right", True)
    if a is not True or n_q == n_k  # causal=True with n_q != n_k: ConfigError (test_masks.py)
]


@pytest.mark.parametrize("entry,n_q,n_k,alignment", CAUSAL_CASES)
def test_causal_jacobian(entry: OperatorEntry, n_q, n_k, alignment):
    """d out_i / d (k, v)_j is exactly 0 where key j is invisible to query i, nonzero where visible;
    d out_i / d q_j is 0 for j != i; nothing crosses batch or head axes."""
    B, H = 2, 3
    q, k, v = draw_qkv((B, H, n_q, n_k, 3, 2), torch.float64, seed=10)
    fn = lambda q, k, v: entry.fn(q, k, v, causal=alignment).output  # noqa: E731
    J_q, J_k, J_v = torch.autograd.functional.jacobian(fn, (q, k, v))  # (B,H,n_q,d_v, B,H,n,d)
    align = "top_left" if alignment is True else alignment
    allowed = causal_mask(n_q, n_k, alignment=align)  # (n_q, n_k)
    # The operator's own pattern (a sparse graph, zero kernel entries) inside the causal
    # mask: the oracle's non-zero weights, which must never reach past the mask.
    pattern = entry.reference(q, k, v, causal=alignment).weights != 0  # (B, H, n_q, n_k)
    assert not (pattern & ~allowed).any(), "the oracle itself sees past the causal mask"
    same = torch.eye(B, dtype=torch.bool)[:, None, :, None] & torch.eye(H, dtype=torch.bool)[None, :, None, :]
    # support[b, h, i, b', h', j]: out[b, h, i] may depend on input[b', h', j]
    support_kv = same[:, :, None, :, :, None] & pattern[:, :, :, None, None, :]
    support_q = same[:, :, None, :, :, None] & torch.eye(n_q, dtype=torch.bool)[None, None, :, None, None, :]
    for J, support in ((J_q, support_q), (J_k, support_kv), (J_v, support_kv)):
        dep = J.abs().sum(dim=(3, 7))  # (B, H, n_q, B, H, n)
        assert (dep[~support] == 0).all(), "output depends on an input it must not see"
    # Values are mixed with weight P_ij != 0 exactly where the pattern has them.
    dep_v = J_v.abs().sum(dim=(3, 7))
    assert torch.equal(dep_v > 0, support_kv)


# --- fully masked rows ---------------------------------------------------------------


def _fully_masked(kind: str, B: int, H: int, n_q: int, n_k: int, dtype):
    """(masks, empty) with empty (B, H, n_q) True on the rows that see no key."""
    empty = torch.zeros(B, H, n_q, dtype=torch.bool)
    if kind == "bool":
        m = torch.ones(B, H, n_q, n_k, dtype=torch.bool)
        m[0, 1, 2] = False
        m[1, :, 0] = False
        empty[0, 1, 2] = empty[1, :, 0] = True
        return {"mask": m}, empty
    if kind == "additive":
        m = torch.zeros(B, H, n_q, n_k, dtype=dtype)
        m[:, 2, 4] = float("-inf")
        m[0, 0, 1, 3:] = float("-inf")  # a partly masked row as well
        empty[:, 2, 4] = True
        return {"mask": m}, empty
    if kind == "key_padding":
        kpm = torch.zeros(B, n_k, dtype=torch.bool)
        kpm[1] = True
        kpm[0, :2] = True
        empty[1] = True
        return {"key_padding_mask": kpm}, empty
    raise AssertionError(kind)


@pytest.mark.parametrize(
    "entry,kind",
    [
        pytest.param(e, kind, id=f"{e.name}-{kind}")
        for e in entries("mask")
        for kind in ("bool", "additive", "key_padding")
        if kind != "key_padding" or e.supports("key_padding")
    ],
)
def test_fully_masked_rows_zero_output_finite_gradients(entry: OperatorEntry, kind):
    B, H, n_q, n_k = 2, 3, 5, 7
    q, k, v = draw_qkv((B, H, n_q, n_k, 11, 13), torch.float64, seed=11, requires_grad=True)
    masks, empty = _fully_masked(kind, B, H, n_q, n_k, torch.float64)
    res = entry.fn(q, k, v, return_weights=entry.supports("weights"), **masks)
    assert empty.any() and (res.output[empty] == 0).all()
    if entry.supports("weights"):
        assert (res.weights[empty] == 0).all()
    assert_close(res.output, entry.reference(q, k, v, **masks).output)
    grads = torch.autograd.grad(res.output.sum(), (q, k, v))
    assert all(torch.isfinite(g_).all() for g_ in grads)
    assert (grads[0][empty] == 0).all()  # a masked row's query has no influence


# --- large logits --------------------------------------------------------------------


def _large_logit_cases():
    cases = []
    for e in entries():
        cases.append(pytest.param(e, None, id=f"{e.name}-full"))
        if e.supports("causal"):
            cases.append(pytest.param(e, "bottom_right", id=f"{e.name}-causal"))
    return cases


@pytest.mark.parametrize("entry,causal", _large_logit_cases())
def test_large_logits_float32_no_nan(entry: OperatorEntry, causal):
    """Logits scaled by 1e4 in float32: no NaN or inf, normalised rows still sum to 1."""
    q, k, v = draw_qkv((2, 3, 5, 7, 11, 13), torch.float32, seed=12)
    q = (q * 1e4).requires_grad_()
    res = entry.fn(q, k, v, causal=causal, return_weights=entry.supports("weights"))
    assert torch.isfinite(res.output).all()
    (g_,) = torch.autograd.grad(res.output.sum(), (q,))
    assert not torch.isnan(g_).any()
    if entry.normalized:
        # A convex combination of the values stays inside their range.
        assert (res.output.abs() <= v.abs().amax(dim=-2, keepdim=True) * (1 + 1e-6)).all()
        if entry.supports("weights"):
            row_sums = res.weights.sum(-1)
            assert (row_sums - 1).abs().max().item() <= tolerance(torch.float32).atol


def test_registry_names_are_unique():
    names = [e.name for e in OPERATORS]
    assert len(names) == len(set(names))


# --- the catalogue of attention variants ---------------------------------------------
#
# Every entry of attnlab.ops.catalogue is called here as the catalogue states it: an exact entry
# equals the float64 softmax reference at the dtype's tolerance, an entry whose exactness names a
# function it equals "to rounding" equals that function's float64 oracle at the same tolerance,
# every other entry differs from softmax by far more than rounding, and each accepts exactly the
# inputs its features list.

CAT_SHAPE = (2, 3, 7, 7, 11, 13)  # B, H, n_q = n_k, d_k, d_v
CAT_WINDOW = 3


def _cat_graph(name: str, n: int, causal: bool):
    """The graph each sparse entry is called with here (its parameters at n = 7)."""
    graph = CATALOGUE[name].graph
    params = {"window": dict(w=CAT_WINDOW), "bigbird": dict(g=1, w=3, r=2, seed=7),
              "longformer": dict(w=4, dilation=2, global_tokens=(0, 3))}[name]
    return graph(n, **params, causal=causal)


def _cat_call(entry, q, k, v, **kw):
    """Call a catalogue entry on q, k, v with the operands its parameters need (small values);
    a sparse entry given causal=True gets its causal graph."""
    if entry.graph is not None and entry.name != "window":
        return entry(q, k, v, _cat_graph(entry.name, k.shape[-2], causal=bool(kw.pop("causal", False))), **kw)
    args, extra = _cat_operands(entry, q, k)
    return entry(q, k, v, *args, **extra, **kw)


def _kernel_oracle(feature_map_name: str):
    def oracle(q, k, v, **masks):
        phi = feature_map(feature_map_name)
        return attention_pooling(q, k, v, lambda a, b: phi(a) @ phi(b).transpose(-2, -1), return_weights=True,
                                 **masks)
    return oracle


def _sparse_oracle(name: str):
    def oracle(q, k, v, causal=None, **masks):
        allowed = graph_to_mask(_cat_graph(name, k.shape[-2], causal=bool(causal)), k.shape[-2])
        return softmax_attention(q, k, v, mask=allowed, return_weights=True, **masks)
    return oracle


# The float64 oracles of the entries that are not exact but equal a stated function to rounding.
CAT_ORACLES = {
    "unnormalized": lambda q, k, v, **m: reference_attention(q, k, v, normalize=False, scale="none", **m),
    "window": _sparse_oracle("window"),
    "bigbird": _sparse_oracle("bigbird"),
    "longformer": _sparse_oracle("longformer"),
    "linear": _kernel_oracle("elu+1"),
    "linear-relu": _kernel_oracle("relu"),
    "linear-taylor": _kernel_oracle("taylor"),
}


def _cat_masks(kind: str) -> dict:
    if kind == "causal":
        return {"causal": True}
    if kind == "key_padding":
        return _masks("key_padding", CAT_SHAPE, seed=13)
    return {}


CAT_MASK_FEATURE = {"none": (), "causal": ("causal",), "key_padding": ("key_padding",)}


def _cat_cases(with_rounding: bool):
    return [
        pytest.param(e, kind, id=f"{e.name}-{kind}")
        for e in CATALOGUE.values()
        for kind, feats in CAT_MASK_FEATURE.items()
        if (e.exactness.tolerance == ROUNDING) == with_rounding
        and (e.supports(*feats) or (kind == "causal" and e.graph is not None))  # a graph is made causal
    ]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("entry,kind", _cat_cases(with_rounding=True))
def test_catalogue_entry_equals_its_stated_function(entry, kind, dtype):
    """exact: softmax attention (reference_attention); others: the function ``exactness.equals``
    names, by its float64 oracle; at the dtype's tolerance (tests/tolerances.py)."""
    q, k, v = draw_qkv(CAT_SHAPE, dtype, seed=14)
    masks = _cat_masks(kind)
    res = _cat_call(entry, q, k, v, return_weights=True, **masks)
    q64, k64, v64 = (t.to(torch.float64) for t in (q, k, v))
    oracle = reference_attention if entry.exact else CAT_ORACLES[entry.name]
    ref = oracle(q64, k64, v64, **masks)
    assert_close(res.output, ref.output, dtype)
    assert_close(res.weights, ref.weights, dtype)


@pytest.mark.parametrize("entry", [e for e in CATALOGUE.values() if not e.exact], ids=lambda e: e.name)
def test_catalogue_inexact_entries_differ_from_softmax(entry):
    """An approximate or different entry is not softmax attention: at n = 7, d = 11, float64 its output
    is more than 1e-3 (relative to max |softmax output|) away from it, far above rounding (1e-12)."""
    q, k, v = draw_qkv(CAT_SHAPE, torch.float64, seed=15)
    err = max_rel_error(_cat_call(entry, q, k, v).output, reference_attention(q, k, v).output)
    assert err > 1e-3


@pytest.mark.parametrize("feature", ["causal", "key_padding", "mask", "weights"])
@pytest.mark.parametrize("entry", list(CATALOGUE.values()), ids=lambda e: e.name)
def test_catalogue_entry_accepts_exactly_its_features(entry, feature):
    """A listed feature is accepted (finite output of the right shape, weights (B, H, n_q, n_k));
    an unlisted one is refused (TypeError for a keyword the operator lacks, else ConfigError)."""
    B, H, n_q, n_k, _, d_v = CAT_SHAPE
    q, k, v = draw_qkv(CAT_SHAPE, torch.float64, seed=16)
    kw = {"causal": {"causal": True}, "key_padding": _masks("key_padding", CAT_SHAPE, seed=17),
          "mask": _masks("bool", CAT_SHAPE, seed=18), "weights": {"return_weights": True}}[feature]
    args, extra = _cat_operands(entry, q, k)
    call = (lambda: entry(q, k, v, *args, **extra, **kw))
    if not entry.supports(feature):
        with pytest.raises((TypeError, ConfigError)):
            call()
        return
    res = call()
    assert res.output.shape == (B, H, n_q, d_v) and torch.isfinite(res.output).all()
    if feature == "weights":
        assert res.weights.shape == (B, H, n_q, n_k)


def _cat_operands(entry, q, k) -> tuple[tuple, dict]:
    """The operands after q, k, v an entry's parameters need: window w, a graph, FAVOR+'s
    m = 17 features and their generator, Linformer's E and F (k' = 3)."""
    n = k.shape[-2]
    if entry.name == "window":
        return (CAT_WINDOW,), {}
    if entry.graph is not None:
        return (_cat_graph(entry.name, n, causal=False),), {}
    if entry.name == "favor+":
        return (), {"num_features": 17, "generator": torch.Generator().manual_seed(3)}
    if entry.name == "linformer":
        return linformer_projections(3, n, generator=torch.Generator().manual_seed(4), dtype=q.dtype), {}
    return (), {}


def test_every_catalogue_entry_is_tested_and_benchmarked():
    """A new catalogue entry fails here until the conformance suite runs an operator of it (an
    OperatorEntry with ``variant`` = its name) and ``attnlab bench`` times it or says why not."""
    from attnlab.bench.variants import UNTIMED, VARIANTS

    names = set(CATALOGUE)
    conformed = {e.variant for e in OPERATORS if e.variant is not None}
    timed = {v.variant for v in VARIANTS.values() if v.variant is not None}
    assert conformed <= names and timed <= names and set(UNTIMED) <= names
    assert names - conformed == set(), f"not in the conformance suite: {sorted(names - conformed)}"
    assert names - timed - set(UNTIMED) == set(), f"neither timed nor in UNTIMED: {sorted(names - timed - set(UNTIMED))}"
    assert not timed & set(UNTIMED)
    assert set(CAT_ORACLES) == {e.name for e in CATALOGUE.values() if not e.exact and e.exactness.tolerance == ROUNDING}
