"""Experiments of the invertibility note, one module each, named by the experiment id
(``invertibility.embedding-kinds`` is ``embedding_kinds.py``)."""
