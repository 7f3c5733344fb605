"""Clark et al.'s labels: the thresholds, strict comparisons, key sets from tokens, summaries."""

from __future__ import annotations

import torch

from attnlab.analysis.heads.clark import (
    BROAD_ENTROPY_NATS,
    POSITION_THRESHOLD,
    SPECIAL_TOKEN_THRESHOLD,
    clark_key_sets,
    clark_labels,
)


def _shift(n, k):
    return torch.nn.functional.one_hot((torch.arange(n) + k).clamp(0, n - 1), n).double()


def test_the_thresholds_are_clarks():
    assert (BROAD_ENTROPY_NATS, POSITION_THRESHOLD, SPECIAL_TOKEN_THRESHOLD) == (3.8, 0.5, 0.6)


def test_previous_next_and_special_heads_by_hand():
    n = 7
    keys = {"[CLS]": [0], "[SEP]": [n - 1]}
    labels = clark_labels(torch.stack([_shift(n, -1), _shift(n, 1), _shift(n, n)]), keys=keys)
    assert labels.labels((0,)) == ["previous"]  # 6/7 on the subdiagonal
    assert labels.labels((1,)) == ["next"]  # rows are queries: next is the superdiagonal
    assert labels.labels((2,)) == ["special:[SEP]"]  # every row on the last token
    assert labels.broad.tolist() == [False, False, False]


def test_comparisons_are_strict():
    def head(p):  # row 0 on itself; rows 1..4 put p on i - 1, the rest on i: previous = 4 p / 5
        A = (1 - p) * torch.eye(5, dtype=torch.float64) + p * _shift(5, -1)
        A[0] = torch.eye(5, dtype=torch.float64)[0]
        return A

    at = clark_labels(head(0.625))  # 4 * 0.625 / 5 = 0.5 exactly
    assert at.stats.previous.item() == POSITION_THRESHOLD and not bool(at.previous)
    assert bool(clark_labels(head(0.626)).previous)


def test_broad_needs_more_than_45_keys():
    # uniform attention over n keys has entropy ln n; 3.8 nats is uniform over e^3.8 ~ 44.7 keys
    assert not bool(clark_labels(torch.full((43, 43), 1 / 43, dtype=torch.float64)).broad)
    assert bool(clark_labels(torch.full((47, 47), 1 / 47, dtype=torch.float64)).broad)
    causal = torch.ones(47, 47, dtype=torch.float64).tril()
    causal = causal / causal.sum(-1, keepdim=True)
    s = clark_labels(causal, causal=True)
    assert not bool(s.broad) and s.stats.uniform_entropy.item() < 3.8  # mean ln(i + 1) over 47 rows


def test_key_sets_from_tokens_and_the_summary_line():
    tokens = ["[CLS]", "a", ",", "b", ".", "[SEP]", "c"]
    sets = clark_key_sets(tokens)
    assert sets["[CLS]"].tolist() == [True] + [False] * 6
    assert sets["punctuation"].tolist() == [False, False, True, False, True, False, False]
    A = torch.zeros(7, 7, dtype=torch.float64)
    A[:, 5] = 0.7
    A[:, 1] = 0.3
    labels = clark_labels(A, keys=sets)
    assert labels.labels() == ["special:[SEP]"]
    line = labels.summary()
    assert line.startswith("special:[SEP]: entropy") and "(> 3.8" in line and "(> 0.5)" in line
    assert line.endswith("[CLS] 0.000, [SEP] 0.700, punctuation 0.000 (> 0.6)")


def test_labels_index_layers_and_heads():
    A = torch.stack([torch.stack([_shift(5, -1), _shift(5, 1)]), torch.stack([torch.eye(5).double(), _shift(5, 1)])])
    labels = clark_labels(A)  # (2 layers, 2 heads)
    assert labels.previous.tolist() == [[True, False], [False, False]]
    assert labels.labels((1, 1)) == ["next"] and labels.labels((1, 0)) == []
