"""Commands: what ``attnlab reproduce``, ``attnlab analyze`` and ``attnlab construct`` do, above the
library (they may use any of its layers) and below the command line (:mod:`attnlab.cli`), which
parses arguments and calls them.

- :mod:`attnlab.commands.reproduce` a paper's experiments (and claims) into a run directory
- :mod:`attnlab.commands.analyze`   every head of a pretrained model on real text, into a run directory
- :mod:`attnlab.commands.construct` a registered construction built, checked and saved (.npz)
"""
