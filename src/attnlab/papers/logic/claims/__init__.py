"""Claims of the logic text: the three hand-programmed solutions are exact (§2.1-2.3), the
ReLU constant they need (§2.2, §2.3), the equivalence of solutions 2 and 3 (§2.3.1) and the
two fully connected examples of §1. Each module registers its checks with
:func:`attnlab.registry.claim`; where the text is wrong, see :mod:`attnlab.papers.logic.notes_errors`."""
