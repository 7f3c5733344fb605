"""English examples from pydoc_data.topics: App. J's [CLS] s1 [SEP] s2 [SEP] format, exactly n tokens."""

from __future__ import annotations

import numpy as np
import pytest

from attnlab.data import (
    CLS,
    SEP,
    Vocabulary,
    english_examples,
    english_sentences,
    split_sentences,
    word_tokens,
)
from attnlab.errors import ConfigError


def test_corpus_is_prose_sentences():
    s = english_sentences()
    assert len(s) > 1500
    assert all(len(x.split()) >= 4 and "::=" not in x for x in s)
    assert sum(len(x) for x in s) > 150_000  # a large share of the ~465k characters survives
    assert s[0].startswith("Assert statements are a convenient way")


def test_split_sentences_keeps_every_sentence_in_order():
    text = "First one. Second (2) here!\n\n  Third\n   wraps lines? \"Quoted.\" end"
    assert split_sentences(text) == ["First one.", "Second (2) here!", "Third wraps lines?", '"Quoted." end']
    assert split_sentences(" \n\n \t") == []


def test_word_tokens():
    assert word_tokens('Hello, "world" 3.11!') == ["hello", ",", '"', "world", '"', "3", ".", "11", "!"]


def test_examples_have_the_bert_format():
    T, n = 300, 29
    ex = english_examples(T, n, seed=4)
    assert ex.shape == (T, n) and len(ex.tokens) == T
    for toks, seg in zip(ex.tokens, ex.segment):
        assert len(toks) == n and toks[0] == CLS and toks[-1] == SEP and toks.count(SEP) == 2
        first = toks.index(SEP)
        assert 1 + (n - 3) // 4 <= first <= 1 + 3 * (n - 3) // 4  # segment_1 length in [m/4, 3m/4]
        assert (seg[:first + 1] == 0).all() and (seg[first + 1:] == 1).all()
    assert len(set(ex.tokens)) == T  # distinct sentence starts: no two examples equal
    p = ex.is_next.mean()
    assert abs(p - 0.5) < 4 * np.sqrt(0.25 / T)


def test_is_next_continues_at_the_following_sentence():
    sents = english_sentences()
    ex = english_examples(200, 40, seed=1)
    checked = 0
    for t in np.flatnonzero(ex.is_next)[:40]:
        toks = ex.tokens[t]
        a, b = list(toks[1:toks.index(SEP)]), list(toks[toks.index(SEP) + 1:-1])
        i, stream = int(ex.start[t]), []
        while len(stream) < len(a):  # the sentence where segment_1 ends
            stream += word_tokens(sents[i % len(sents)])
            i += 1
        assert stream[:len(a)] == a
        following = []
        while len(following) < len(b):
            following += word_tokens(sents[i % len(sents)])
            i += 1
        assert following[:len(b)] == b
        checked += 1
    assert checked == 40


def test_examples_are_deterministic_given_the_seed_and_use_the_tokenizer():
    a, b = english_examples(50, 12, seed=7), english_examples(50, 12, seed=7)
    assert a.tokens == b.tokens and np.array_equal(a.segment, b.segment)
    assert english_examples(50, 12, seed=8).tokens != a.tokens
    up = english_examples(50, 12, seed=7, tokenize=lambda s: s.upper().split())
    assert all(w.isupper() or not w.isalpha() for ex in up.tokens for w in ex)


def test_vocabulary_ids():
    ex = english_examples(40, 16, seed=0)
    vocab = Vocabulary.from_examples(ex)
    ids = vocab.ids(ex)
    assert ids.shape == (40, 16) and ids.dtype == np.int64
    assert (ids[:, 0] == 1).all() and (ids == 2).sum() == 80 and vocab.itos[:3] == ("[PAD]", CLS, SEP)
    assert [[vocab.itos[i] for i in row] for row in ids] == [list(t) for t in ex.tokens]
    other = english_examples(40, 16, seed=99)
    with pytest.raises(ConfigError, match="not in the vocabulary"):
        Vocabulary(vocab.itos[:3]).ids(other)


@pytest.mark.parametrize("kw, needle", [
    (dict(T=0, n=10), "T must be an integer >= 1"),
    (dict(T=5, n=4), "n must be an integer >= 5"),
    (dict(T=5, n=10, seed=-2), "seed must be an integer >= 0"),
    (dict(T=10**6, n=10), "exceeds the"),
])
def test_bad_arguments(kw, needle):
    with pytest.raises(ConfigError, match=needle):
        english_examples(**kw)
