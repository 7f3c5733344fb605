"""The one-layer translation transformer of §3.1, trained on a parallel corpus, and its attention maps.

The text trains the transformer of §1.2 with "just 1 layer and either 1 or 8 heads" for 20 epochs
on English -> Italian, then looks at the attention weights (Figs. 11-12). Here the model is
:class:`attnlab.nn.EncoderDecoder` with one encoder and one decoder block (post-LN, sinusoidal
positions, the text's choices), trained with teacher forcing on

    source  x_1 .. x_m </s>          (encoder input, n = m + 1)
    decoder <s> y_1 .. y_k           (decoder input, n' = k + 1)
    target  y_1 .. y_k </s>          (cross-entropy, mean over target tokens, padding ignored)

by Adam. One pass returns three kinds of maps per head h (rows = queries):

    encoder self-attention   (n, n)    softmax(Q K^T / sqrt(d_k)) of the encoder block
    decoder self-attention   (n', n')  the causal one (eq. 10): row i sees j <= i
    cross-attention          (n', n)   decoder queries on encoder keys

The baseline a trained model must beat is the unigram model: predicting every target token with the
training frequencies p(y), whose held-out loss is -mean log p(y) (the same tokens, </s> included).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import torch
from torch import Tensor

from attnlab.nn import BlockConfig, EncoderDecoder
from attnlab.papers.transformer_math.translation_corpus import BOS, EOS, PAD, Vocabulary
from attnlab.runs.threads import num_threads

ATTENTION_KINDS = ("encoder self", "decoder self", "cross")


@dataclass(frozen=True)
class Batch:
    """src (B, n), dec_in (B, n'), target (B, n') int64; masks True = padding."""

    src: Tensor
    dec_in: Tensor
    target: Tensor
    src_pad: Tensor
    tgt_pad: Tensor


def make_batch(pairs: Sequence[tuple[Sequence[str], Sequence[str]]], src_vocab: Vocabulary, tgt_vocab: Vocabulary,
               device: str = "cpu") -> Batch:
    """Pad a list of (English, Italian) token pairs into one teacher-forcing batch (module docstring)."""
    pad_s, pad_t = src_vocab.stoi[PAD], tgt_vocab.stoi[PAD]
    src = [src_vocab.ids(e) + [src_vocab.stoi[EOS]] for e, _ in pairs]
    tgt = [tgt_vocab.ids(i) for _, i in pairs]
    dec = [[tgt_vocab.stoi[BOS]] + t for t in tgt]
    out = [t + [tgt_vocab.stoi[EOS]] for t in tgt]
    n, m = max(map(len, src)), max(map(len, dec))

    def pad(rows, length, value):
        return torch.tensor([r + [value] * (length - len(r)) for r in rows], dtype=torch.int64, device=device)

    S, D, T = pad(src, n, pad_s), pad(dec, m, pad_t), pad(out, m, pad_t)
    return Batch(S, D, T, S == pad_s, D == pad_t)


def build_model(src_vocab: Vocabulary, tgt_vocab: Vocabulary, *, d_model: int, n_heads: int, d_ff: int,
                dropout: float, max_len: int, seed: int, device: str = "cpu") -> EncoderDecoder:
    """A one-layer EncoderDecoder, initialised from ``seed`` without touching the global generator."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = EncoderDecoder(len(src_vocab), len(tgt_vocab), d_model, n_heads, d_ff, 1, block=BlockConfig(dropout=dropout),
                               max_len=max_len)
    return model.to(device)


def batch_loss(model: EncoderDecoder, b: Batch, *, count_correct: bool = True) -> tuple[Tensor, Tensor | None, int]:
    """(mean cross-entropy, number of correct argmax predictions, number of target tokens N).

    The logits are formed at the N target tokens only (``logits_at`` = not padding: (N, l), not
    (B, n', l)): the loss is the same mean over the same tokens, but the output layer's products, the
    8000-way log-softmax and their gradients skip the padding, about a third of a batch's positions at
    the paper preset. ``count_correct=False`` (training) skips the argmax; the count is then None."""
    keep = ~b.tgt_pad
    logits = model(b.src, b.dec_in, b.src_pad, b.tgt_pad, logits_at=keep).logits  # (N, l)
    target = b.target[keep]  # (N,)
    loss = torch.nn.functional.cross_entropy(logits, target)
    correct = (logits.argmax(-1) == target).sum() if count_correct else None
    return loss, correct, target.numel()


