"""Experiments of the memorization paper, one module each, named by the experiment id
(``memorization.capacity-vs-heads`` is ``capacity_vs_heads.py``)."""
