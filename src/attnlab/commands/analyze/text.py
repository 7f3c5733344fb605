"""``attnlab analyze``: the inputs and the forward passes: the text read and cut into segments, the
TransformerLens-style repeated-random-token prompts, and the attention maps the model gives for each.

Segments. The text is split into sentences (:func:`attnlab.data.split_sentences`; the default
corpus is already sentences) and consecutive sentences are packed greedily into documents of at
most ``max_tokens - s`` tokens, s the tokenizer's special tokens (a longer sentence is cut). For
a model with sentence pairs (the BERT family: a [SEP] token and two token types) a document of
two or more sentences becomes ``[CLS] A [SEP] B [SEP]`` with A and B consecutive runs of its
sentences split where their token counts are closest, the input Clark et al. 2019 analysed
(two consecutive paragraphs) and the one Kovaleva et al.'s "block" pattern needs; otherwise a
document is one sequence, with the model's BOS first where its convention prepends one
(:meth:`attnlab.pretrained.workbench.Workbench.bos_token_id`: SmolLM2's "<|im_start|>", which its
tokenizer does not add itself), so the first token, and the attention sink on it, is what the
model sees at the start of a text.

Repeated random tokens. ``REPEATED_PROMPTS`` prompts [BOS] r r (the tokenizer's [CLS] r r [SEP]
for the BERT family), r = min(50, what fits in ``max_tokens``) distinct random ordinary tokens,
scored by TransformerLens' ``detect_head`` definitions
(:func:`attnlab.analysis.heads.transformerlens_scores`) and averaged over the prompts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import torch

from attnlab.analysis.heads.maps import uniform_attention
from attnlab.analysis.heads.patterns import (
    REPEATED_HALF,
    induction_stripe_score,
    repeated_random_tokens,
    transformerlens_scores,
)
from attnlab.analysis.heads.scores import RepeatedScores
from attnlab.analysis.heads.summary import TL_KINDS
from attnlab.commands.analyze.records import PatternLevels
from attnlab.errors import ConfigError
from attnlab.pretrained.labels import token_labels
from attnlab.runs.rundir import CONFIG, default_run_dir

BATCH = 8
REPEATED_PROMPTS = 8  # TransformerLens-style prompts [BOS] r r, averaged as its detect_head averages a list
REPEATED_SEED = 0
DEFAULT_TEXT = "pydoc_data.topics"


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
    bos: str | None = None  # the BOS token prepended to every segment (the model's convention), None if none



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
    name = Path(model).name if Path(model).exists() else model
    return default_run_dir(f"analyze-{name}")


def special_tokens(tokenizer) -> dict[str, str | None]:
    """The strings of Clark's [CLS] and [SEP] for this tokenizer (cls/sep, else bos/eos; None if neither)."""
    return {"[CLS]": tokenizer.cls_token or tokenizer.bos_token, "[SEP]": tokenizer.sep_token or tokenizer.eos_token}


def make_segments(pm, sentences: Sequence[str], max_tokens: int, count: int) -> Segments:
    """``count`` segments of at most ``max_tokens`` tokens, evenly spaced through ``sentences``
    (module docstring, "Segments")."""
    tok = pm.tokenizer
    pairs = bool(pm.architecture.type_vocab_size >= 2 and tok.sep_token is not None)
    bos = None if pairs else pm.bos_token_id()
    if bos is not None and list(tok("text")["input_ids"])[:1] == [bos]:
        bos = None  # the tokenizer adds it itself
    budget = max_tokens - tok.num_special_tokens_to_add(pair=pairs) - (bos is not None)
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
        enc = tok([" ".join(s for s, _ in doc) for doc in picked], truncation=True,
                  max_length=max_tokens - (bos is not None))
        ids = [([bos] if bos is not None else []) + list(x) for x in enc["input_ids"]]
        types = [[0] * len(x) for x in ids] if pm.architecture.type_vocab_size else None
    tokens = [tok.convert_ids_to_tokens(x) for x in ids]
    return Segments(ids, tokens, types, pairs, len(docs), cut, [token_labels(tok, t) for t in tokens],
                    None if bos is None else tok.convert_ids_to_tokens(bos))


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

    def perfect(self) -> PatternLevels:
        """What a perfect head scores (row 0 attends itself): (n - 1)/n, s/n, s/n with TransformerLens'
        detect_head, and 1 on the induction stripe."""
        n, s_ = self.length, self.half
        return PatternLevels((n - 1) / n, s_ / n, s_ / n, 1.0)


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


def repeated_scores(pm, prompts: RepeatedPrompts, causal: bool) -> RepeatedScores:
    """TransformerLens' three scores (:func:`transformerlens_scores`), each (L, H), the mean over the prompts
    as its ``detect_head`` averages a list, and the induction stripe score (:func:`induction_stripe_score`);
    as their ``chance`` uniform attention's, (1, 1)."""
    maps = [A for _, A in model_maps(pm, prompts.input_ids.tolist(), prompts.token_type_ids)]
    per = [transformerlens_scores(A, prompts.input_ids[b]) for b, A in enumerate(maps)]
    U = uniform_attention(prompts.length, causal=causal)[None, None]
    chance = transformerlens_scores(U.expand(len(prompts.input_ids), 1, 1, -1, -1), prompts.input_ids)
    p = len(prompts.prefix)
    stripe = torch.stack([induction_stripe_score(A, prompts.half, p) for A in maps]).mean(0)
    return RepeatedScores(*(torch.stack([getattr(x, k) for x in per]).mean(0) for k in TL_KINDS), stripe,
                          chance=RepeatedScores(*(getattr(chance, k).mean(0) for k in TL_KINDS),
                                                induction_stripe_score(U, prompts.half, p)))
