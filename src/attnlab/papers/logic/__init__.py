"""Logic in self-attention (Shin & Matzinger): hand-programmed one-layer transformers for
Y_i = q_true(X_{i-1}, X_i).

- :mod:`~attnlab.papers.logic.encoding`: X = (X_C; X_P), the targets, every sequence.
- :mod:`~attnlab.papers.logic.solutions`: the three solutions of §2 and the linear case,
  the ReLU constant, the batched float64 forward and the attention-module path.
- :mod:`~attnlab.papers.logic.construction`: ``attnlab construct logic``.
- :mod:`~attnlab.papers.logic.examples`: the two fully connected networks of §1.
- :mod:`~attnlab.papers.logic.gradients`: §3.1's gradient of E[SSE] and its zeros.
- :mod:`~attnlab.papers.logic.softmax_positions`: §3.2, softmax columns, gradient descent to v = I.
- :mod:`~attnlab.papers.logic.category_attention`: §3.3, attention on categories read on the
  diagonal, the intended family, Delta Q and the degenerate q_true.
- :mod:`~attnlab.papers.logic.errata`: where the text is wrong, whose error, the witness, what survives.
- :mod:`~attnlab.papers.logic.model`: §4's trainable encoder (attention without softmax, LayerNorm,
  two linear layers), the access-pattern masks of the restricted systems, the gauge.
- :mod:`~attnlab.papers.logic.penalties`: the extra losses P_1, P_2, P_3 of §4.1's lean flavours.
- :mod:`~attnlab.papers.logic.centring`: double centring, the part of a block the gauge leaves.
- :mod:`~attnlab.papers.logic.mechanism`: structure fractions modulo the gauge, path and component
  ablations, the hand-built solutions' fractions.
- :mod:`~attnlab.papers.logic.members`: the models §4.1 trains (systems, flavours, sweep) and each seed's task.
- :mod:`~attnlab.papers.logic.lbfgs_training`: every member trained by full-batch L-BFGS; one evaluation's cost.
- :mod:`~attnlab.papers.logic.learned_mechanism`: Fig. 1's fits and the free flavour's mechanism, measured.
- :mod:`~attnlab.papers.logic.hand_built`: the hand-built solutions in the trainable model, with and without
  the LayerNorm.
- :mod:`~attnlab.papers.logic.learning_report`, :mod:`~attnlab.papers.logic.learning_rows`: logic.learning's
  outcome, tables and figures; its summary rows, deviations and notes.
- :mod:`~attnlab.papers.logic.experiments.learning`: ``logic.learning``, §4's experiments (Figs. 1-2).
"""

from attnlab.registry import register_paper

PAPER = register_paper("logic", "Logic in self-attention", "logic-in-self-attention.md", package=__name__)
