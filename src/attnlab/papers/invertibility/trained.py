"""Trained embeddings for the attention matrix: all-MiniLM-L6-v2's token and position tables.

all-MiniLM-L6-v2 (the ``models`` extra, :func:`attnlab.pretrained.minilm_model_dir`) learns
W_tok (30522 x 384) and W_pos (512 x 384). The note's A needs N token embeddings and L
positions in R^d with d small, so:

- tokens: the N word pieces of :data:`WORDS` in order (common English words, each one
  WordPiece token of the model's vocab.txt), rows W_tok[id(word)];
- positions: W_pos[0 .. L-1] (position 0 is where [CLS] sits in the model's own inputs);
- restriction to d coordinates, ``restrict``:
    "projection": onto the top-d right singular vectors V_d (384 x d) of the stacked
                  (N + L) x 384 matrix [W_tok rows; W_pos rows] (uncentred): e = E V_d,
                  pos = Pos V_d, the d-dimensional view that keeps the most of both tables;
    "first":      the first d of the 384 coordinates (an arbitrary basis of the model);
- one scalar rescaling of both tables so that their root-mean-square entry is 1.5, the RMS of
  the explicit embeddings' c_i in [1, 2): the softmax's temperature is then comparable across
  embedding kinds (a scalar only moves w).

The tables are read from the checkpoint's safetensors file (float32 values, exact in float64);
no model is run. Unlike the proof's embeddings they have entries of both signs (property (1)
fails), and they are rational (property (2) fails, as for any float).
"""

from __future__ import annotations

import functools

import numpy as np

from attnlab.config import check_choice, check_int
from attnlab.errors import ConfigError

WORDS = ("the", "of", "and", "to", "in", "is", "was", "for", "on", "with", "as", "by", "at", "from", "his", "it")
RESTRICTIONS = ("projection", "first")
RMS = 1.5
MAX_POSITIONS = 512


@functools.lru_cache(maxsize=1)
def _tables() -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    from attnlab.pretrained.checkpoint import read_checkpoint
    from attnlab.pretrained.minilm import minilm_model_dir

    path = minilm_model_dir()
    vocab = (path / "vocab.txt").read_text(encoding="utf-8").splitlines()
    index = {w: i for i, w in enumerate(vocab)}
    missing = [w for w in WORDS if w not in index]
    if missing:
        raise ConfigError(f"the MiniLM vocabulary lacks {missing}: reinstall the models extra")
    t = read_checkpoint(path).tensors
    tok = t["embeddings.word_embeddings.weight"].double().numpy()
    pos = t["embeddings.position_embeddings.weight"].double().numpy()
    ids = tuple(index[w] for w in WORDS)
    return tok[list(ids)], pos, ids


def minilm_embeddings(N: int, L: int, d: int, restrict: str = "projection") -> tuple[np.ndarray, np.ndarray]:
    """(e (N, d), pos (L, d)) from all-MiniLM-L6-v2's tables (module docstring), float64."""
    check_int("N", N, 1, len(WORDS))
    check_int("L", L, 1, MAX_POSITIONS)
    check_choice("restrict", restrict, RESTRICTIONS)
    tok, pos, _ = _tables()
    check_int("d", d, 1, tok.shape[1])
    E, Pos = tok[:N], pos[:L]
    if restrict == "projection":
        V = np.linalg.svd(np.vstack([E, Pos]), full_matrices=False)[2][:d].T  # (384, d)
        E, Pos = E @ V, Pos @ V
    else:
        E, Pos = E[:, :d], Pos[:, :d]
    rms = float(np.sqrt(np.mean(np.vstack([E, Pos]) ** 2)))
    return E * (RMS / rms), Pos * (RMS / rms)


def minilm_token_ids(N: int) -> list[int]:
    """The vocabulary ids of the first N words of :data:`WORDS`."""
    check_int("N", N, 1, len(WORDS))
    return list(_tables()[2][:N])


__all__ = ["MAX_POSITIONS", "RESTRICTIONS", "WORDS", "minilm_embeddings", "minilm_token_ids"]
