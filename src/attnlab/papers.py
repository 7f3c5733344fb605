"""The five texts attnlab makes executable, by short name."""

from __future__ import annotations

from dataclasses import dataclass

from attnlab.errors import UnknownNameError


@dataclass(frozen=True)
class Paper:
    name: str
    title: str
    file: str


PAPERS: dict[str, Paper] = {
    p.name: p
    for p in (
        Paper("invertibility", "Invertibility of the attention matrix", "invertibility-of-the-attention-matrix.md"),
        Paper("rank-collapse", "Rank collapse and low-rank notes (Xie, 2021)", "rank-collapse-and-low-rank-notes.md"),
        Paper("logic", "Logic in self-attention", "logic-in-self-attention.md"),
        Paper("transformer-math", "The math behind transformers", "math-behind-transformers.md"),
        Paper("memorization", "Memorization capacity of multi-head attention", "memorization-capacity-of-mha.md"),
    )
}


def get_paper(name: str) -> Paper:
    try:
        return PAPERS[name]
    except KeyError:
        raise UnknownNameError(
            f"unknown paper {name!r}: choose one of {', '.join(PAPERS)}"
        ) from None