@dataclass(frozen=True)
class TrainedTranslator:
    """model (eval mode); epoch_losses: mean training loss per epoch; heldout_loss, heldout_accuracy:
    teacher-forced cross-entropy (nats per token) and argmax accuracy on the held-out pairs;
    unigram_loss: the unigram baseline's held-out loss; seconds: training time."""

    model: EncoderDecoder
    n_heads: int
    epoch_losses: list[float]
    heldout_loss: float
    heldout_accuracy: float
    unigram_loss: float
    seconds: float


def evaluate(model: EncoderDecoder, pairs, src_vocab, tgt_vocab, batch_size: int, device: str) -> tuple[float, float]:
    """Held-out (loss per token, accuracy), summed over batches then divided by the token count."""
    model.eval()
    total, correct, count = 0.0, 0, 0
    with torch.no_grad():
        for k in range(0, len(pairs), batch_size):
            loss, c, n = batch_loss(model, make_batch(pairs[k: k + batch_size], src_vocab, tgt_vocab, device))
            total, correct, count = total + float(loss) * n, correct + int(c), count + n
    return total / count, correct / count


def unigram_loss(train_pairs, heldout_pairs, tgt_vocab: Vocabulary) -> float:
    """-mean log p(y) over held-out target tokens (ids as the model sees them, </s> included), p the
    training frequencies with add-one smoothing over the vocabulary."""
    counts = torch.ones(len(tgt_vocab), dtype=torch.float64)
    for _, i in train_pairs:
        counts.index_add_(0, torch.tensor(tgt_vocab.ids(list(i)) + [tgt_vocab.stoi[EOS]]),
                          torch.ones(len(i) + 1, dtype=torch.float64))
    logp = counts.log() - counts.sum().log()
    ids = [t for _, i in heldout_pairs for t in tgt_vocab.ids(list(i)) + [tgt_vocab.stoi[EOS]]]
    return float(-logp[torch.tensor(ids)].mean())


def train_translator(train_pairs, heldout_pairs, src_vocab: Vocabulary, tgt_vocab: Vocabulary, *, n_heads: int,
                     d_model: int, d_ff: int, dropout: float, epochs: int, batch_size: int, lr: float, seed: int,
                     max_len: int, device: str = "cpu", log=None) -> TrainedTranslator:
    """Adam (lr, betas (0.9, 0.98)) on shuffled minibatches, ``epochs`` passes; deterministic in ``seed``.

    On the CPU training runs on one intra-op thread: multi-threaded CPU reductions change the last
    bits from one process to the next (measured: held-out losses differing at 1e-8), one thread
    makes the run bit-identical across processes."""
    with num_threads(1 if str(device) == "cpu" else None):
        return _train(train_pairs, heldout_pairs, src_vocab, tgt_vocab, n_heads=n_heads, d_model=d_model, d_ff=d_ff,
                      dropout=dropout, epochs=epochs, batch_size=batch_size, lr=lr, seed=seed, max_len=max_len,
                      device=device, log=log)


def adam(model: EncoderDecoder, lr: float, device: str = "cpu") -> torch.optim.Adam:
    """Adam (lr, betas (0.9, 0.98), eps 1e-8, no weight decay) over every parameter.

    On the CPU and CUDA, torch's fused kernel: one pass over each parameter for the two moments and
    the update, instead of about ten element-wise operations each over the 3 V d embedding and
    output weights (measured 12 ms -> 3.6 ms a step at the paper preset, one thread). Same update
    formula; only the order of floating-point operations differs (float64: equal to ~1e-16 a step)."""
    fused = True if torch.device(device).type in ("cpu", "cuda") else None
    return torch.optim.Adam(model.parameters(), lr=lr, betas=(0.9, 0.98), fused=fused)


def train_step(model: EncoderDecoder, opt: torch.optim.Optimizer, b: Batch) -> tuple[float, int]:
    """One teacher-forcing step: the mean cross-entropy over the batch's N target tokens
    (:func:`batch_loss`), its gradient, the gradient clipped to global norm 1, one optimizer step.
    Returns (the loss before the step, N)."""
    loss, _, n = batch_loss(model, b, count_correct=False)
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    return loss.item(), n


