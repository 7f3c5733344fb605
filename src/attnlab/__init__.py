"""attnlab: the mathematics of attention, executable.

A paper-agnostic library at the bottom and one package per paper on top:

- ``ops``, ``nn``: attention operators (a float64 reference among them) and modules
- ``analysis``, ``training``, ``data``, ``tasks``, ``pretrained``: measurements, batched
  training, text that ships offline, synthetic tasks, real checkpoints
- ``registry``, ``config``, ``results``: claims, experiments and constructions, their
  configs and one validation path, typed results
- ``runs``, ``sweeps``, ``reports``, ``bench``: run directories and ``reproduce``,
  grids of runs, HTML/Markdown reports, ``attnlab bench``
- ``papers``: one package per text; the library never imports it
- ``cli``: the ``attnlab`` command
"""

__version__ = "0.1.0"
