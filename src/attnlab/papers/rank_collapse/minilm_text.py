"""Real inputs for the rank-collapse claims: all-MiniLM-L6-v2 (shipped, float64) on English
text that ships with Python (the help topics of ``pydoc_data.topics``)."""

from __future__ import annotations

import functools

import torch

from attnlab.pretrained import PretrainedModel, load_pretrained


@functools.lru_cache(maxsize=1)
def minilm() -> PretrainedModel:
    """all-MiniLM-L6-v2 in float64 on the CPU (loaded once per process)."""
    return load_pretrained("minilm", dtype=torch.float64)


def pydoc_texts(count: int, seed: int) -> list[str]:
    """``count`` distinct help topics of pydoc_data.topics (each thousands of characters),
    chosen by ``seed`` from the sorted topic names."""
    from pydoc_data.topics import topics

    names = sorted(topics)
    g = torch.Generator().manual_seed(seed)
    pick = torch.randperm(len(names), generator=g)[:count].tolist()
    return [" ".join(topics[names[i]].split()) for i in pick]  # whitespace collapsed
