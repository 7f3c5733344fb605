"""Claims of the math text: the softmax and its Jacobian, the 1/sqrt(d) scale, positional
encodings, the masked decoder, parameter counts (Table 1) and the efficient variants
(sparse, linear, low-rank). Each module registers its checks with
:func:`attnlab.registry.claim`."""
