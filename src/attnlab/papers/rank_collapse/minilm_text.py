"""Real inputs for the rank-collapse claims: all-MiniLM-L6-v2 (shipped, float64) on English
text that ships with Python (the help topics of ``pydoc_data.topics``)."""

from __future__ import annotations

import functools

import torch

from attnlab.errors import ConfigError

from attnlab.pretrained import PretrainedModel, load_pretrained


MIN_CHARS = 4000


@functools.lru_cache(maxsize=1)
def minilm() -> PretrainedModel:
    """all-MiniLM-L6-v2 in float64 on the CPU (loaded once per process)."""
    return load_pretrained("minilm", dtype=torch.float64)


def pydoc_texts(count: int, seed: int) -> list[str]:
    """``count`` distinct help topics of pydoc_data.topics, chosen by ``seed`` from the sorted
    names of those with at least MIN_CHARS characters (enough for 256 MiniLM tokens)."""
    from pydoc_data.topics import topics

    names = sorted(k for k, v in topics.items() if len(v) >= MIN_CHARS)
    g = torch.Generator().manual_seed(seed)
    pick = torch.randperm(len(names), generator=g)[:count].tolist()
    return [" ".join(topics[names[i]].split()) for i in pick]  # whitespace collapsed


@functools.lru_cache(maxsize=8)
def minilm_attention(n_tokens: int, seed: int) -> torch.Tensor:
    """Every head's attention weights of MiniLM on one help topic cut to ``n_tokens`` tokens:
    (L H, n, n) = (72, n, n), float64, rows summing to 1 (one text: no padding)."""
    out = minilm().run(pydoc_texts(1, seed), max_tokens=n_tokens, output_hidden_states=False)
    P = torch.cat(out.attentions, dim=1)[0]  # (L H, n, n)
    if P.shape[-1] != n_tokens:
        raise ConfigError(f"the help topic for seed {seed} has only {P.shape[-1]} tokens; ask for at most that many")
    return P
