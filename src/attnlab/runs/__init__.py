"""Runs: run directories (atomic writes, resume), seeding, and the orchestration of
``attnlab reproduce`` and ``attnlab construct``.

- :mod:`attnlab.runs.rundir`    the run directory on disk: config.json, env.json,
                                results.json, metrics.jsonl, figures/, reports
- :mod:`attnlab.runs.seeds`     seeding every global generator from a run's seed
- :mod:`attnlab.runs.reproduce` a paper's experiments (and claims) into a run directory
- :mod:`attnlab.runs.construct` a registered construction built, checked and saved (.npz)
"""
