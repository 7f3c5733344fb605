"""``attnlab analyze``: every head of a pretrained model on real text, classified by the published criteria.

Order of work, chosen so that bad input costs nothing and a finished computation is kept:

1. check the options, read the text (default: the prose of ``pydoc_data.topics``, English that
   ships with Python, :func:`attnlab.data.english_sentences`), check ``--out``; then load the
   model (:func:`attnlab.pretrained.load_pretrained`). Any bad input is a one-line ConfigError
   before a directory is created;
2. cut the text into segments of at most ``max_tokens`` tokens (special tokens included) and
   keep ``segments`` of them, evenly spaced through the text;
3. create the run directory, write config.json, env.json and segments.json (the token ids fed,
   the repeated-random-token prompts included, so every number can be recomputed); run the
   model once per batch of segments and analyse each segment's maps A (L, H, n, n) on its own
   (no padding reaches an analysis), then the prompts;
4. write heads.json and results.json, then build report.html and report.md. results.json also
   holds segment 0's maps (its first 64 tokens, in thousandths, under ~2 MB) as an interactive
   block: report.html shows them in an offline attention viewer (:mod:`attnlab.reports.viewer`),
   with the picked head's scores of heads.json (:data:`VIEWER_SCORES`, to four significant digits)
   and its rank among all heads beside the map.

Segments. The text is split into sentences (:func:`attnlab.data.split_sentences`; the default
corpus is already sentences) and consecutive sentences are packed greedily into documents of at
most ``max_tokens - s`` tokens, s the tokenizer's special tokens (a longer sentence is cut). For
a model with sentence pairs (the BERT family: a [SEP] token and two token types) a document of
two or more sentences becomes ``[CLS] A [SEP] B [SEP]`` with A and B consecutive runs of its
sentences split where their token counts are closest, the input Clark et al. 2019 analysed
(two consecutive paragraphs) and the one Kovaleva et al.'s "block" pattern needs; otherwise a
document is one sequence.

Per head, per segment b, the numbers of :mod:`attnlab.analysis.heads` (all in float64):

    Clark et al. 2019    H (smoothed entropy, nats), mean distance, a_{i,i-1}, a_{i,i+1} and the
                         mass on [CLS], [SEP] (the tokenizer's cls/sep tokens, bos/eos where it
                         has none) and punctuation (". ,"): :func:`head_statistics`
    Kovaleva et al. 2019 template fits m_T for vertical ([CLS] and [SEP] columns; the most
                         attended column where the segment has neither), diagonal,
                         vertical+diagonal and block (sentence A / B as segments)
    Voita et al. 2019    the fraction of rows whose maximum is at offset -1 / +1; confidence
                         without [SEP] (their EOS); rare-token mass and argmax fraction, with
                         token frequencies counted in the analysed segments themselves (the
                         paper used the training corpus' frequencies, which this run lacks)
    attnlab, on the text previous-token, duplicate-token and induction scores in attnlab's
                         convention ("mul" over the rows that have a target, so a perfect head
                         scores 1; bidirectional patterns for a bidirectional model):
                         :func:`pattern_scores`, descriptive (natural text repeats few tokens)

and, apart from the text, TransformerLens' own scores on its repeated-random-token prompts:
``REPEATED_PROMPTS`` prompts [BOS] r r (the tokenizer's [CLS] r r [SEP] for the BERT family),
r = min(50, what fits in ``max_tokens``) distinct random ordinary tokens, scored by its
``detect_head`` definitions ("mul", no exclusions, lower-triangular patterns, every row
counted: :func:`transformerlens_scores`) and averaged over the prompts. A perfect head scores
(n - 1)/n (previous-token) and s/n (duplicate-token, induction), not 1.

Chance levels. Every score is also computed for uniform attention under the model's mask
(:func:`uniform_attention`: 1/n per key bidirectionally, 1/(i + 1) on row i causally) on the
same inputs, argmax scores with ties split at random; heads.json holds them ("chance", keyed
as the per-head numbers, and beside every threshold in "criteria", with where the threshold
comes from: the paper, its code, or attnlab's choice).

Every number is averaged over the segments (NaN-aware: a segment that has no row to score,
e.g. no repeated token for induction, is left out of that average), and the labels are decided
on the averages with the modules' own rules and constants, as Clark et al. do (statistics
averaged over documents, then compared with the thresholds):
:func:`~attnlab.analysis.heads.clark_labels_from_statistics`,
:func:`~attnlab.analysis.heads.kovaleva_decide`,
:func:`~attnlab.analysis.heads.voita_labels_from_scores`. Layers and heads are numbered from 0.
"""

from __future__ import annotations

import datetime as _dt
import math
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import torch

from attnlab.analysis.heads import (
    BROAD_ENTROPY_NATS,
    CLARK_SMOOTHING,
    KOVALEVA_PATTERNS,
    MIX_SHARE,
    PATTERN_THRESHOLD,
    POSITION_THRESHOLD,
    POSITIONAL_FRACTION,
    RARE_TOKEN_FRACTION,
    REPEATED_HALF,
    SPECIAL_TOKEN_THRESHOLD,
    HeadStatistics,
    clark_labels,
    clark_labels_from_statistics,
    kovaleva_decide,
    kovaleva_patterns,
    pattern_scores,
    repeated_random_tokens,
    token_mask,
    transformerlens_scores,
    uniform_attention,
    voita_labels,
    voita_labels_from_scores,
)
from attnlab.analysis.heads.maps import CLARK_PUNCTUATION
from attnlab.analysis.heads.voita import VOITA_OFFSETS
from attnlab.checks import info
from attnlab.config import check_choice, check_device, check_int
from attnlab.errors import ConfigError
from attnlab.pretrained.labels import token_labels
from attnlab.results import (
    ExperimentResult,
    Table,
    bar_figure,
    heatmap_figure,
    heatmap_panel,
    line_figure,
    series,
)
from attnlab.runs import analyze_evidence as ev
from attnlab.runs.rundir import CONFIG, REPORT_HTML, RunDir, to_jsonable, utc_now

DEFAULT_MAX_TOKENS = 128  # Clark et al.'s segments are at most 128 tokens
DEFAULT_SEGMENTS = 8
MAX_SEGMENTS = 1024
GRID_TOKENS = 48  # the map grid shows the first 48 queries and keys of segment 0
ZOOM_TOKENS = 28  # the labelled panels, one token label per row and column
BATCH = 8
DTYPES = ("float32", "float64")
HEADS_JSON, SEGMENTS_JSON = "heads.json", "segments.json"
KEY_SETS = ("[CLS]", "[SEP]", "punctuation")
TL_KINDS = ("previous_token", "duplicate_token", "induction")
REPEATED_PROMPTS = 8  # TransformerLens-style prompts [BOS] r r, averaged as its detect_head averages a list
REPEATED_SEED = 0
TEXT_SCORES = "attnlab scores on the text"
TL_REPEATED = "TransformerLens (repeated random tokens)"
DEFAULT_TEXT = "pydoc_data.topics"

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class Segments:
    """The analysed inputs: per segment its token ids, token strings and token types (sentence A = 0,
    B = 1; None for a model without token types), unpadded; ``pairs``: inputs are [CLS] A [SEP] B [SEP];
    ``labels``: the tokens as figures show them (:func:`attnlab.pretrained.labels.token_labels`)."""

    input_ids: list[list[int]]
    tokens: list[list[str]]
    token_type_ids: list[list[int]] | None
    pairs: bool
    documents: int  # how many documents the text gave (the segments are evenly spaced among them)
    cut_sentences: int  # sentences longer than a segment, cut to fit
    labels: list[list[str]]


@dataclass(frozen=True)
class Analysis:
    """What :func:`analyze` returns: the run directory and the per-head payload, exactly as heads.json
    holds it (plain JSON; a number no segment could give, e.g. a block fit without sentence pairs, is "nan").
    In Jupyter it shows the run's report.html (:mod:`attnlab.reports.notebook`)."""

    path: Path
    payload: dict

    def _repr_html_(self) -> str:
        from attnlab.reports.notebook import report_frame

        return report_frame(Path(self.path) / REPORT_HTML)


