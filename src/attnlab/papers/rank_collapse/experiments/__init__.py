"""Experiments of the rank-collapse notes, one module each, named by the experiment id
(``rank-collapse.path-lengths`` is ``path_lengths.py``)."""
