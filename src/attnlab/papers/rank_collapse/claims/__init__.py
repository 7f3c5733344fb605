"""Claims of the rank-collapse notes: the softmax's shift invariance (§2.1), the path
decomposition of a self-attention network (Theorem 2.1) and the low-rank theorem
(Theorem 2.3). Each module registers its checks with :func:`attnlab.registry.claim`."""
