"""English text that ships with Python, as BERT-style examples (memorization-capacity-of-mha App. J).

The corpus is ``pydoc_data.topics`` (the language reference topics of Python's own documentation,
~465k characters; it changes with the Python version, so examples are deterministic per version).
Only prose is kept: paragraphs with indented lines (code, grammar), heading underlines and
grammar rules (``::=``) are dropped, and the rest is split into sentences.

An example, as App. J builds BERT's pre-training inputs, is exactly n tokens:

    [CLS] segment_1 [SEP] segment_2 [SEP]

segment_1 is the token stream from a random sentence start (crossing sentence ends, as BERT's
segments do), segment_2 continues right after the sentence where segment_1 stops with probability
1/2 ("is next") and starts at a random other sentence otherwise; their lengths add up to n - 3, the
split drawn uniformly in [(n-3)/4, 3(n-3)/4]. The query is the [CLS] position, the context the
whole input (App. J). Examples start at distinct sentences and repeated token sequences are
skipped, so no two examples are equal.

A decoder's example (App. J's GPT-2 setting, :func:`running_text_examples`) is n consecutive tokens
of the same stream from a random sentence start, with no markers; its query is the last position,
the one a next-token prediction is read from.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from attnlab.errors import ConfigError

CLS, SEP, PAD = "[CLS]", "[SEP]", "[PAD]"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\"'])")
_WORD = re.compile(r"[a-z0-9]+|[^\sa-z0-9]")
_MIN_WORDS = 4


def _prose(paragraph: str) -> bool:
    lines = paragraph.splitlines()
    return bool(lines) and not any(
        ln.startswith((" ", "\t")) or "::=" in ln or set(ln.strip()) <= set("*=-~^") for ln in lines)


@lru_cache(maxsize=1)
def english_sentences() -> tuple[str, ...]:
    """The prose sentences of ``pydoc_data.topics``, in topic-name order."""
    from pydoc_data.topics import topics

    out = []
    for key in sorted(topics):
        for paragraph in re.split(r"\n\s*\n", topics[key]):
            if _prose(paragraph):
                out.extend(s for s in split_sentences(paragraph) if len(s.split()) >= _MIN_WORDS)
    return tuple(out)


def split_sentences(text: str) -> list[str]:
    """``text`` as sentences, in order: paragraphs (split at blank lines) with their whitespace
    collapsed, each cut after ". ! ?" followed by a capital, a quote or "(". Nothing is dropped."""
    out = []
    for paragraph in re.split(r"\n\s*\n", text):
        flat = " ".join(paragraph.split())
        if flat:
            out.extend(s for s in _SENTENCE_END.split(flat) if s)
    return out


def word_tokens(text: str) -> list[str]:
    """Lower-cased words and single punctuation marks: "Hello, world." -> [hello, ",", world, "."]."""
    return _WORD.findall(text.lower())


@dataclass(frozen=True)
class TextExamples:
    """T examples of n tokens: tokens[t] (n strings), segment (T, n) int64 (0 up to the first [SEP],
    1 after: BERT's token types), is_next (T,) bool, start (T,) the sentence index segment_1 starts at."""

    tokens: tuple[tuple[str, ...], ...]
    segment: np.ndarray
    is_next: np.ndarray
    start: np.ndarray

    @property
    def shape(self) -> tuple[int, int]:
        return self.segment.shape


class _Stream:
    """Tokens of the corpus sentences, tokenized on demand, read from any sentence on (wrapping)."""

    def __init__(self, sentences: Sequence[str], tokenize: Callable[[str], list[str]]):
        self.sentences, self.tokenize, self.cache = sentences, tokenize, {}

    def sentence(self, i: int) -> list[str]:
        i %= len(self.sentences)
        if i not in self.cache:
            self.cache[i] = list(self.tokenize(self.sentences[i]))
        return self.cache[i]

    def read(self, start: int, length: int) -> tuple[list[str], int]:
        """``length`` tokens from sentence ``start`` on -> (tokens, index of the last sentence used)."""
        out, i = [], start
        for _ in range(length + len(self.sentences)):  # bounded: empty sentences cannot loop forever
            out.extend(self.sentence(i))
            if len(out) >= length:
                return out[:length], i
            i += 1
        raise ConfigError("the tokenizer returned no tokens for the corpus: pass a tokenizer that splits text")


def english_examples(T: int, n: int, *, seed: int = 0,
                     tokenize: Callable[[str], list[str]] = word_tokens) -> TextExamples:
    """T BERT-style examples of exactly n tokens from :func:`english_sentences` (module docstring),
    deterministic given ``seed``; ``tokenize`` splits a sentence into tokens (default
    :func:`word_tokens`; pass a WordPiece tokenizer's ``tokenize`` for BERT/MiniLM)."""
    sentences = english_sentences()
    N = len(sentences)
    for name, v, lo in (("T", T, 1), ("n", n, 5), ("seed", seed, 0)):
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise ConfigError(f"{name} must be an integer >= {lo}, got {v!r}")
    if T > N:
        raise ConfigError(f"T={T} exceeds the {N} sentences of the corpus (examples start at distinct "
                          f"sentences): use T <= {N}")
    rng = np.random.default_rng(seed)
    order = rng.permutation(N)  # candidate starts, tried in this order until T distinct examples exist
    stream = _Stream(sentences, tokenize)
    seen, tokens, starts, nexts, segment = set(), [], [], [], np.zeros((T, n), dtype=np.int64)
    for start in order:
        ex, first_sep, is_next = _one_example(stream, int(start), n, rng, N)
        if ex in seen:  # short contexts of formulaic text can repeat: keep the examples distinct
            continue
        seen.add(ex)
        segment[len(tokens), first_sep + 1:] = 1  # [CLS] a [SEP] -> 0, b [SEP] -> 1
        tokens.append(ex)
        starts.append(int(start))
        nexts.append(is_next)
        if len(tokens) == T:
            return TextExamples(tuple(tokens), segment, np.array(nexts), np.array(starts))
    raise ConfigError(f"only {len(tokens)} distinct examples of n={n} tokens exist in the corpus: "
                      f"use T <= {len(tokens)}")


def running_text_examples(T: int, n: int, *, seed: int = 0,
                          tokenize: Callable[[str], list[str]] = word_tokens) -> tuple[tuple[str, ...], ...]:
    """T distinct examples of n consecutive tokens of running text (a decoder's input: no [CLS] or
    [SEP]), each from its own sentence start drawn with ``seed``, crossing sentence ends; ``tokenize``
    splits one sentence (for a byte-level BPE tokenizer pass one that sees the sentence after a space,
    so that every sentence starts as it would inside running text)."""
    sentences = english_sentences()
    N = len(sentences)
    for name, v, lo in (("T", T, 1), ("n", n, 1), ("seed", seed, 0)):
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise ConfigError(f"{name} must be an integer >= {lo}, got {v!r}")
    stream, seen, out = _Stream(sentences, tokenize), set(), []
    for start in np.random.default_rng(seed).permutation(N):
        ex = tuple(stream.read(int(start), n)[0])
        if ex not in seen:
            seen.add(ex)
            out.append(ex)
            if len(out) == T:
                return tuple(out)
    raise ConfigError(f"only {len(out)} distinct examples of n={n} tokens exist in the corpus: use T <= {len(out)}")


def _one_example(stream: _Stream, start: int, n: int, rng: np.random.Generator, N: int) -> tuple[tuple[int, ...], int, bool]:
    """[CLS] a [SEP] b [SEP] from sentence ``start`` -> (tokens, index of the first [SEP], is_next)."""
    m = n - 3  # tokens left for the two segments
    len_a = int(rng.integers(max(1, m // 4), max(2, 3 * m // 4 + 1)))
    is_next = bool(rng.random() < 0.5)
    other = int(rng.integers(0, N))  # segment_2 start when not "is next"
    a, last = stream.read(start, len_a)
    b, _ = stream.read(last + 1 if is_next else _not_near(other, start, last, N), m - len_a)
    return (CLS, *a, SEP, *b, SEP), len_a + 1, is_next


def _not_near(k: int, start: int, last: int, N: int) -> int:
    """A random sentence for segment_2 that is neither inside segment_1 nor the true next one."""
    span = (last - start) % N + 2  # sentences start..last+1
    return (start + span + k % max(1, N - span)) % N


@dataclass(frozen=True)
class Vocabulary:
    """Token string <-> id: [PAD] = 0, [CLS] = 1, [SEP] = 2, then the other tokens sorted."""

    itos: tuple[str, ...]

    @classmethod
    def from_examples(cls, examples: TextExamples) -> Vocabulary:
        words = sorted({w for ex in examples.tokens for w in ex} - {PAD, CLS, SEP})
        return cls((PAD, CLS, SEP, *words))

    def __len__(self) -> int:
        return len(self.itos)

    def ids(self, examples: TextExamples) -> np.ndarray:
        """(T, n) int64 token ids; a token outside the vocabulary raises ConfigError."""
        stoi = {w: i for i, w in enumerate(self.itos)}
        try:
            return np.array([[stoi[w] for w in ex] for ex in examples.tokens], dtype=np.int64)
        except KeyError as err:
            raise ConfigError(f"token {err.args[0]!r} is not in the vocabulary: build it with "
                              "Vocabulary.from_examples on these examples") from None
