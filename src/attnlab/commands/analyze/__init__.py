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
   with the picked head's scores of heads.json (:data:`~attnlab.commands.analyze.viewer_scores.VIEWER_SCORES`, to four significant digits)
   and its rank among all heads beside the map.

Segments: :mod:`~attnlab.commands.analyze.text`.

Per head, per segment b, the numbers of :mod:`attnlab.analysis.heads` (all in float64,
:mod:`~attnlab.analysis.heads.summary`):

    Clark et al. 2019    H (smoothed entropy, nats), mean distance, a_{i,i-1}, a_{i,i+1} and the
                         mass on [CLS], [SEP] (the tokenizer's cls/sep tokens, bos/eos where it
                         has none) and punctuation (". ,"): :func:`~attnlab.analysis.heads.head_statistics`
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
                         :func:`~attnlab.analysis.heads.pattern_scores`, descriptive (natural text repeats few tokens)

and, apart from the text, TransformerLens' own scores on its repeated-random-token prompts:
``REPEATED_PROMPTS`` prompts [BOS] r r (the tokenizer's [CLS] r r [SEP] for the BERT family),
r = min(50, what fits in ``max_tokens``) distinct random ordinary tokens, scored by its
``detect_head`` definitions ("mul", no exclusions, lower-triangular patterns, every row
counted: :func:`~attnlab.analysis.heads.transformerlens_scores`) and averaged over the prompts. A perfect head scores
(n - 1)/n (previous-token) and s/n (duplicate-token, induction), not 1.

Chance levels. Every score is also computed for uniform attention under the model's mask
(:func:`~attnlab.analysis.heads.uniform_attention`: 1/n per key bidirectionally, 1/(i + 1) on row i causally) on the
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

The package:

- :mod:`~attnlab.commands.analyze.run`      :func:`analyze`, the command, and its result :class:`Analysis`;
                                            the verb's :func:`run_analyze` and :func:`print_analyze`
- :mod:`~attnlab.commands.analyze.text`     the text read and cut into segments, the repeated-random-token
                                            prompts, the model's attention maps
- :mod:`~attnlab.commands.analyze.evidence` the evidence beside the patterns: sinks, direct logit attribution,
                                            copying scores, ablations, intervals
- :mod:`~attnlab.commands.analyze.records`  heads.json as typed records (:class:`~attnlab.commands.analyze.records.HeadRow`
                                            per head), read by the report by attribute
- :mod:`~attnlab.commands.analyze.payload`  heads.json: the per-head numbers, labels, criteria and notes
- :mod:`~attnlab.commands.analyze.report`   results.json's summary, tables and figures
- :mod:`~attnlab.commands.analyze.viewer_scores` the attention viewer of segment 0 with the heads' scores
"""

from attnlab.commands.analyze.run import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_SEGMENTS,
    DTYPES,
    HEADS_JSON,
    MAX_SEGMENTS,
    SEGMENTS_JSON,
    Analysis,
    AnalyzeOptions,
    AnalyzeOutcome,
    analyze,
    print_analysis,
    print_analyze,
    run_analyze,
)

__all__ = ["analyze", "Analysis", "AnalyzeOptions", "AnalyzeOutcome", "print_analysis", "print_analyze", "run_analyze",
           "DEFAULT_MAX_TOKENS", "DEFAULT_SEGMENTS", "MAX_SEGMENTS", "DTYPES", "HEADS_JSON", "SEGMENTS_JSON"]
