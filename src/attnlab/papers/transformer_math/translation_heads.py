"""The one-layer translation models of §3.1 trained and every head's maps fitted by Sigma, and the
training's timed wall-time estimate.

math-behind-transformers §3.1: an offline parallel corpus
(:mod:`~attnlab.papers.transformer_math.translation_corpus`) split into training and held-out pairs after
a seeded shuffle, word-level vocabularies capped at ``vocab_size``, one trained translator per head count
(:mod:`~attnlab.papers.transformer_math.translation_model`), and for ``n_eval`` held-out pairs whose sides
have at least ``crop`` tokens every head's encoder self-, decoder self- and cross-attention map, cropped to
its top-left crop x crop block with rows renormalised, fitted by
:func:`~attnlab.papers.transformer_math.head_fits.fit_heads` against the baselines of its mask (decoder
self-attention is causal).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from typing import Any, Protocol, Sequence

import numpy as np
import torch

from attnlab.errors import ConfigError
from attnlab.papers.transformer_math.head_fits import FitSettings, HeadFit, fit_heads
from attnlab.papers.transformer_math.sigma_fits import MASKS, Baselines
from attnlab.papers.transformer_math.translation_corpus import (
    BOS,
    EOS,
    ParallelCorpus,
    Vocabulary,
    bible_pair_count,
    load_parallel_corpus,
    resolved_corpus,
)
from attnlab.papers.transformer_math.translation_model import (
    ATTENTION_KINDS,
    TrainedTranslator,
    attention_maps,
    crop,
    step_seconds,
    train_translator,
)
from attnlab.runs.progress import Steps
from attnlab.training.processes import map_processes

TIMED_PADDED = 0.93  # a paper-preset batch's padded length over max_words + 1 (bible, seed 0: 30.8 / 33)
TIMED_TOKENS = 0.62  # its mean target tokens per row over max_words + 1 (20.3 / 33)
PARALLEL_SLOWDOWN = 1.1  # a step with two models side by side on 2 idle cores over one alone (assumed: the shared
# memory bandwidth and cache; benchmarks/bench_head_structure_training.py measures it)


class TranslatorSettings(FitSettings, Protocol):
    """What training and fitting the translation models read of a config (HeadStructureConfig's fields)."""

    corpus: str
    n_pairs: int
    heldout_fraction: float
    max_words: int
    vocab_size: int
    heads: tuple[int, ...]
    d_model: int
    d_ff: int
    dropout: float
    epochs: int
    batch_size: int
    lr: float
    n_eval: int
    seed: int
    device: str
    workers: int


def training_seconds(cfg: TranslatorSettings, workers: int) -> float:
    """The training's wall time: one timed step per head count (:func:`timed_step_seconds`) times epochs x
    ceil(training pairs / batch_size) steps, the head counts shared among ``workers`` (longest first, each
    to the least loaded), times PARALLEL_SLOWDOWN when more than one trains at once. The training pairs
    are (1 - heldout_fraction) of n_pairs, or of the bible's pairs where it has fewer."""
    pairs = cfg.n_pairs
    if resolved_corpus(cfg.corpus) == "bible":
        pairs = min(pairs, bible_pair_count(cfg.max_words))
    n_train = pairs - max(1, round(cfg.heldout_fraction * pairs))
    steps = cfg.epochs * math.ceil(n_train / cfg.batch_size)
    per_head = sorted((steps * timed_step_seconds(cfg, H) for H in cfg.heads), reverse=True)
    loads = [0.0] * workers
    for t in per_head:
        loads[loads.index(min(loads))] += t
    return max(loads) * (PARALLEL_SLOWDOWN if workers > 1 else 1.0)


def timed_step_seconds(cfg: TranslatorSettings, n_heads: int) -> float:
    """One training step's seconds at ``cfg``'s sizes with ``n_heads`` heads, timed once per process for
    given sizes (:func:`~attnlab.papers.transformer_math.translation_model.step_seconds`): B rows padded to
    TIMED_PADDED (max_words + 1) positions per side, row r holding a share rising evenly from the shortest
    to all, TIMED_TOKENS (max_words + 1) target tokens on average."""
    L = cfg.max_words + 1
    padded = max(1, round(TIMED_PADDED * L))
    lo = max(1, round((2 * TIMED_TOKENS - TIMED_PADDED) * L))  # the rows' mean is (lo + padded) / 2
    rows = min(cfg.batch_size, cfg.n_pairs)
    lengths = tuple(round(lo + (padded - lo) * r / max(1, rows - 1)) for r in range(rows))
    return _timed_step(cfg.vocab_size, n_heads, cfg.d_model, cfg.d_ff, cfg.dropout, lengths, cfg.max_words + 2,
                       str(cfg.device))


@functools.cache
def _timed_step(V: int, n_heads: int, d_model: int, d_ff: int, dropout: float, lengths: tuple[int, ...],
                max_len: int, device: str) -> float:
    return step_seconds(V, V, n_heads=n_heads, d_model=d_model, d_ff=d_ff, dropout=dropout, src_lengths=lengths,
                        tgt_lengths=lengths, max_len=max_len, device=device)


def _frequencies(tokens: Sequence[str], vocab: Vocabulary, n_sentences: int) -> torch.Tensor:
    """Training counts of the tokens at each key position; the specials count once per sentence."""
    return torch.tensor([float(n_sentences) if t in (BOS, EOS) else float(vocab.frequency(t)) for t in tokens],
                        dtype=torch.float64)


def _train_one(data: tuple, kwargs: dict, n_heads: int) -> TrainedTranslator:
    """One translator with ``n_heads`` heads on ``data`` (train, held, vocabularies): a picklable call."""
    return train_translator(*data, n_heads=n_heads, **kwargs)


def train_models(cfg: TranslatorSettings, train: Any, held: Any, src_vocab: Vocabulary,
                 tgt_vocab: Vocabulary) -> list[TrainedTranslator]:
    """One trained translator per head count of ``cfg.heads``, in that order.

    Nothing couples the models, and each trains on one intra-op thread (:func:`train_translator`), so
    on a CPU they train side by side in ``cfg.workers`` processes
    (:func:`attnlab.training.processes.map_processes`): on 2 cores the 1- and the 8-head model together
    take about as long as the 8-head one alone. A model is the same bit for bit in a worker as here.
    Progress: one line per model trained, with an ETA."""
    kwargs = dict(d_model=cfg.d_model, d_ff=cfg.d_ff, dropout=cfg.dropout, epochs=cfg.epochs,
                  batch_size=cfg.batch_size, lr=cfg.lr, seed=cfg.seed, max_len=cfg.max_words + 2, device=cfg.device)
    steps = Steps("translation models trained", len(cfg.heads))
    fn = functools.partial(_train_one, (train, held, src_vocab, tgt_vocab), kwargs)
    workers = cfg.workers if str(cfg.device) == "cpu" else 1
    return map_processes(fn, cfg.heads, workers, on_done=lambda k, n: steps.advance(k))


@dataclass(frozen=True)
class TranslationHeads:
    """The translation models trained and their heads fitted (:func:`fit_translation_heads`)."""

    corpus: ParallelCorpus
    models: list[TrainedTranslator]  # one per head count, in the config's order
    rows: list[HeadFit]  # every head of every model and kind, mass_kept set
    figure_maps: dict[tuple[int, str], tuple[list[HeadFit], list[str], list[str]]]  # (H, kind) -> (rows, query
    # tokens, key tokens) of the first fitted pair
    sizes: tuple[int, int, int, int, int]  # training pairs, held-out pairs, fitted pairs, EN and IT vocabularies


def fit_translation_heads(cfg: TranslatorSettings, base: dict[str, Baselines]) -> TranslationHeads:
    """Train one translator per head count on the corpus split after a seeded shuffle and fit every head's
    maps (three kinds, cropped to crop x crop) on ``n_eval`` held-out pairs whose sides have at least
    crop - 1 words, against ``base[mask]`` (decoder self-attention causal, the rest bidirectional)."""
    corpus = load_parallel_corpus(cfg.corpus, n_pairs=cfg.n_pairs, max_words=cfg.max_words, seed=cfg.seed)
    pairs = list(corpus.pairs)
    order = np.random.default_rng(cfg.seed).permutation(len(pairs))
    n_held = max(1, int(round(cfg.heldout_fraction * len(pairs))))
    held = [pairs[k] for k in order[:n_held]]
    train = [pairs[k] for k in order[n_held:]]
    src_vocab = Vocabulary([e for e, _ in train], cfg.vocab_size)
    tgt_vocab = Vocabulary([i for _, i in train], cfg.vocab_size)
    evals = [p for p in held if len(p[0]) + 1 >= cfg.crop and len(p[1]) + 1 >= cfg.crop][: cfg.n_eval]
    if not evals:
        raise ConfigError(f"no held-out pair has both sides >= {cfg.crop - 1} words: raise n_pairs or lower crop")
    models, rows, maps_for_figs = [], [], {}
    trained = train_models(cfg, train, held, src_vocab, tgt_vocab)
    for H, t in zip(cfg.heads, trained):
        models.append(t)
        maps = attention_maps(t.model, evals, src_vocab, tgt_vocab, cfg.device)
        src_tok = [(list(e) + [EOS])[: cfg.crop] for e, _ in evals]  # the encoder's input, cropped
        tgt_tok = [([BOS] + list(i))[: cfg.crop] for _, i in evals]  # the decoder's input, cropped
        for kind in ATTENTION_KINDS:
            cropped = [crop(m[kind], cfg.crop) for m in maps]
            keys = src_tok if kind != "decoder self" else tgt_tok
            vocab = src_vocab if kind != "decoder self" else tgt_vocab
            freqs = [_frequencies(k, vocab, len(train)) for k in keys]
            special = [[p for p, t in enumerate(k) if t in (BOS, EOS)] for k in keys]
            causal = kind == "decoder self"
            r = fit_heads([c for c, _ in cropped], freqs, causal=causal, cfg=cfg, seed=cfg.seed,
                          model=f"translation {H} head{'s' if H > 1 else ''}", kind=kind, base=base[MASKS[causal]],
                          special=special)
            kept = float(torch.stack([m for _, m in cropped]).mean())
            r = [replace(row, mass_kept=kept) for row in r]
            rows += r
            maps_for_figs[(H, kind)] = (r, tgt_tok[0] if kind != "encoder self" else src_tok[0],
                                        src_tok[0] if kind != "decoder self" else tgt_tok[0])
    return TranslationHeads(corpus, models, rows, maps_for_figs,
                            (len(train), len(held), len(evals), len(src_vocab), len(tgt_vocab)))