# ---- input ------------------------------------------------------------------------------------
def read_text(text: str | Path | None) -> tuple[str, list[str]]:
    """(source, sentences): the default corpus, or the sentences of a UTF-8 text file."""
    from attnlab.data import english_sentences, split_sentences

    if text is None:
        return DEFAULT_TEXT, list(english_sentences())
    p = Path(text).expanduser()
    if not p.exists():
        raise ConfigError(f"--text {text} does not exist: give a UTF-8 text file (or leave --text out for the "
                          "English of pydoc_data.topics)")
    if not p.is_file():
        raise ConfigError(f"--text {text} is not a file: give a UTF-8 text file")
    try:
        content = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"--text {text} is not UTF-8 text (byte {e.start}): convert it to UTF-8") from None
    except OSError as e:
        raise ConfigError(f"cannot read --text {text}: {e.strerror or e}") from None
    sentences = split_sentences(content)
    if not sentences:
        raise ConfigError(f"--text {text} is empty (no words): give a file with text in it")
    return str(p), sentences


def check_out(out: str | Path) -> Path:
    """``out`` as a place for a new run directory: not a file, not a non-empty directory."""
    p = Path(out)
    if not str(out).strip():
        raise ConfigError("--out is empty; give a directory path")
    if p.exists() and not p.is_dir():
        raise ConfigError(f"--out {out} is a file, not a directory; choose another --out")
    if p.is_dir() and any(p.iterdir()):
        what = "already holds a run" if (p / CONFIG).is_file() else "is not empty"
        raise ConfigError(f"--out {out} {what}; choose a new or empty directory (nothing in it is changed)")
    return p


def default_out(model: str) -> Path:
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    name = Path(model).name if Path(model).exists() else model
    return Path("runs") / f"analyze-{''.join(c if c.isalnum() or c in '-_.' else '_' for c in name)}-{stamp}"


def special_tokens(tokenizer) -> dict[str, str | None]:
    """The strings of Clark's [CLS] and [SEP] for this tokenizer (cls/sep, else bos/eos; None if neither)."""
    return {"[CLS]": tokenizer.cls_token or tokenizer.bos_token, "[SEP]": tokenizer.sep_token or tokenizer.eos_token}


def make_segments(pm, sentences: Sequence[str], max_tokens: int, count: int) -> Segments:
    """``count`` segments of at most ``max_tokens`` tokens, evenly spaced through ``sentences``
    (module docstring, "Segments")."""
    tok = pm.tokenizer
    pairs = bool(pm.architecture.type_vocab_size >= 2 and tok.sep_token is not None)
    budget = max_tokens - tok.num_special_tokens_to_add(pair=pairs)
    if budget < 1:
        raise ConfigError(f"--max-tokens {max_tokens} leaves no room for text beside the model's special tokens: "
                          f"use --max-tokens >= {max_tokens - budget + 1}")
    lengths = [len(ids) for ids in tok(list(sentences), add_special_tokens=False)["input_ids"]]
    docs, current, size, cut = [], [], 0, 0
    for s, n in zip(sentences, lengths):
        if n == 0:
            continue
        cut += n > budget
        if current and size + min(n, budget) > budget:
            docs.append(current)
            current, size = [], 0
        current.append((s, n))
        size += min(n, budget)
    if current:
        docs.append(current)
    if not docs:
        raise ConfigError("the text has no tokens for this tokenizer: give a file with words in it")
    k = min(count, len(docs))
    picked = [docs[round(i * (len(docs) - 1) / (k - 1))] if k > 1 else docs[0] for i in range(k)]
    if pairs:
        a_texts, b_texts = [], []
        for doc in picked:
            a, b = _split_pair(doc)
            a_texts.append(a)
            b_texts.append(b)
        has_b = [b is not None for b in b_texts]
        enc_pairs = tok([a for a, h in zip(a_texts, has_b) if h], [b for b in b_texts if b is not None],
                        truncation=True, max_length=max_tokens) if any(has_b) else None
        enc_single = tok([a for a, h in zip(a_texts, has_b) if not h], truncation=True,
                         max_length=max_tokens) if not all(has_b) else None
        ids, types, ip, isg = [], [], 0, 0
        for h in has_b:
            enc, j = (enc_pairs, ip) if h else (enc_single, isg)
            ids.append(list(enc["input_ids"][j]))
            types.append(list(enc["token_type_ids"][j]) if "token_type_ids" in enc else [0] * len(ids[-1]))
            ip, isg = ip + h, isg + (not h)
    else:
        enc = tok([" ".join(s for s, _ in doc) for doc in picked], truncation=True, max_length=max_tokens)
        ids = [list(x) for x in enc["input_ids"]]
        types = [[0] * len(x) for x in ids] if pm.architecture.type_vocab_size else None
    tokens = [tok.convert_ids_to_tokens(x) for x in ids]
    return Segments(ids, tokens, types, pairs, len(docs), cut, [token_labels(tok, t) for t in tokens])


def _split_pair(doc: list[tuple[str, int]]) -> tuple[str, str | None]:
    """Sentences -> (A, B) split where the token counts of A and B are closest; B None for one sentence."""
    if len(doc) < 2:
        return doc[0][0], None
    total, run, best, at = sum(n for _, n in doc), 0, math.inf, 1
    for m in range(1, len(doc)):
        run += doc[m - 1][1]
        if abs(total - 2 * run) < best:
            best, at = abs(total - 2 * run), m
    return " ".join(s for s, _ in doc[:at]), " ".join(s for s, _ in doc[at:])


def segment_maps(pm, segs: Segments, batch: int = BATCH, *, hidden: bool = False):
    """Yield (b, A) for every segment: A (L, H, n_b, n_b), the attention weights of its real tokens
    (with ``hidden``, (b, A, hidden states) as :func:`model_maps`)."""
    yield from model_maps(pm, segs.input_ids, segs.token_type_ids, batch, hidden=hidden)


def model_maps(pm, input_ids: Sequence[Sequence[int]], token_type_ids=None, batch: int = BATCH, *,
               hidden: bool = False):
    """Yield (b, A) for every input b: A (L, H, n_b, n_b), the attention weights of its real tokens
    (inputs of different lengths are padded at the end within a batch and the padding cut off again);
    with ``hidden`` (b, A, [X_0..X_L]), each X_l (n_b, d) the residual stream of the real tokens."""
    for start in range(0, len(input_ids), batch):
        rows = [list(r) for r in input_ids[start:start + batch]]
        n = max(map(len, rows))
        ids = torch.zeros(len(rows), n, dtype=torch.int64)
        pad = torch.ones(len(rows), n, dtype=torch.bool)
        types = torch.zeros(len(rows), n, dtype=torch.int64) if token_type_ids is not None else None
        for i, r in enumerate(rows):
            ids[i, :len(r)] = torch.tensor(r)
            pad[i, :len(r)] = False
            if types is not None:
                types[i, :len(r)] = torch.tensor(list(token_type_ids[start + i]))
        dev = pm.device
        out = pm.forward(ids.to(dev), pad.to(dev), token_type_ids=None if types is None else types.to(dev),
                         position_ids=pm.position_ids(pad).to(dev), output_hidden_states=hidden)
        A = torch.stack(list(out.attentions), 1).cpu()  # (B, L, H, n, n)
        for i, r in enumerate(rows):
            if hidden:
                yield start + i, A[i, :, :, :len(r), :len(r)], [X[i, :len(r)].cpu() for X in out.hidden_states]
            else:
                yield start + i, A[i, :, :, :len(r), :len(r)]


# ---- per segment ------------------------------------------------------------------------------
def analyse_segment(A: torch.Tensor, input_ids: Sequence[int], tokens: Sequence[str], token_types, *,
                    causal: bool, specials: dict, frequencies: dict[int, int]) -> dict[str, torch.Tensor]:
    """Every per-head number of one segment (module docstring), each (L, H) (offset fractions (L, H, 2)),
    straight from the classifiers of :mod:`attnlab.analysis.heads`; and under "chance:<name>" the same
    number for uniform attention under the model's mask (:func:`uniform_attention`), each (1, 1): the
    chance level of every score, argmax scores read with ties split (a random tie-break)."""
    keys = {"[CLS]": token_mask(tokens, [specials["[CLS]"]] if specials["[CLS]"] else []),
            "[SEP]": token_mask(tokens, [specials["[SEP]"]] if specials["[SEP]"] else []),
            "punctuation": token_mask(tokens, CLARK_PUNCTUATION)}
    freq = torch.tensor([float(frequencies[int(t)]) for t in input_ids], dtype=torch.float64)
    segments = torch.tensor(list(token_types)) if token_types is not None and len(set(token_types)) > 1 else None
    ids = torch.tensor(list(input_ids))
    out = _scores(A, ids, keys, segments, freq, causal=causal, ties="count")
    U = uniform_attention(len(input_ids), causal=causal)[None, None]
    out.update({f"chance:{k}": v for k, v in _scores(U, ids, keys, segments, freq, causal=causal,
                                                     ties="split").items()})
    return out


