"""Runs: run directories (atomic writes, resume), seeding, the JSON encoder and torch's thread
count, below the registry, the bench, the sweeps, the reports and the commands
(:mod:`attnlab.commands`) that write and read them.

- :mod:`attnlab.runs.rundir`    the run directory on disk: config.json, env.json,
                                results.json, metrics.jsonl, figures/, reports
- :mod:`attnlab.runs.entry`     an experiment's entry in results.json, written and read only through
                                :class:`~attnlab.runs.entry.ExperimentEntry`
- :mod:`attnlab.runs.seeds`     seeding every global generator from a run's seed
- :mod:`attnlab.runs.jsonable`  the one JSON encoder: what run directories, sweeps and constructions store
- :mod:`attnlab.runs.threads`   torch's thread count for a block of work, restored afterwards
"""
