"""Experiments of the logic text, one module each, named by the experiment id
(``logic.learning`` is ``learning.py``)."""
