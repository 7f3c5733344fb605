"""The five texts, one package each.

A paper package registers the paper in its ``__init__`` and holds everything that
belongs to that text alone:

    papers/<paper>/
      __init__.py      register_paper(name, title, file, package=__name__)
      claims/          one module per topic; each registers claims with @claim
      experiments/     one module per experiment; the file name is the id's suffix
      *.py             the paper's own models, constructions and measurements

Papers import the library (``attnlab.ops``, ``nn``, ``analysis``, ``training``, ...);
the library never imports a paper. :func:`attnlab.registry.discover` finds every
module below this package, recursively.
"""
