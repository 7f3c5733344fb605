"""Claims of the memorization paper: Theorem 1's construction, the rank bounds of
Propositions 1, 2, 4 and 5, and Proposition 3's comparison with a ReLU network.
Each module registers its checks with :func:`attnlab.registry.claim`."""
