"""attnlab: the mathematics of attention, executable.

Subpackages: ``ops`` (attention operators), ``nn`` (modules), ``analysis``
(measurements), ``claims`` (the papers' claims as checks), ``experiments``
(runs that write reports), ``reports``.
"""

__version__ = "0.1.0"