def _scores(A, ids, keys, segments, freq, *, causal: bool, ties: str) -> dict[str, torch.Tensor]:
    clark = clark_labels(A, causal=causal, keys=keys)
    vertical = keys["[CLS]"] | keys["[SEP]"]
    kov = kovaleva_patterns(A, special=vertical if bool(vertical.any()) else None, segments=segments, causal=causal)
    voita = voita_labels(A, causal=causal, frequencies=freq, exclude=keys["[SEP]"], ties=ties)
    text = pattern_scores(A, ids, causal=causal)
    s = clark.stats
    return {"entropy": s.entropy, "uniform_entropy": s.uniform_entropy, "distance": s.distance,
            "previous": s.previous, "self": s.self_, "next": s.next, "max_weight": s.confidence,
            **{f"to_{k}": v for k, v in s.to_keys.items()},
            **{f"kovaleva_{k}": v for k, v in kov.scores.items()},
            "offset_fractions": voita.offset_fractions, "confidence": voita.confidence,
            "rare_mass": voita.rare_mass, "rare_argmax": voita.rare_argmax,
            **{f"text_{k}": getattr(text, k) for k in TL_KINDS}}


# ---- TransformerLens on repeated random tokens ----------------------------------------------------
@dataclass(frozen=True)
class RepeatedPrompts:
    """The prompts of TransformerLens' induction tutorials, framed for this tokenizer: prefix, r, r, suffix
    with r ``half`` distinct random ordinary tokens (:func:`repeated_random_tokens`); prefix [BOS] where the
    model has one, else the tokenizer's own framing ([CLS] ... [SEP] for the BERT family)."""

    input_ids: torch.Tensor  # (prompts, n)
    token_type_ids: list[list[int]] | None
    half: int
    prefix: list[int]
    suffix: list[int]
    seed: int

    @property
    def length(self) -> int:
        return int(self.input_ids.shape[-1])

    def perfect(self) -> dict[str, float]:
        """What a perfect head scores (row 0 attends itself): (n - 1)/n, s/n, s/n."""
        n, s_ = self.length, self.half
        return {"previous_token": (n - 1) / n, "duplicate_token": s_ / n, "induction": s_ / n}


