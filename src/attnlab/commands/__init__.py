"""Commands: what each ``attnlab`` verb does and prints, above the library (they may use any of its
layers) and below the command line (:mod:`attnlab.cli`), which parses arguments and calls them.

- :mod:`attnlab.commands.reproduce` a paper's experiments (and claims) into a run directory
- :mod:`attnlab.commands.plan`      what a run or a sweep is estimated to need (``--dry-run``)
- :mod:`attnlab.commands.analyze`   every head of a pretrained model on real text, into a run directory
- :mod:`attnlab.commands.construct` a registered construction built, checked and saved (.npz)
- :mod:`attnlab.commands.verify`    the claims' table
- :mod:`attnlab.commands.catalogue` what the registry holds (``list``) and the errors in the texts (``errata``)
- :mod:`attnlab.commands.sweep`     a sweep's table
- :mod:`attnlab.commands.bench`     the benchmark's tables and files
- :mod:`attnlab.commands.console`   the consoles, the progress display, JSON on stdout, verdict colours
- :mod:`attnlab.commands.plain_help` ``--help`` that names every value in words
"""
