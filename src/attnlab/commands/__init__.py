"""Commands: what each ``attnlab`` verb does and prints, above the library (they may use any of its
layers) and below the command line (:mod:`attnlab.cli`), which parses arguments and calls them.

Every verb has ``run_<verb>(options) -> outcome``, its options and its outcome typed dataclasses (the
outcome carries the exit status), and ``print_<verb>(outcome)``; :mod:`attnlab.cli` only parses, calls,
prints and exits.

- :mod:`attnlab.commands.verify`         the claims run, and their tables
- :mod:`attnlab.commands.errata`         the errors in the texts
- :mod:`attnlab.commands.coverage`       each text's ledger and what checks it
- :mod:`attnlab.commands.list`           what the registry holds
- :mod:`attnlab.commands.reproduce_verb` ``attnlab reproduce``: the run, or the dry run's plan, and what it prints
- :mod:`attnlab.commands.reproduce`      a paper's experiments (and claims) into a run directory
- :mod:`attnlab.commands.report`         a run directory's reports rebuilt
- :mod:`attnlab.commands.sweep`          an experiment over a grid of configs and seeds, and its table
- :mod:`attnlab.commands.bench`          the benchmark run, its tables and files
- :mod:`attnlab.commands.analyze`        every head of a pretrained model on real text, into a run directory
- :mod:`attnlab.commands.construct`      a registered construction built, checked and saved (.npz)
- :mod:`attnlab.commands.plan`           what a run or a sweep is estimated to need (``--dry-run``)
- :mod:`attnlab.commands.catalogue`      the registry's and the errata's tables
- :mod:`attnlab.commands.options`        the checks of ``key=value`` lists, ``--out`` and ``--resume``
- :mod:`attnlab.commands.descriptions`   each verb's ``--help`` text
- :mod:`attnlab.commands.console`        the consoles, the progress display, JSON on stdout, verdict colours
- :mod:`attnlab.commands.plain_help`     ``--help`` that names every value in words
"""
