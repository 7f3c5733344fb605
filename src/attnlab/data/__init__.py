"""Data that ships offline: English text from Python's own documentation (:mod:`attnlab.data.english`)."""

from attnlab.data.english import (
    CLS,
    SEP,
    TextExamples,
    Vocabulary,
    english_examples,
    english_sentences,
    running_text_examples,
    split_sentences,
    word_tokens,
)

__all__ = ["CLS", "SEP", "TextExamples", "Vocabulary", "english_examples", "english_sentences",
           "running_text_examples", "split_sentences", "word_tokens"]