def step_seconds(src_vocab_size: int, tgt_vocab_size: int, *, n_heads: int, d_model: int, d_ff: int, dropout: float,
                 src_lengths: Sequence[int], tgt_lengths: Sequence[int], max_len: int, device: str = "cpu",
                 repeats: int = 3) -> float:
    """Seconds of one :func:`train_step` at these sizes, as training runs it (one intra-op thread on the
    CPU): the best of ``repeats`` after one untimed step, on a batch of random token ids whose row r
    has src_lengths[r] source and tgt_lengths[r] target tokens (padded to the longest). Builds its own
    model and optimizer; the global random generator is left as it was."""
    B, n, m = len(src_lengths), max(src_lengths), max(tgt_lengths)
    with torch.random.fork_rng(devices=[]), num_threads(1 if str(device) == "cpu" else None):
        torch.manual_seed(0)
        model = EncoderDecoder(src_vocab_size, tgt_vocab_size, d_model, n_heads, d_ff, 1,
                               block=BlockConfig(dropout=dropout), max_len=max_len).to(device)
        opt = adam(model, 1e-4, device)
        src_pad = torch.arange(n)[None, :] >= torch.tensor(src_lengths)[:, None]
        tgt_pad = torch.arange(m)[None, :] >= torch.tensor(tgt_lengths)[:, None]
        src = torch.randint(4, src_vocab_size, (B, n)).masked_fill(src_pad, 0)
        dec = torch.randint(4, tgt_vocab_size, (B, m)).masked_fill(tgt_pad, 0)
        b = Batch(*(t.to(device) for t in (src, dec, dec.roll(-1, 1), src_pad, tgt_pad)))
        model.train()
        train_step(model, opt, b)
        best = math.inf
        for _ in range(repeats):
            t = time.perf_counter()
            train_step(model, opt, b)
            if str(device).startswith("cuda"):
                torch.cuda.synchronize()
            best = min(best, time.perf_counter() - t)
    return best


def _train(train_pairs: Sequence[Any], heldout_pairs: Sequence[Any], src_vocab: Vocabulary, tgt_vocab: Vocabulary, *, n_heads: int, d_model: int, d_ff: int, dropout: float, epochs: int, batch_size: int,
           lr: float, seed: int, max_len: int, device: str | torch.device, log: Callable[..., None] | None) -> TrainedTranslator:
    start = time.perf_counter()
    model = build_model(src_vocab, tgt_vocab, d_model=d_model, n_heads=n_heads, d_ff=d_ff, dropout=dropout,
                        max_len=max_len, seed=seed, device=device)
    opt = adam(model, lr, device)
    g = torch.Generator().manual_seed(seed)
    losses = []
    for epoch in range(epochs):
        model.train()
        order = torch.randperm(len(train_pairs), generator=g).tolist()
        total, count = 0.0, 0
        with torch.random.fork_rng(devices=[]):  # dropout draws from the global generator
            torch.manual_seed(seed * 1000 + epoch)
            for k in range(0, len(order), batch_size):
                b = make_batch([train_pairs[j] for j in order[k: k + batch_size]], src_vocab, tgt_vocab, device)
                loss, n = train_step(model, opt, b)
                total, count = total + loss * n, count + n
        losses.append(total / count)
        if log is not None:
            log(epoch, losses[-1])
    h_loss, h_acc = evaluate(model, heldout_pairs, src_vocab, tgt_vocab, batch_size, device)
    model.eval()
    return TrainedTranslator(model, n_heads, losses, h_loss, h_acc,
                             unigram_loss(train_pairs, heldout_pairs, tgt_vocab), time.perf_counter() - start)


def attention_maps(model: EncoderDecoder, pairs, src_vocab: Vocabulary, tgt_vocab: Vocabulary,
                   device: str = "cpu") -> list[dict[str, Tensor]]:
    """Per pair, {kind: (H, n_q, n_k) float64} for the three kinds (module docstring), without padding."""
    model.eval()
    b = make_batch(pairs, src_vocab, tgt_vocab, device)
    with torch.no_grad():
        out = model(b.src, b.dec_in, b.src_pad, b.tgt_pad, output_attentions=True)
    maps = []
    for r, (e, i) in enumerate(pairs):
        n, m = len(e) + 1, len(i) + 1
        maps.append({"encoder self": out.encoder.attentions[0][r, :, :n, :n].double().cpu(),
                     "decoder self": out.decoder.attentions[0][r, :, :m, :m].double().cpu(),
                     "cross": out.decoder.cross_attentions[0][r, :, :m, :n].double().cpu()})
    return maps


def crop(A: Tensor, size: int) -> tuple[Tensor, Tensor]:
    """The top-left size x size block of maps A (..., n_q, n_k), rows renormalised to sum to 1, and
    the attention mass each row kept (..., size) before renormalising."""
    C = A[..., :size, :size]
    kept = C.sum(-1)
    return C / kept.clamp_min(1e-300)[..., None], kept


def perplexity(loss: float) -> float:
    return math.exp(loss)
