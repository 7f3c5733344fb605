"""Previous-token, duplicate-token and induction patterns and scores ("mul", "abs"), causal and
bidirectional, against hand-derived patterns and TransformerLens' own formulas; TransformerLens'
scores on its repeated-random-token prompts for perfect heads and for uniform attention (closed forms)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlab.analysis.heads.patterns import (
    duplicate_token_pattern,
    induction_pattern,
    induction_stripe_score,
    pattern_score,
    pattern_scores,
    previous_token_pattern,
    repeated_random_tokens,
    transformerlens_scores,
)
from attnlab.analysis.heads.maps import uniform_attention
from attnlab.errors import ConfigError
from tolerances import FLOAT64

TOKENS = torch.tensor([0, 5, 7, 5, 7])  # BOS, then "5 7" twice


def _random(n, seed, causal=True, batch=()):
    g = torch.Generator().manual_seed(seed)
    e = -torch.log(torch.rand(*batch, n, n, generator=g, dtype=torch.float64))
    if causal:
        e = e.tril()
    return e / e.sum(-1, keepdim=True)


def _tl_score(A, D, exclude_bos, exclude_current_token, measure):
    """TransformerLens' compute_head_attention_similarity_score, written from its formulas
    (on a copy: the original zeroes the cached pattern in place)."""
    A, D = A.clone(), D.clone()
    if measure == "mul":
        if exclude_bos:
            A[:, 0] = 0
        if exclude_current_token:
            A.fill_diagonal_(0)
        return float((A * D).sum() / A.sum())
    diff = (A - D).abs()
    if exclude_bos:
        diff[:, 0] = 0
    if exclude_current_token:
        diff.fill_diagonal_(0)
    return 1 - float(diff.mean() * len(diff))


def test_patterns_by_hand():
    P = previous_token_pattern(5)
    assert P.nonzero().tolist() == [[1, 0], [2, 1], [3, 2], [4, 3]]
    assert duplicate_token_pattern(TOKENS).nonzero().tolist() == [[3, 1], [4, 2]]
    assert duplicate_token_pattern(TOKENS, causal=False).nonzero().tolist() == [[1, 3], [2, 4], [3, 1], [4, 2]]
    # induction: key j whose previous token t_{j-1} equals t_i: row 3 ("5") -> key 2 (after the first 5)
    assert induction_pattern(TOKENS).nonzero().tolist() == [[3, 2], [4, 3]]
    # bidirectionally also forwards: row 1 ("5") -> key 4 (after the second 5); row 2 ("7") has none
    assert induction_pattern(TOKENS, causal=False).nonzero().tolist() == [[1, 4], [3, 2], [4, 3]]


def test_a_perfect_head_scores_one_here_and_less_under_transformerlens():
    n = 7
    A = torch.eye(n, dtype=torch.float64).roll(-1, -1).tril(-1)
    A[0, 0] = 1.0  # the first token has nowhere else to look
    D = previous_token_pattern(n)
    assert pattern_score(A, D, measure="mul").item() == 1.0
    assert pattern_score(A, D, measure="abs").item() == 1.0
    assert pattern_score(A, D, measure="mul", convention="transformerlens").item() == pytest.approx((n - 1) / n)
    assert pattern_score(A, D, measure="abs", convention="transformerlens").item() == pytest.approx(1 - 1 / n)


@pytest.mark.parametrize("measure", ["mul", "abs"])
@pytest.mark.parametrize("exclude_bos", [False, True])
@pytest.mark.parametrize("exclude_current_token", [False, True])
def test_the_transformerlens_convention_reproduces_its_formulas(measure, exclude_bos, exclude_current_token):
    tokens = torch.tensor([0, 3, 4, 3, 4, 3, 8])
    A = _random(7, 3)
    for D in (previous_token_pattern(7), duplicate_token_pattern(tokens), induction_pattern(tokens)):
        ours = pattern_score(A, D, measure=measure, exclude_bos=exclude_bos,
                             exclude_current_token=exclude_current_token, convention="transformerlens")
        assert ours.item() == pytest.approx(_tl_score(A, D, exclude_bos, exclude_current_token, measure), abs=FLOAT64)


def test_mul_scores_agree_when_every_row_has_a_target():
    n = 5
    D = previous_token_pattern(n)
    D[0, 0] = 1  # a pattern for row 0 too
    A = _random(n, 0)
    assert pattern_score(A, D).item() == pytest.approx(pattern_score(A, D, convention="transformerlens").item())


def test_exclusions_apply_to_both_measures():
    n = 5
    A = 0.5 * torch.eye(n, dtype=torch.float64) + 0.5 * torch.eye(n, dtype=torch.float64).roll(-1, -1).tril(-1)
    A[0, 0] = 1.0
    D = previous_token_pattern(n)
    assert pattern_score(A, D, measure="mul").item() == pytest.approx(0.5)
    assert pattern_score(A, D, measure="abs").item() == pytest.approx(0.0)  # |(.5, .5) - (1, 0)| = 1
    assert pattern_score(A, D, measure="mul", exclude_current_token=True).item() == pytest.approx(1.0)
    assert pattern_score(A, D, measure="abs", exclude_current_token=True).item() == pytest.approx(1.0)


def test_inputs_are_never_written():
    A = _random(5, 1, batch=(2, 3))
    before = A.clone()
    pattern_scores(A, TOKENS, exclude_bos=True, exclude_current_token=True, measure="abs")
    pattern_scores(A, TOKENS, exclude_bos=True, exclude_current_token=True, convention="transformerlens")
    assert torch.equal(A, before)


def test_prompts_in_a_batch_each_get_every_option():
    tokens = torch.stack([TOKENS, torch.tensor([0, 2, 2, 9, 2])])  # (B, n)
    A = _random(5, 2, batch=(2, 3, 4))  # (B, L, H, n, n)
    s = pattern_scores(A, tokens, measure="abs", exclude_bos=True)
    assert s.duplicate_token.shape == (2, 3, 4)
    one = pattern_scores(A[1, 2, 3], tokens[1], measure="abs", exclude_bos=True)
    assert s.duplicate_token[1, 2, 3].item() == pytest.approx(one.duplicate_token.item())
    assert s.scored_rows["duplicate_token"][1, 0, 0].item() == 2  # rows 2 and 4 repeat "2" (key 0 is BOS)


def test_empty_patterns_give_nan_and_bad_input_is_refused():
    assert torch.isnan(pattern_scores(torch.eye(4, dtype=torch.float64), torch.arange(4)).induction)
    with pytest.raises(ConfigError, match="0s and 1s"):
        pattern_score(torch.eye(3, dtype=torch.float64), 0.5 * torch.eye(3))
    with pytest.raises(ConfigError, match="measure must be one of mul, abs"):
        pattern_score(torch.eye(3, dtype=torch.float64), torch.eye(3), measure="l2")
    with pytest.raises(ConfigError, match=r"shape \(\.\.\., 3, 3\)"):
        pattern_score(torch.eye(3, dtype=torch.float64), torch.eye(4))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), measure=st.sampled_from(["mul", "abs"]))
def test_bidirectional_duplicate_scores_ignore_the_order_of_tokens(seed, measure):
    """Without causality the duplicate pattern depends on token identity only: relabelling positions
    (tokens and both axes of the map together) leaves the score unchanged."""
    g = torch.Generator().manual_seed(seed)
    n = 7
    tokens = torch.randint(0, 3, (n,), generator=g)
    A = _random(n, seed, causal=False)
    perm = torch.randperm(n, generator=g)
    a = pattern_scores(A, tokens, causal=False, measure=measure).duplicate_token
    b = pattern_scores(A[perm][:, perm], tokens[perm], causal=False, measure=measure).duplicate_token
    assert torch.allclose(a, b, atol=FLOAT64, equal_nan=True)


# ---- TransformerLens' own scores on its repeated-random-token prompts --------------------------------
S = 9  # half: [BOS] r r with r 9 distinct tokens, n = 19


def _prompt(s=S, prompts=1, **kw):
    return repeated_random_tokens(range(100, 160), s, prompts, prefix=[1], **kw)


def test_repeated_random_tokens_are_bos_then_distinct_tokens_twice():
    t = repeated_random_tokens(range(100, 160), S, 3, prefix=[1], suffix=[2], seed=4)
    assert t.shape == (3, 2 * S + 2) and t.dtype == torch.int64
    assert (t[:, 0] == 1).all() and (t[:, -1] == 2).all()
    r = t[:, 1:S + 1]
    assert torch.equal(r, t[:, S + 1:2 * S + 1])
    assert all(len(set(row.tolist())) == S and min(row) >= 100 and max(row) < 160 for row in r)
    assert torch.equal(t, repeated_random_tokens(range(100, 160), S, 3, prefix=[1], suffix=[2], seed=4))
    assert not torch.equal(t, repeated_random_tokens(range(100, 160), S, 3, prefix=[1], suffix=[2], seed=5))
    with pytest.raises(ConfigError, match="distinct ids"):
        repeated_random_tokens(range(5), 6, 1)


def _perfect(kind, s=S):
    """A perfect head on [BOS] r r: previous-token (row 0 on itself), or duplicate/induction (the second copy on
    the earlier copy / the token after it, every other row on BOS)."""
    n = 2 * s + 1
    A = torch.zeros(n, n, dtype=torch.float64)
    if kind == "previous_token":
        A[0, 0] = 1.0
        A[torch.arange(1, n), torch.arange(n - 1)] = 1.0
        return A
    A[: s + 1, 0] = 1.0
    k = torch.arange(s)
    A[s + 1 + k, (1 if kind == "duplicate_token" else 2) + k] = 1.0
    return A


def test_perfect_heads_on_repeated_random_tokens_score_transformerlens_numbers():
    tokens = _prompt()[0]
    n = 2 * S + 1
    for kind, want in (("previous_token", (n - 1) / n), ("duplicate_token", S / n), ("induction", S / n)):
        got = transformerlens_scores(_perfect(kind), tokens)
        assert getattr(got, kind).item() == pytest.approx(want, abs=1e-15), kind  # 18/19, 9/19, 9/19
        assert got.convention == "transformerlens" and got.measure == "mul" and got.causal
        # the same head in attnlab's convention (rows with a target only) scores 1
        assert getattr(pattern_scores(_perfect(kind), tokens), kind).item() == 1.0
        assert getattr(got, kind).item() == pytest.approx(
            _tl_score(_perfect(kind), {"previous_token": previous_token_pattern(n),
                                       "duplicate_token": duplicate_token_pattern(tokens),
                                       "induction": induction_pattern(tokens)}[kind], False, False, "mul"))
    # the induction head is no duplicate head and the other way round
    assert transformerlens_scores(_perfect("induction"), tokens).duplicate_token.item() == 0.0
    assert transformerlens_scores(_perfect("duplicate_token"), tokens).induction.item() == 0.0


@pytest.mark.parametrize("w", [1.0, 0.7, 0.0])
def test_the_stripe_and_detect_head_scores_of_a_constructed_induction_head(w):
    """[BOS] r r with s = 4 distinct tokens (n = 9): each second-copy row i puts w on i - s + 1 (the token after
    the earlier copy) and 1 - w on BOS, every other row all on BOS. The stripe score is w; TransformerLens'
    detect_head induction score is s w / n (4w/9: every row counts, so a perfect head scores 4/9, not 1);
    a head on i - s (the earlier copy itself, a duplicate head) has stripe 0."""
    s_, n = 4, 9
    tokens = torch.tensor([0, 11, 12, 13, 14, 11, 12, 13, 14])
    A = torch.zeros(n, n, dtype=torch.float64)
    A[:, 0] = 1.0
    for i in range(1 + s_, 1 + 2 * s_):
        A[i, 0], A[i, i - s_ + 1] = 1 - w, w
    assert torch.allclose(A.sum(-1), torch.ones(n, dtype=torch.float64))
    assert induction_stripe_score(A, s_, 1).item() == pytest.approx(w, abs=FLOAT64)
    assert transformerlens_scores(A, tokens).induction.item() == pytest.approx(s_ * w / n, abs=FLOAT64)
    D = torch.zeros(n, n, dtype=torch.float64)
    D[:, 0] = 1.0
    for i in range(1 + s_, 1 + 2 * s_):
        D[i, 0], D[i, i - s_] = 0.0, 1.0
    assert induction_stripe_score(D, s_, 1).item() == 0.0
    assert transformerlens_scores(D, tokens).duplicate_token.item() == pytest.approx(s_ / n, abs=FLOAT64)
    # per head over leading axes, and the causal chance level (1/s) sum_i 1/(i + 1) over the second copy
    both = torch.stack([A, D])[None]  # (1, 2, n, n)
    assert induction_stripe_score(both, s_, 1).tolist() == [[induction_stripe_score(A, s_, 1).item(), 0.0]]
    U = uniform_attention(n, causal=True)
    assert induction_stripe_score(U, s_, 1).item() == pytest.approx(sum(1 / (i + 1) for i in range(5, 9)) / s_,
                                                                    abs=FLOAT64)
    with pytest.raises(ConfigError, match="prefix \\+ 2 half <= n = 9"):
        induction_stripe_score(A, 5, 0)


def test_uniform_attention_scores_the_closed_form_chance_levels():
    tokens = _prompt()[0]
    n = 2 * S + 1
    bi = transformerlens_scores(uniform_attention(n), tokens)
    assert bi.previous_token.item() == pytest.approx((n - 1) / n**2, abs=1e-15)
    assert bi.duplicate_token.item() == pytest.approx(S / n**2, abs=1e-15)
    assert bi.induction.item() == pytest.approx(S / n**2, abs=1e-15)
    ca = transformerlens_scores(uniform_attention(n, causal=True), tokens)
    harmonic = sum(1 / k for k in range(1, n + 1))
    assert ca.previous_token.item() == pytest.approx((harmonic - 1) / n, abs=1e-15)
    later = sum(1 / (S + 2 + k) for k in range(S)) / n  # row s+1+k sees s+2+k keys, one of them the target
    assert ca.duplicate_token.item() == pytest.approx(later, abs=1e-15)
    assert ca.induction.item() == pytest.approx(later, abs=1e-15)


def test_prompts_are_scored_one_by_one_and_averaged_by_the_caller():
    tokens = _prompt(prompts=3)
    A = _random(2 * S + 1, 5, causal=True, batch=(3, 2))  # (prompts, heads, n, n)
    together = transformerlens_scores(A, tokens).induction
    alone = torch.stack([transformerlens_scores(A[b], tokens[b]).induction for b in range(3)])
    assert torch.allclose(together, alone, atol=1e-15, rtol=0)
