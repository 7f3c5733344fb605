"""Token labels for figures: byte-level BPE symbols decoded, WordPiece left as it is."""

from __future__ import annotations

import pytest

from attnlab.pretrained import minilm_model_dir
from attnlab.pretrained.labels import is_byte_level, token_labels


@pytest.fixture(scope="module")
def byte_level():
    """A byte-level BPE tokenizer (GPT-2's scheme) trained here on a few words."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import PreTrainedTokenizerFast

    t = ByteLevelBPETokenizer()
    t.train_from_iterator(["the cat sat on the mat.\nthe end, naïve café"] * 5, vocab_size=280, min_frequency=1,
                          special_tokens=["<|endoftext|>"])
    return PreTrainedTokenizerFast(tokenizer_object=t._tokenizer, eos_token="<|endoftext|>")


def test_byte_level_symbols_become_text_with_visible_spaces(byte_level):
    tokens = byte_level.convert_ids_to_tokens(byte_level("the cat\non the mat.<|endoftext|>")["input_ids"])
    assert "\u0120cat" in tokens and "\u010a" in tokens  # Ġcat and Ċ: the tokenizer's own spelling
    labels = token_labels(byte_level, tokens)
    assert is_byte_level(byte_level) and len(labels) == len(tokens)
    assert labels[tokens.index("\u0120cat")] == "\u2581cat" and labels[tokens.index("\u010a")] == "\u21b5"
    assert labels[-1] == "<|endoftext|>"  # special tokens as they are
    # joined back, the labels are the text with ▁ for spaces and ↵ for the line break
    assert "".join(labels[:-1]) == "the\u2581cat\u21b5on\u2581the\u2581mat."


def test_a_character_split_between_tokens_shows_the_replacement_character(byte_level):
    tokens = byte_level.convert_ids_to_tokens(byte_level("naïve café")["input_ids"])
    labels = token_labels(byte_level, tokens)
    assert "".join(labels).replace("\ufffd", "") in ("na" "ve\u2581café", "naïve\u2581café")
    assert all(lab for lab in labels)


def test_wordpiece_tokens_are_returned_unchanged():
    from transformers import BertTokenizerFast

    tok = BertTokenizerFast.from_pretrained(minilm_model_dir())
    tokens = tok.convert_ids_to_tokens(tok("the cat naïve embedding")["input_ids"])
    assert not is_byte_level(tok)
    assert token_labels(tok, tokens) == tokens == ["[CLS]", "the", "cat", "naive", "em", "##bed", "##ding", "[SEP]"]
    assert token_labels(None, tokens) == tokens
