"""Claims of the logic text: the two fully connected examples of §1, the three hand-programmed
solutions (§2.1-2.3), the ReLU constant they need (§2.2, §2.3), the equivalence of solutions 2
and 3 (§2.3.1), the gradient, its zeros and the initialisation scale of §3.1, softmax descent
(§3.2) and attention on categories (§3.3). Each module registers its checks with
:func:`attnlab.registry.claim`; where the text is wrong, see :mod:`attnlab.papers.logic.errata`."""