def repeated_prompts(pm, max_tokens: int, count: int = REPEATED_PROMPTS, seed: int = REPEATED_SEED
                     ) -> RepeatedPrompts | None:
    """``count`` prompts of at most ``max_tokens`` tokens (half = min(REPEATED_HALF, what fits)); None if no
    token fits. The random tokens are the tokenizer's ordinary ones (special tokens and BERT's [unused*]
    slots left out) that the model's embedding has rows for."""
    tok = pm.tokenizer
    bare = list(tok("text", add_special_tokens=False)["input_ids"])
    framed = list(tok("text")["input_ids"])
    cut = next((i for i in range(len(framed) - len(bare) + 1) if framed[i:i + len(bare)] == bare), 0)
    prefix, suffix = [int(x) for x in framed[:cut]], [int(x) for x in framed[cut + len(bare):]]
    if not prefix and tok.bos_token_id is not None:
        prefix = [int(tok.bos_token_id)]
    special = set(tok.all_special_ids)
    size = min(len(tok), pm.architecture.vocab_size)
    names = tok.convert_ids_to_tokens(list(range(size)))
    vocabulary = [i for i, t in enumerate(names) if i not in special and t is not None
                  and not t.startswith("[unused")]
    half = min(REPEATED_HALF, (max_tokens - len(prefix) - len(suffix)) // 2, len(vocabulary))
    if half < 1:
        return None
    ids = repeated_random_tokens(vocabulary, half, count, prefix=prefix, suffix=suffix, seed=seed)
    types = [[0] * ids.shape[-1] for _ in range(count)] if pm.architecture.type_vocab_size else None
    return RepeatedPrompts(ids, types, half, prefix, suffix, seed)


def repeated_scores(pm, prompts: RepeatedPrompts, causal: bool) -> dict[str, torch.Tensor]:
    """TransformerLens' three scores (:func:`transformerlens_scores`), each (L, H), the mean over the prompts
    as its ``detect_head`` averages a list; under "chance:<kind>" uniform attention's, (1, 1)."""
    per = [transformerlens_scores(A, prompts.input_ids[b])
           for b, A in model_maps(pm, prompts.input_ids.tolist(), prompts.token_type_ids)]
    U = uniform_attention(prompts.length, causal=causal)[None, None]
    chance = transformerlens_scores(U.expand(len(prompts.input_ids), 1, 1, -1, -1), prompts.input_ids)
    out = {k: torch.stack([getattr(p, k) for p in per]).mean(0) for k in TL_KINDS}
    out.update({f"chance:{k}": getattr(chance, k).mean(0) for k in TL_KINDS})
    return out


def average(per_segment: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """The mean over segments of every number, NaN-aware (NaN only where no segment has one)."""
    return {k: torch.nanmean(torch.stack([d[k] for d in per_segment]), 0) for k in per_segment[0]}


def decide(avg: dict[str, torch.Tensor]) -> dict:
    """The labels of the averaged numbers, by the analysis modules' own rules and constants."""
    stats = HeadStatistics(entropy=avg["entropy"], uniform_entropy=avg["uniform_entropy"],
                           distance=avg["distance"], previous=avg["previous"], self_=avg["self"],
                           next=avg["next"], confidence=avg["max_weight"],
                           to_keys={k: avg[f"to_{k}"] for k in KEY_SETS})
    return {"clark": clark_labels_from_statistics(stats),
            "kovaleva": kovaleva_decide(avg["kovaleva_vertical"], avg["kovaleva_diagonal"], avg["kovaleva_block"]),
            "voita": voita_labels_from_scores(avg["offset_fractions"], VOITA_OFFSETS, avg["confidence"],
                                              rare_mass=avg["rare_mass"], rare_argmax=avg["rare_argmax"])}


def thresholds() -> dict:
    """Every threshold the labels use, read from the analysis modules."""
    return {"clark": {"broad_entropy_nats": BROAD_ENTROPY_NATS, "position": POSITION_THRESHOLD,
                      "special_token": SPECIAL_TOKEN_THRESHOLD, "entropy_smoothing": CLARK_SMOOTHING},
            "kovaleva": {"pattern": PATTERN_THRESHOLD, "mix_share": MIX_SHARE},
            "voita": {"positional_fraction": POSITIONAL_FRACTION, "rare_token_fraction": RARE_TOKEN_FRACTION},
            "transformerlens": {"measure": "mul", "exclude_bos": False, "exclude_current_token": False}}


CLARK_CODE = "Clark et al.'s code (General_Analysis.ipynb: the head behaviours of their clustering, §6)"
KOVALEVA_CHOICE = ("attnlab's choice: Kovaleva et al. labelled maps by hand and trained a CNN, with no threshold; "
                   "0.6 is Clark et al.'s special-token threshold, the 0.2 share attnlab's")
VOITA_TEXT = "Voita et al. 2019 (\"at least 90% of the time\")"
VOITA_CHOICE = "attnlab's choice: Voita et al. give no number for rare-token heads (the positional 90% carried over)"
NO_THRESHOLD = "no threshold: the highest heads are listed"


def criteria() -> list[dict]:
    """Every label's rule: criteria, label, score (its heads.json key), relation, threshold, where the
    threshold comes from (the paper, its code, or attnlab's choice) and the rule in words. The chance
    level of each score is added by the run (heads.json "criteria")."""
    t = thresholds()
    c, k, v = t["clark"], t["kovaleva"], t["voita"]

    def row(framework, label, score, relation, threshold, source, rule):
        return {"criteria": framework, "label": label, "score": score, "relation": relation, "threshold": threshold,
                "threshold_from": source, "rule": rule}

    clark, kov, voita = "Clark et al. 2019", "Kovaleva et al. 2019", "Voita et al. 2019"
    rows = [
        row(clark, "broad", "entropy", ">", c["broad_entropy_nats"], CLARK_CODE,
            f"mean smoothed entropy > {c['broad_entropy_nats']:g} nats "
            f"(a' = {c['entropy_smoothing']:g} a + {1 - c['entropy_smoothing']:.4g}/|K|)"),
        row(clark, "previous", "previous", ">", c["position"], CLARK_CODE, f"mean a(i, i-1) > {c['position']:g}"),
        row(clark, "next", "next", ">", c["position"], CLARK_CODE, f"mean a(i, i+1) > {c['position']:g}"),
        *(row(clark, f"special:{name}", key, ">", c["special_token"], CLARK_CODE,
              f"mean attention to {what} > {c['special_token']:g}")
          for name, key, what in (("[CLS]", "to_cls", "[CLS]"), ("[SEP]", "to_sep", "[SEP]"),
                                  ("punctuation", "to_punctuation", f"punctuation ({' '.join(CLARK_PUNCTUATION)})"))),
        row(kov, "vertical", "kovaleva_scores.vertical", ">=", k["pattern"], KOVALEVA_CHOICE,
            f"fit on [CLS]/[SEP] columns >= {k['pattern']:g}"),
        row(kov, "diagonal", "kovaleva_scores.diagonal", ">=", k["pattern"], KOVALEVA_CHOICE,
            f"fit on keys i-1, i, i+1 >= {k['pattern']:g}"),
        row(kov, "vertical+diagonal", "kovaleva_scores.vertical+diagonal", ">=", k["pattern"], KOVALEVA_CHOICE,
            f"vertical + diagonal >= {k['pattern']:g}, each >= {k['mix_share']:g}"),
        row(kov, "block", "kovaleva_scores.block", ">=", k["pattern"], KOVALEVA_CHOICE,
            f"fit on the query's own sentence (A or B) >= {k['pattern']:g}"),
        row(kov, "heterogeneous", None, None, None, "", "none of the above (first rule that holds wins, in this order)"),
        row(voita, "positional -1", "voita_argmax_previous", ">=", v["positional_fraction"], VOITA_TEXT,
            f"row maximum on key i-1 in >= {v['positional_fraction']:g} of the rows"),
        row(voita, "positional +1", "voita_argmax_next", ">=", v["positional_fraction"], VOITA_TEXT,
            f"row maximum on key i+1 in >= {v['positional_fraction']:g} of the rows"),
        row(voita, "rare-token", "rare_argmax", ">=", v["rare_token_fraction"], VOITA_CHOICE,
            f"row maximum on the segment's rarest token in >= {v['rare_token_fraction']:g} of the rows"),
    ]
    for kind in TL_KINDS:
        name = kind.replace("_", "-")
        rows.append(row(TEXT_SCORES, name, f"text_{kind}", None, None, NO_THRESHOLD,
                        "attention on the pattern / attention of the rows that have a target, on the text"))
    for kind in TL_KINDS:
        name = kind.replace("_", "-")
        rows.append(row(TL_REPEATED, name, f"tl_repeated_{kind}", None, None, NO_THRESHOLD,
                        "TransformerLens detect_head (\"mul\", no exclusions): attention on its pattern / all "
                        "attention, on repeated random tokens"))
    return rows


# ---- the command -------------------------------------------------------------------------------
def analyze(model: str | Path = "minilm", *, text: str | Path | None = None, max_tokens: int = DEFAULT_MAX_TOKENS,
            segments: int = DEFAULT_SEGMENTS, out: str | Path | None = None, device: str = "cpu",
            dtype: str = "float32", argv: Sequence[str] | None = None,
            progress: Progress | None = None, ablate: str = "top") -> Analysis:
    """Analyse every head of ``model`` on ``text`` into a run directory (module docstring); return it
    with the per-head payload that heads.json and ``attnlab analyze --json`` hold."""
    from attnlab.pretrained import load_pretrained
    from attnlab.pretrained.loader import SHIPPED

    start = time.perf_counter()
    check_int("--max-tokens", max_tokens, 2)
    check_int("--segments", segments, 1, MAX_SEGMENTS)
    check_choice("--dtype", dtype, DTYPES)
    ev.check_ablate(ablate)
    device = check_device(device, "--device")
    source, sentences = read_text(text)
    path = check_out(out) if out is not None else default_out(str(model))
    if progress:
        progress("loading the model", 0, segments + 2)
    if not Path(str(model)).expanduser().exists() and str(model).lower() not in SHIPPED:
        raise ConfigError(f"--model {model}: no shipped model has that name and no such directory exists; use "
                          f"{' or '.join(sorted(SHIPPED))}, or a checkpoint directory (config.json and weights)")
    pm = load_pretrained(model, dtype=dtype, device=device)
    if pm.tokenizer is None:
        raise ConfigError(f"{pm.path} has no usable tokenizer ({pm.tokenizer_error}): analyze feeds text, so the "
                          "checkpoint directory needs its tokenizer files")
    limit = pm.architecture.max_len - pm.architecture.position_offset
    check_int(f"--max-tokens (this model has {limit} positions)", max_tokens, 2, limit)
    segs = make_segments(pm, sentences, max_tokens, segments)
    causal = bool(pm.model.causal)
    config = {"command": "analyze", "title": f"Attention heads of {Path(str(model)).name}",
              "model": str(model), "checkpoint": str(pm.path), "model_type": pm.architecture.model_type,
              "text": source, "max_tokens": max_tokens, "segments": segments, "dtype": dtype, "device": device,
              "ablate": ablate, "created": utc_now()}
    rd = RunDir.create(path)
    rd.write_config(config, list(argv or []))
    rd.write_env(seed=0, device=device)
    prompts = repeated_prompts(pm, max_tokens)
    rd.write_json(SEGMENTS_JSON, {"input_ids": segs.input_ids, "token_type_ids": segs.token_type_ids,
                                  "tokens": segs.tokens, "labels": segs.labels, "pairs": segs.pairs,
                                  "repeated_random_tokens": None if prompts is None else {
                                      "input_ids": prompts.input_ids.tolist(), "half": prompts.half,
                                      "prefix": prompts.prefix, "suffix": prompts.suffix, "seed": prompts.seed}})
    frequencies = Counter(t for ids in segs.input_ids for t in ids)
    specials = special_tokens(pm.tokenizer)
    total = len(segs.input_ids) + 5
    per_segment, first = [], None
    for b, A, hidden in segment_maps(pm, segs, hidden=True):
        if progress:
            progress(f"segment {b + 1}/{len(segs.input_ids)}", b + 1, total)
        per_segment.append(analyse_segment(
            A, segs.input_ids[b], segs.tokens[b], None if segs.token_type_ids is None else segs.token_type_ids[b],
            causal=causal, specials=specials, frequencies=frequencies))
        per_segment[-1].update(ev.per_segment(pm, A, hidden, segs.input_ids[b]))
        if b == 0:
            first = A
    avg = average(per_segment)
    cis = ev.intervals(per_segment, [k for k in per_segment[0] if not k.startswith("chance:")])
    avg.update(ev.weights(pm))
    done = len(segs.input_ids) + 1
    ablations = ev.run_ablations(pm, segs.input_ids, ablate, progress=(lambda what: progress(what, done, total))
                                 if progress else None)
    if progress:
        progress("repeated random tokens", len(segs.input_ids) + 2, total)
    L, H = avg["entropy"].shape
    nan = torch.full((L, H), float("nan"), dtype=torch.float64)
    rep = repeated_scores(pm, prompts, causal) if prompts is not None else {
        **{k: nan for k in TL_KINDS}, **{f"chance:{k}": nan[:1, :1] for k in TL_KINDS}}
    avg.update({f"tl_repeated_{k}" if not k.startswith("chance:") else f"chance:tl_repeated_{k[7:]}": v
                for k, v in rep.items()})
    induction = ev.induction_ablations(pm, prompts, avg["tl_repeated_induction"], ablate)
    labels = decide(avg)
    payload = _payload(config, pm, segs, causal, specials, avg, labels, prompts, cis, ablations, induction)
    rd.write_json(HEADS_JSON, payload)
    result = _result(payload, avg, first, segs)
    rd.write_results({"experiments": {"analyze": {
        "id": "analyze", "description": f"every head of {config['model']} ({config['model_type']}, "
                                         f"{'causal' if causal else 'bidirectional'}) on {len(segs.input_ids)} "
                                         f"segments of {source}",
        "config": config, "status": "ok", "results": result.to_dict(),
        "seconds": round(time.perf_counter() - start, 3), "finished": utc_now()}}})
    if progress:
        progress("report", len(segs.input_ids) + 3, total)
    from attnlab.reports import build_report

    build_report(rd.path)
    return Analysis(rd.path, to_jsonable(payload))  # as heads.json holds it: NaN as "nan"


PER_HEAD = {  # heads.json key -> the averaged number it holds
    "entropy": "entropy", "uniform_entropy": "uniform_entropy", "distance": "distance", "previous": "previous",
    "self": "self", "next": "next", "to_cls": "to_[CLS]", "to_sep": "to_[SEP]", "to_punctuation": "to_punctuation",
    "max_weight": "max_weight", "confidence": "confidence", "rare_mass": "rare_mass", "rare_argmax": "rare_argmax",
    **{f"text_{k}": f"text_{k}" for k in TL_KINDS}, **{f"tl_repeated_{k}": f"tl_repeated_{k}" for k in TL_KINDS},
}
KOVALEVA_TEMPLATES = ("vertical", "diagonal", "vertical+diagonal", "block")


def _chance(avg: dict) -> dict:
    """Uniform attention's value of every per-head score (heads.json "chance", keyed as the heads)."""
    one = {key: avg[f"chance:{src}"].reshape(-1)[0].item() for key, src in PER_HEAD.items()}
    f = avg["chance:offset_fractions"].reshape(-1, len(VOITA_OFFSETS))[0]
    one["voita_argmax_previous"], one["voita_argmax_next"] = f[VOITA_OFFSETS.index(-1)].item(), f[
        VOITA_OFFSETS.index(1)].item()
    one["kovaleva_scores"] = {k: avg[f"chance:kovaleva_{k}"].reshape(-1)[0].item() for k in KOVALEVA_TEMPLATES}
    return one


def _lookup(d: dict, key: str):
    for part in key.split("."):
        d = d[part]
    return d


EVIDENCE = ("sink", "sink_norm", "dla", "copying", "copying_positive_fraction", "qk_norm", "ov_norm")


def _payload(config: dict, pm, segs: Segments, causal: bool, specials: dict, avg: dict, labels: dict,
             prompts: RepeatedPrompts | None, cis: dict | None = None, ablations=None, induction=None) -> dict:
    clark, kov, voita = labels["clark"], labels["kovaleva"], labels["voita"]
    L, H = avg["entropy"].shape
    cis = cis or {}
    n_heads, n_kv = ev.grouping(pm)
    group = n_heads // n_kv
    present = {k: any(specials[k] in t for t in segs.tokens) if specials[k] else False for k in ("[CLS]", "[SEP]")}
    heads = []
    for l in range(L):
        for h in range(H):
            i = (l, h)
            f = {o: avg["offset_fractions"][l, h, j].item() for j, o in enumerate(VOITA_OFFSETS)}
            x = {"layer": l, "head": h, **{key: avg[src][i].item() for key, src in PER_HEAD.items()}}
            x.update({
                "clark": clark.labels(i),
                "kovaleva": KOVALEVA_PATTERNS[int(kov[i])],
                "kovaleva_scores": {k: avg[f"kovaleva_{k}"][i].item() for k in KOVALEVA_TEMPLATES},
                "voita": ([f"positional {int(voita.positional_offset[i]):+d}"] if bool(voita.positional[i]) else [])
                + (["rare-token"] if bool(voita.rare[i]) else []),
                "voita_argmax_previous": f[-1], "voita_argmax_next": f[1],
                "kv_head": h // group,
                **{k: avg[k][i].item() for k in EVIDENCE if k in avg},
                "ci": {key: cis[src][i].tolist() for key, src in {**PER_HEAD, **{k: k for k in EVIDENCE}}.items()
                       if src in cis},
            })
            if ablations is not None:
                x["ablation"] = ev.head_ablation_rows(ablations, l, h)
            if induction is not None and (l, h) in induction.exact["zero"]:
                x["induction_ablation"] = ev.head_ablation_rows(induction, l, h)
            heads.append(x)
    counts = {"clark": {name: sum(name in x["clark"] for x in heads) for name in
                        ("broad", "previous", "next", "special:[CLS]", "special:[SEP]", "special:punctuation")},
              "kovaleva": {p: sum(x["kovaleva"] == p for x in heads) for p in KOVALEVA_PATTERNS},
              "voita": {"positional -1": sum("positional -1" in x["voita"] for x in heads),
                        "positional +1": sum("positional +1" in x["voita"] for x in heads),
                        "rare-token": sum("rare-token" in x["voita"] for x in heads),
                        "no role": sum(not x["voita"] for x in heads)}}
    counts["clark"]["special (any)"] = sum(any(c.startswith("special") for c in x["clark"]) for x in heads)
    counts["clark"]["no label"] = sum(not x["clark"] for x in heads)
    chance = _chance(avg)
    chance["sink"] = avg["chance:sink"].reshape(-1)[0].item()
    crit = [{**r, "chance": None if r["score"] is None else _lookup(chance, r["score"])} for r in criteria()]
    repeated = None if prompts is None else {
        "prompts": int(prompts.input_ids.shape[0]), "half": prompts.half, "length": prompts.length,
        "prefix": pm.tokenizer.convert_ids_to_tokens(prompts.prefix),
        "suffix": pm.tokenizer.convert_ids_to_tokens(prompts.suffix), "seed": prompts.seed,
        "perfect_head": prompts.perfect(), "chance": {k: chance[f"tl_repeated_{k}"] for k in TL_KINDS}}
    notes = [
        f"Layers and heads are numbered from 0. Every number is the mean over {len(segs.input_ids)} segments "
        f"of at most {config['max_tokens']} tokens (of {segs.documents} documents the text gave, evenly spaced), "
        "each segment analysed on its own; labels are decided on those means.",
        "Chance levels: every score is also computed for uniform attention under the model's mask "
        f"({'causal: 1/(i+1) on row i' if causal else 'bidirectional: 1/n on every key'}) on the same inputs, "
        "argmax scores with ties split at random; a head is only evidence of a pattern where its score stands "
        "well above that level (the criteria table and heads.json \"chance\" give it beside each threshold).",
        "Which thresholds come from the papers: Clark et al.'s three are the constants of their code and Voita "
        f"et al.'s positional {POSITIONAL_FRACTION:g} is their text; Kovaleva et al.'s {PATTERN_THRESHOLD:g} and "
        f"{MIX_SHARE:g} (they labelled by hand and trained a CNN) and Voita's rare-token {RARE_TOKEN_FRACTION:g} "
        "(the paper gives no number) are attnlab's choices.",
        "Voita's rare-token role uses token frequencies counted in the analysed segments themselves "
        "(the paper used its training corpus), so 'rare' means rarest in this text.",
        f"The {TEXT_SCORES} (text prev, dup, ind) are previous-token, duplicate-token and induction scores in "
        "attnlab's convention (the attention on the pattern over the rows that have a target, so a perfect head "
        "scores 1) on the natural text, where repeated tokens are few: descriptive only, and not TransformerLens' "
        "numbers, which the TL columns give.",
    ]
    if prompts is not None:
        n, s_ = prompts.length, prompts.half
        perfect = prompts.perfect()
        notes.append(
            f"{TL_REPEATED}: TransformerLens' detect_head definitions (\"mul\", no exclusions, its lower-triangular "
            f"patterns) on {repeated['prompts']} prompts {' '.join(repeated['prefix'])} r r "
            f"{' '.join(repeated['suffix'])}, r = {s_} distinct random tokens (n = {n}), averaged over the prompts "
            f"as detect_head averages a list. Every row counts, so a perfect head scores "
            f"{perfect['previous_token']:.3f} = (n-1)/n (previous-token) and {perfect['induction']:.3f} = s/n "
            f"(duplicate-token, induction); uniform attention scores "
            + ", ".join(f"{repeated['chance'][k]:.3f}" for k in TL_KINDS) + ".")
        if not causal:
            notes.append("This model is bidirectional; TransformerLens' head detector asserts lower-triangular "
                         "patterns (it scores decoder models only), so here each of its scores is the share of all "
                         "attention, later keys included, that lands on the earlier target: attention from the "
                         "first copy forward to the second, the same pairs read the other way, counts against "
                         "the head.")
    else:
        notes.append(f"--max-tokens {config['max_tokens']} leaves no room for a repeated random token, so the "
                     f"{TL_REPEATED} scores are not computed (NaN).")
    for k, ok in present.items():
        if not ok:
            notes.append(f"The analysed text holds no {k} token of this tokenizer ({specials[k] or 'it has none'}): "
                         f"attention to {k} is 0 and no head can be special:{k}."
                         + (" Kovaleva's vertical columns fall back to each map's most attended column."
                            if k == "[CLS]" and not present["[SEP]"] else ""))
    if segs.pairs:
        block = chance["kovaleva_scores"]["block"]
        if math.isfinite(block):
            notes.append(f"Kovaleva's block fit of uniform attention (its chance level) is {block:.2f} on these "
                         f"segments (sentences A and B are about equal halves), against the threshold "
                         f"{PATTERN_THRESHOLD:g}, so a block label is weak evidence of attention bound to its sentence.")
    if segs.cut_sentences:
        notes.append(f"{segs.cut_sentences} sentence(s) of the text are longer than a segment; a segment "
                     "holding one is cut at --max-tokens.")
    if not segs.pairs:
        notes.append("Inputs are single sequences (no sentence pairs for this model), so Kovaleva's block pattern "
                     "is undefined (NaN) and never assigned.")
    notes.append(
        f"Attention sinks: the mean weight on the first token is compared with uniform attention under the model's "
        f"mask ({chance['sink']:.3f} here: "
        + ("mean_i 1/(i+1), the causal baseline" if causal else "1/n, the bidirectional baseline")
        + "); the value-weighted share (Kobayashi et al. 2020) is the share of the vector norm a query receives "
        "from the first token, ||a_i1 v_1 W_O|| / sum_j ||a_ij v_j W_O||: a head that rests on a first token "
        "with a small value vector moves little from it.")
    notes.append("Copying score (Elhage et al. 2021): sum lambda / sum |lambda| over the eigenvalues of the full OV "
                 "circuit W_E diag(gamma_1) W_V W_O diag(gamma_f) W_U, computed from its d_v x d_v equivalent; 1 for "
                 "a head that copies the attended token to the output, -1 for one that suppresses it."
                 + ("" if getattr(pm.model, "lm_head", "none") != "none" else
                    " This model has no output head, so W_U is W_E's transpose (a tied readout)."))
    if n_kv != n_heads:
        notes.append(f"Grouped-query attention: {n_heads} query heads share {n_kv} key/value heads per layer; "
                     f"heads h of one group (kv_head = h // {group}) read the same keys and values.")
    ablation = None
    if ablations is not None:
        top = sorted(ablations.exact["zero"])
        ablation = {"tokens": ablations.tokens, "segments": ablations.segments, "kinds": list(ev.KINDS),
                    "exact_heads": [list(t) for t in top], "base_loss": ablations.base_loss.mean().item(),
                    "seconds": round(ablations.seconds, 1), "mode": config.get("ablate", "top")}
        notes.append(
            f"Ablations: the change in next-token loss (nats per token) when a head's output z_h = P_h V_h is set "
            f"to zero, to its mean over every segment and position, or to the next segment's (resample), on "
            f"{ablations.segments} segments of their first {ablations.tokens} tokens (clean loss "
            f"{ablation['base_loss']:.3f}); 95% Student-t intervals over segments. Every head has the first-order "
            f"estimate (attribution patching: one backward pass); "
            + (f"the {len(top)} heads with the largest estimated effect are measured exactly (re-run from their layer)"
               if ablation["mode"] == "top" else "every head is measured exactly")
            + "; the 'measured' field of each head says which. A positive change means the head helps predict the text.")
    if induction is not None:
        notes.append(
            f"Induction, causally: the {len(induction.exact['zero'])} heads with the highest TransformerLens induction "
            f"scores are zero-, mean- and resample-ablated on the {induction.segments} repeated-random-token prompts, "
            f"and the change in loss is taken on the second copy only ({induction.tokens} predictions per prompt that "
            f"only copying from the first copy can make; clean loss {induction.base_loss.mean().item():.3f} nats), "
            "with 95% intervals over prompts.")
    if getattr(pm.model, "lm_head", "none") == "none":
        notes.append("No ablations: this model has no output head, so there is no next-token loss to measure.")
    induction_info = None if induction is None else {
        "heads": [list(t) for t in sorted(induction.exact["zero"])], "prompts": induction.segments,
        "scored_predictions": induction.tokens, "base_loss": induction.base_loss.mean().item(),
        "seconds": round(induction.seconds, 1)}
    return {"model": config["model"], "checkpoint": config["checkpoint"], "model_type": config["model_type"],
            "causal": causal, "layers": L, "heads_per_layer": H, "kv_heads_per_layer": n_kv,
            "ablation": ablation, "induction_ablation": induction_info, "segments": len(segs.input_ids),
            "max_tokens": config["max_tokens"], "text": config["text"], "dtype": config["dtype"],
            "special_tokens": specials, "sentence_pairs": segs.pairs, "thresholds": thresholds(),
            "criteria": crit, "chance": chance, "repeated_random_tokens": repeated,
            "counts": counts, "notes": notes, "heads": heads}


# ---- the report ---------------------------------------------------------------------------------
def _labels_text(x: dict) -> tuple[str, str]:
    return ", ".join(x["clark"]) or "–", ", ".join(x["voita"]) or "–"


def _result(payload: dict, avg: dict, first: torch.Tensor, segs: Segments) -> ExperimentResult:
    heads, L, H = payload["heads"], payload["layers"], payload["heads_per_layer"]
    causal, chance = payload["causal"], payload["chance"]
    rows = []
    for x in heads:
        clark, voita = _labels_text(x)
        rows.append([x["layer"], x["head"], *(_round(x[k], 2) for k in ("entropy", "distance")),
                     *(_round(x[k], 3) for k in ("previous", "next", "to_cls", "to_sep", "to_punctuation")),
                     clark, x["kovaleva"], voita,
                     *(_round(x[f"text_{k}"], 3) for k in TL_KINDS),
                     *(_round(x[f"tl_repeated_{k}"], 3) for k in TL_KINDS)])
    per_head = Table(
        "Per head (means over segments). text: attnlab's previous-token, duplicate-token, induction scores on the "
        "text; TL: TransformerLens' scores on repeated random tokens"
        + ("" if causal else " (a bidirectional model: see the notes)"),
        ["layer", "head", "entropy (nats)", "distance", "prev", "next", "[CLS]", "[SEP]", "punct.", "Clark",
         "Kovaleva", "Voita", "text prev", "text dup", "text ind", "TL prev", "TL dup", "TL ind"],
        rows, ["int", "int", "float", "float", "float", "float", "float", "float", "float", "text", "text", "text",
               "float", "float", "float", "float", "float", "float"])
    counts = payload["counts"]
    count_rows = ([["Clark", k, v] for k, v in counts["clark"].items()]
                  + [["Kovaleva", k, v] for k, v in counts["kovaleva"].items()]
                  + [["Voita", k, v] for k, v in counts["voita"].items()])
    count_table = Table(f"Heads per label (of {L * H})", ["criteria", "label", "heads"], count_rows,
                        ["text", "text", "int"])
    rule_table = Table(
        "Criteria, thresholds and chance levels (uniform attention under the model's "
        f"{'causal' if causal else 'bidirectional'} mask, on the same inputs)",
        ["criteria", "label", "rule", "threshold from", "chance"],
        [[r["criteria"], r["label"], r["rule"], _source(r) if r["threshold"] is not None else "–",
          "–" if r["chance"] is None else _round(r["chance"], 3)] for r in payload["criteria"]],
        ["text", "text", "text", "text", "float"])
    top = []
    rep = payload["repeated_random_tokens"]
    for name, prefix, perfect in ((TL_REPEATED, "tl_repeated_", rep and rep["perfect_head"]),
                                  (TEXT_SCORES, "text_", None)):
        for k in TL_KINDS:
            order = sorted(heads, key=lambda x: -_finite(x[f"{prefix}{k}"]))[:3]
            top.append([name, k.replace("_", "-"),
                        ", ".join(f"L{x['layer']} H{x['head']} ({x[f'{prefix}{k}']:.3f})" for x in order),
                        _round(chance[f"{prefix}{k}"], 3), "–" if not perfect else _round(perfect[k], 3)])
    tl_table = Table("Previous-token, duplicate-token and induction scores: the three highest heads",
                     ["scores", "pattern", "heads (score)", "chance", "perfect head"], top,
                     ["text", "text", "text", "float", "float"])
    tables = [count_table, rule_table, tl_table, *_evidence_tables(payload), per_head]
    return ExperimentResult(summary=_summary(payload), tables=tables,
                            figures=_figures(payload, avg, first, segs) + _evidence_figures(payload, avg),
                            notes=list(payload["notes"]), interactive=[_viewer(first, segs, payload)])


VIEWER_SCORES = {  # heads.json key (a dotted path into a head's entry) -> what the viewer's table says it is
    "entropy": "Clark et al.: smoothed attention entropy, mean over queries (nats)",
    "previous": "mean attention to the previous token, a(i, i-1)",
    "next": "mean attention to the next token, a(i, i+1)",
    "to_cls": "mean attention to [CLS] (the tokenizer's cls token, else bos)",
    "to_sep": "mean attention to [SEP] (the tokenizer's sep token, else eos)",
    "to_punctuation": "mean attention to punctuation (. ,)",
    "voita_argmax_previous": "Voita et al.: share of queries whose largest weight is on key i-1 (positional -1)",
    "voita_argmax_next": "Voita et al.: share of queries whose largest weight is on key i+1 (positional +1)",
    "tl_repeated_previous_token": "TransformerLens previous-token score on repeated random tokens",
    "tl_repeated_duplicate_token": "TransformerLens duplicate-token score on repeated random tokens",
    "tl_repeated_induction": "TransformerLens induction score on repeated random tokens",
    "sink": "attention on the first token (an attention sink)",
    "sink_norm": "value-weighted share of the first token, ||a_i1 v_1 W_O|| / sum_j ||a_ij v_j W_O|| "
                 "(Kobayashi et al. 2020)",
    "copying": "copying score of the OV circuit, sum lambda / sum |lambda| (Elhage et al. 2021): +1 copies, "
               "-1 suppresses",
    "dla": "direct logit attribution to the next token (mean logit units)",
    **{f"ablation.{k}.delta_loss": f"change in next-token loss when the head is {k}-ablated (nats per token)"
       for k in ev.KINDS},
}


def _viewer(A: torch.Tensor, segs: Segments, payload: dict) -> dict:
    """Segment 0's maps for the report's attention viewer (its first 64 tokens, at most ~2 MB), with every
    head's scores of :data:`VIEWER_SCORES` that the run computed (heads.json's numbers, means over segments;
    a score no head has, NaN everywhere, is left out)."""
    from attnlab.reports.viewer import viewer_data

    L, H = payload["layers"], payload["heads_per_layer"]
    scores = {}
    for key in VIEWER_SCORES:
        try:
            values = [_lookup(x, key) for x in payload["heads"]]
        except KeyError:  # not computed for this model (no output head: no DLA, no ablations)
            continue
        v = torch.tensor(values, dtype=torch.float64).reshape(L, H)
        if not bool(v.isnan().all()):  # undefined for every head (a causal model's key i+1): left out
            scores[key] = v
    return viewer_data(A, segs.labels[0], title="Attention maps of segment 0",
                       caption="Every head's weights on segment 0, as the model computed them. The scores beside "
                               f"the map are the head's numbers of heads.json, means over all {payload['segments']} "
                               "segments (not segment 0's alone), named by their heads.json keys.",
                       scores=scores, score_descriptions={k: VIEWER_SCORES[k] for k in scores})


def _ci_text(mean: float, ci) -> str:
    lo, hi = ci
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return f"{mean:+.3f}"
    return f"{mean:+.3f} [{lo:+.3f}, {hi:+.3f}]"


def _evidence_tables(payload: dict) -> list[Table]:
    """The causal evidence (largest ablation effects) and the per-head evidence beside the patterns."""
    heads, chance = payload["heads"], payload["chance"]
    out = []
    if payload.get("ablation"):
        ab = payload["ablation"]
        order = sorted(heads, key=lambda x: -max(abs(x["ablation"][k]["delta_loss"]) for k in ev.KINDS))[:12]
        rows = [[x["layer"], x["head"], x["kv_head"],
                 *(_ci_text(x["ablation"][k]["delta_loss"], x["ablation"][k]["ci"]) for k in ev.KINDS),
                 x["ablation"]["zero"]["measured"], _round(x.get("dla", float("nan")), 3),
                 _round(x["sink"], 3), _round(x["copying"], 3)] for x in order]
        out.append(Table(
            f"Causal evidence: the 12 heads whose ablation changes the next-token loss most (nats per token, mean "
            f"[95% interval] over {ab['segments']} segments of {ab['tokens']} tokens; clean loss "
            f"{ab['base_loss']:.3f})",
            ["layer", "head", "kv", "zero", "mean", "resample", "measured", "DLA", "sink", "copying"], rows,
            ["int", "int", "int", "text", "text", "text", "text", "float", "float", "float"]))
    if payload.get("induction_ablation"):
        ia = payload["induction_ablation"]
        rows = [[x["layer"], x["head"], _round(x["tl_repeated_induction"], 3),
                 *(_ci_text(x["induction_ablation"][k]["delta_loss"], x["induction_ablation"][k]["ci"])
                   for k in ev.KINDS)] for x in heads if "induction_ablation" in x]
        out.append(Table(
            f"Induction, causally: the heads with the highest TransformerLens induction scores, ablated on the "
            f"{ia['prompts']} repeated-random-token prompts; change in the loss on the second copy (nats per "
            f"prediction, mean [95% interval] over prompts; clean loss {ia['base_loss']:.3f})",
            ["layer", "head", "TL ind", "zero", "mean", "resample"], rows,
            ["int", "int", "float", "text", "text", "text"]))
    has_dla = any("dla" in x for x in heads)
    rows = [[x["layer"], x["head"], x["kv_head"], _round(x["sink"], 3), _round(x["sink_norm"], 3),
             *([_round(x["dla"], 3)] if has_dla else []), _round(x["copying"], 3), _round(x["qk_norm"], 2),
             _round(x["ov_norm"], 2)] for x in heads]
    out.append(Table(
        f"Evidence per head: attention on the first token (uniform attention under the model's mask: "
        f"{chance['sink']:.3f}) and its value-weighted share; "
        + ("direct logit attribution to the next token (mean logit units); " if has_dla else "")
        + "the OV circuit's copying score; the Frobenius norms of W_QK and W_OV",
        ["layer", "head", "kv", "sink", "sink (value-weighted)", *(["DLA"] if has_dla else []), "copying",
         "|W_QK|", "|W_OV|"], rows,
        ["int", "int", "int", "float", "float", *(["float"] if has_dla else []), "float", "float", "float"]))
    return out


def _evidence_figures(payload: dict, avg: dict) -> list:
    L, H = payload["layers"], payload["heads_per_layer"]
    layer_labels, head_labels = [str(l) for l in range(L)], [str(h) for h in range(H)]
    figs = [heatmap_figure(
        "sinks.png", f"Attention on the first token per head (uniform attention under the model's mask: "
                     f"{payload['chance']['sink']:.3f}) and the value-weighted share of what the head moves from it "
                     "(Kobayashi et al. 2020); one scale, 0 to 1.",
        panels=[heatmap_panel(t, avg[k], xlabels=head_labels, ylabels=layer_labels)
                for k, t in (("sink", "attention on the first token"), ("sink_norm", "value-weighted share"))],
        ncols=2, title="Attention sinks", vmin=0.0, vmax=1.0, colorbar="share", cmap="Blues",
        xlabel="head", ylabel="layer")]
    figs.append(heatmap_figure(
        "copying.png", "Copying score of every head's OV circuit (Elhage et al. 2021: sum of eigenvalues / sum of "
                       "their moduli of W_E W_OV W_U): +1 copies the attended token, -1 suppresses it.",
        panels=[heatmap_panel("copying score", avg["copying"], xlabels=head_labels, ylabels=layer_labels)],
        ncols=1, title="OV copying scores", vmin=-1.0, vmax=1.0, colorbar="copying score", cmap="RdBu_r",
        xlabel="head", ylabel="layer"))
    if "dla" in avg:
        m = float(avg["dla"].abs().nan_to_num().max()) or 1.0
        figs.append(heatmap_figure(
            "direct-logit-attribution.png", "Direct logit attribution: each head's mean contribution to the logit "
                                            "of the next token, through the final norm frozen on the full residual.",
            panels=[heatmap_panel("direct logit attribution", avg["dla"], xlabels=head_labels, ylabels=layer_labels)],
            ncols=1, title="Direct logit attribution", vmin=-m, vmax=m, colorbar="logit", cmap="RdBu_r",
            xlabel="head", ylabel="layer"))
    if payload.get("ablation"):
        heads = payload["heads"]
        grids = {k: torch.tensor([[heads[l * H + h]["ablation"][k]["delta_loss"] for h in range(H)]
                                  for l in range(L)]) for k in ev.KINDS}
        m = max(float(g.abs().nan_to_num().max()) for g in grids.values()) or 1.0
        figs.append(heatmap_figure(
            "ablations.png", "Change in next-token loss when each head is ablated (zero, mean, resample); exact for "
                             f"the heads listed in the causal-evidence table, first-order elsewhere. One scale.",
            panels=[heatmap_panel(f"{k} ablation", g, xlabels=head_labels, ylabels=layer_labels)
                    for k, g in grids.items()],
            ncols=3, title="Head ablations", vmin=-m, vmax=m, colorbar="change in loss (nats/token)", cmap="RdBu_r",
            xlabel="head", ylabel="layer"))
    return figs


def _summary(payload: dict) -> list:
    """Descriptive rows (info): the strongest head of each TransformerLens score beside uniform attention's
    and a perfect head's, and each labelled count beside its threshold and chance level. The analysed
    model is not a text's model, so nothing here is judged against a paper."""
    heads, chance, rep = payload["heads"], payload["chance"], payload["repeated_random_tokens"]
    rows = []
    for k in TL_KINDS:
        key = f"tl_repeated_{k}"
        best = max(heads, key=lambda x: _finite(x[key]))
        perfect = rep["perfect_head"][k] if rep else float("nan")
        rows.append(info(f"{TL_REPEATED}: highest {k.replace('_', '-')} score", best[key],
                         detail=f"L{best['layer']} H{best['head']}; uniform attention scores {chance[key]:.3f}, "
                                f"a perfect head {perfect:.3f}",
                         values={"layer": best["layer"], "head": best["head"], "chance": chance[key],
                                 "perfect_head": perfect}))
    if payload.get("ablation"):
        for k in ev.KINDS:
            best = max(heads, key=lambda x: x["ablation"][k]["delta_loss"])
            a = best["ablation"][k]
            rows.append(info(f"largest {k}-ablation change in next-token loss (nats/token)", a["delta_loss"],
                             detail=f"L{best['layer']} H{best['head']}, 95% interval [{a['ci'][0]:+.3f}, "
                                    f"{a['ci'][1]:+.3f}] over {payload['ablation']['segments']} segments, "
                                    f"{a['measured']}",
                             values={"layer": best["layer"], "head": best["head"], "ci": a["ci"],
                                     "measured": a["measured"]}))
    above = sum(1 for x in heads if x["ci"].get("sink", [math.nan])[0] > chance["sink"])
    rows.append(info("heads whose attention on the first token is above uniform attention's (95% interval)",
                     above, detail=f"of {len(heads)}; uniform attention under the model's mask puts "
                                   f"{chance['sink']:.3f} there",
                     values={"heads": above, "chance": chance["sink"]}))
    by_score = {}
    for r in payload["criteria"]:
        if r["threshold"] is not None:
            by_score.setdefault(r["criteria"], []).append(r)
    counts = payload["counts"]
    flat = {**{("Clark et al. 2019", k): v for k, v in counts["clark"].items()},
            **{("Kovaleva et al. 2019", k): v for k, v in counts["kovaleva"].items()},
            **{("Voita et al. 2019", k): v for k, v in counts["voita"].items()}}
    for framework, rs in by_score.items():
        parts = [f"{r['label']} {flat.get((framework, r['label']), 0)}" for r in rs]
        sources = sorted({_source(r) for r in rs})
        detail = ("uniform attention scores " + ", ".join(
            f"{r['label']} {_chance_text(r['chance'])} ({r['relation']} {r['threshold']:g}"
            + (f", {_source(r)}" if len(sources) > 1 else "") + ")" for r in rs)
            + (f"; thresholds: {sources[0]}" if len(sources) == 1 else ""))
        rows.append(info(f"{framework}: heads per label (of {len(heads)})", ", ".join(parts), detail=detail,
                         values={r["label"]: flat.get((framework, r["label"]), 0) for r in rs}))
    return rows


def _source(r: dict) -> str:
    return {CLARK_CODE: "Clark et al.'s code", VOITA_TEXT: "Voita et al.'s text"}.get(r["threshold_from"],
                                                                                     "attnlab's choice")


def _chance_text(v) -> str:
    return f"{v:.3f}" if v is not None and math.isfinite(v) else "undefined"


def _round(v: float, digits: int) -> float:
    """A table cell: ``v`` to ``digits`` decimals (heads.json keeps every digit)."""
    return round(v, digits) if math.isfinite(v) else v


def _finite(v: float) -> float:
    return v if math.isfinite(v) else -math.inf


def _figures(payload: dict, avg: dict, A: torch.Tensor, segs: Segments) -> list:
    heads, L, H = payload["heads"], payload["layers"], payload["heads_per_layer"]
    tokens = segs.tokens[0]
    g = min(GRID_TOKENS, len(tokens))
    grid = heatmap_figure(
        "attention-maps.png",
        f"Every head on the first {g} tokens of segment 0 (rows: queries, columns: keys; the rows of this "
        f"corner need not sum to 1). One colour scale, 0 to 1.",
        panels=[heatmap_panel(f"L{l} H{h}", A[l, h, :g, :g].double()) for l in range(L) for h in range(H)],
        ncols=H, title=f"Attention maps, {L} layers x {H} heads", vmin=0.0, vmax=1.0, colorbar="attention weight",
        cmap="Blues")
    picks: dict[tuple[int, int], str] = {}
    for key, what in (("previous", "most previous-token"), ("next", "most next-token"),
                      ("special", "most [CLS]/[SEP]"), ("entropy", "broadest")):
        score = (lambda x: x["to_cls"] + x["to_sep"]) if key == "special" else (lambda x, k=key: x[k])
        best = max(heads, key=lambda x: _finite(score(x)))
        picks.setdefault((best["layer"], best["head"]), what)
    z = min(ZOOM_TOKENS, len(tokens))
    labels = [t if len(t) <= 12 else t[:11] + "…" for t in segs.labels[0][:z]]
    zoom = heatmap_figure(
        "zoom.png", f"Selected heads on the first {z} tokens of segment 0, tokens labelled (rows: queries, "
                    "columns: keys).",
        panels=[heatmap_panel(f"L{l} H{h}: {what}", A[l, h, :z, :z].double(), xlabels=labels, ylabels=labels)
                for (l, h), what in picks.items()],
        ncols=2, title="Zoomed heads", vmin=0.0, vmax=1.0, colorbar="attention weight", cmap="Blues")
    layer_labels, head_labels = [str(l) for l in range(L)], [str(h) for h in range(H)]
    stats = heatmap_figure(
        "head-statistics.png", "Mean attention per head (rows: layers, columns: heads) to the previous and next "
                               "token, [CLS], [SEP] and punctuation; one scale, 0 to 1.",
        panels=[heatmap_panel(title, avg[key], xlabels=head_labels, ylabels=layer_labels) for key, title in
                (("previous", "previous token"), ("next", "next token"), ("to_[CLS]", "[CLS]"),
                 ("to_[SEP]", "[SEP]"), ("to_punctuation", "punctuation ( . , )"))],
        ncols=3, title="Where the heads look", vmin=0.0, vmax=1.0, colorbar="mean attention", cmap="Blues",
        xlabel="head", ylabel="layer")
    ent = avg["entropy"]
    layers = list(range(L))
    entropy = line_figure(
        "entropy.png", f"Mean smoothed attention entropy per layer (mean, min and max over heads); Clark's broad "
                       f"threshold {BROAD_ENTROPY_NATS:g} nats and the entropy of uniform attention.",
        series=[series("mean over heads", layers, ent.mean(-1).tolist()),
                series("min over heads", layers, ent.amin(-1).tolist(), style="dotted"),
                series("max over heads", layers, ent.amax(-1).tolist(), style="dotted"),
                series("uniform attention", layers, avg["uniform_entropy"].mean(-1).tolist(), style="dashdot",
                       marker=False),
                series(f"broad threshold ({BROAD_ENTROPY_NATS:g})", layers, [BROAD_ENTROPY_NATS] * L, style="dashed",
                       marker=False)],
        xlabel="layer", ylabel="entropy (nats)", title="Attention entropy")
    counts = payload["counts"]
    clark_keys = ("broad", "previous", "next", "special (any)", "no label")
    voita = counts["voita"]
    bars = [
        bar_figure("labels-clark.png", f"Clark et al.'s labels: how many of the {L * H} heads carry each "
                                       "(a head may carry several).", categories=list(clark_keys),
                   groups=[{"label": "heads", "values": [counts["clark"][k] for k in clark_keys]}], ylabel="heads",
                   title="Clark et al. labels"),
        bar_figure("labels-kovaleva.png", f"Kovaleva et al.'s patterns: one per head, {L * H} heads.",
                   categories=list(KOVALEVA_PATTERNS),
                   groups=[{"label": "heads", "values": [counts["kovaleva"][k] for k in KOVALEVA_PATTERNS]}],
                   ylabel="heads", title="Kovaleva et al. patterns"),
        bar_figure("labels-voita.png", f"Voita et al.'s roles among the {L * H} heads.",
                   categories=["positional -1", "positional +1", "rare-token", "no role"],
                   groups=[{"label": "heads", "values": [voita["positional -1"], voita["positional +1"],
                                                         voita["rare-token"], voita["no role"]]}],
                   ylabel="heads", title="Voita et al. roles"),
    ]
    return [grid, zoom, stats, entropy, *bars]
