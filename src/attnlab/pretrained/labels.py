"""Readable labels for tokens, for figures and tables.

A tokenizer's token strings are its internal spelling. Byte-level BPE (GPT-2, RoBERTa) maps
every byte to a printable character first, so a space becomes ``Ġ`` (U+0120) and a newline
``Ċ``: the token for " the" is ``Ġthe``, and a non-ASCII character is spread over several
such symbols. :func:`token_labels` decodes each token of such a tokenizer to its text, then
writes a space as ``▁`` (the SentencePiece convention, which XLM-R's tokens already use) and a
line break as ``↵``, so word starts stay visible on an axis. A character whose bytes are split
between tokens cannot be shown by either part alone: each part shows U+FFFD (``�``). WordPiece (BERT, MiniLM) and
SentencePiece tokens read as they are and are returned unchanged; so are special tokens.
The analyses keep matching the token strings themselves; only the displayed labels change.
"""

from __future__ import annotations

from typing import Any, Sequence

_BYTE_SPACE = "\u0120"  # byte-level BPE's symbol for the space byte


def is_byte_level(tokenizer: Any) -> bool:
    """True when ``tokenizer`` spells bytes as byte-level BPE symbols (it decodes ``Ġx`` to " x")."""
    try:
        return tokenizer.convert_tokens_to_string([_BYTE_SPACE + "x"]) == " x"
    except Exception:  # a tokenizer that cannot decode this symbol is not byte level
        return False


def token_labels(tokenizer: Any, tokens: Sequence[str]) -> list[str]:
    """One display label per token (module docstring); ``tokens`` as the tokenizer spells them."""
    if tokenizer is None or not is_byte_level(tokenizer):
        return list(tokens)
    special = set(getattr(tokenizer, "all_special_tokens", ()))
    out = []
    for t in tokens:
        if t in special:
            out.append(t)
            continue
        text = tokenizer.convert_tokens_to_string([t])
        out.append(text.replace(" ", "\u2581").replace("\r\n", "\u21b5").replace("\n", "\u21b5") or t)
    return out
