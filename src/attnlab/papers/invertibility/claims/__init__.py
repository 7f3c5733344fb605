"""Claims of the invertibility note: Theorem 1's full rank and its minimal number of heads,
the rank caps the proof does not state (no positions; d > N + L - 2; fewer heads), the
size of w, and the proof's steps. Each module registers its checks with
:func:`attnlab.registry.claim`; every rank is certified (:mod:`attnlab.analysis.certified_rank`)."""
