"""Experiments of the math text, one module each, named by the experiment id
(``transformer-math.softmax-saturation`` is ``softmax_saturation.py``)."""
