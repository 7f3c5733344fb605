"""Papers, claims, experiments and constructions, and how they are found.

Every paper is one package under :mod:`attnlab.papers`; its ``__init__`` registers the
paper, and the modules below it register the paper's claims, experiments and
constructions as they are imported. :func:`discover` imports every module below
``attnlab.papers``, recursively (``pkgutil.walk_packages``), so a file moved into a
subfolder is still found; a test pins how many of each every paper has.

- A **claim** is one checkable sentence of a paper: an id ``<paper>.<name>``, where in
  the paper it stands, the statement, the paper's value where it prints one, and a
  check. A check takes a seed, draws its own inputs from it, and returns an
  :class:`attnlab.checks.Check`: the measured number, the relation and threshold that
  decide it, its role, and the structured values behind its one line of detail; the
  verdict is derived from them.
- An **experiment** is a frozen config on :class:`attnlab.config.RunConfig` and
  ``run(cfg, run_dir) -> ExperimentResult`` (:mod:`attnlab.results`).
- A **text error** is an :class:`attnlab.errata.TextError` record: where a text is wrong,
  whose error it is, the witness and what survives (:func:`register_errata`).
- A paper's **ledger** (:mod:`attnlab.ledger`, ``ledger.toml`` in its package, read by
  :func:`paper_ledger`) quotes the text's statements. A claim, an experiment's row or a
  construction speaks for the text only when it is *anchored* to one of them (the claim's
  ``anchor``, the experiment's and the construction's ``anchors``); registration refuses an
  anchor that names no entry. :mod:`~attnlab.registry.coverage` lists what checks each entry.
- A **construction** is a frozen config on :class:`attnlab.config.Config` (its
  parameters) and ``build(params) -> ConstructionResult``: weights in the paper's
  orientation and the check that proves they work.

Modules outside the tree can register too: ``ATTNLAB_PLUGINS`` lists dotted module
names or ``.py`` files (separated by ``os.pathsep``) that discovery imports after the
papers, e.g. a paper of one's own that is not (yet) part of attnlab.

This package never imports a paper by name; it finds them.

The package: :mod:`~attnlab.registry.state` (the one registry, papers, text errors,
discovery), :mod:`~attnlab.registry.claims`, :mod:`~attnlab.registry.experiments` and
:mod:`~attnlab.registry.constructions`, each registered by ``register_<kind>`` and looked up
by ``all_<kinds>`` / ``get_<kind>``.
"""

from attnlab.checks import Check, above, at_least, at_most, below, equals, info, near  # noqa: F401 (for claims)
from attnlab.registry.claims import Claim, ClaimResult, all_claims, claim, register_claim, select_claims
from attnlab.registry.constructions import (
    Construction,
    ConstructionResult,
    all_constructions,
    get_construction,
    register_construction,
)
from attnlab.registry.experiments import (
    Experiment,
    SweepPlan,
    all_experiments,
    get_experiment,
    register_experiment,
)
from attnlab.registry.state import (  # noqa: F401 (_STATE: the one registry, for tests)
    _STATE,
    PAPERS_PACKAGE,
    PLUGINS_ENV,
    Paper,
    Registry,
    all_errata,
    discover,
    get_paper,
    import_recursively,
    load_plugin,
    paper_ledger,
    papers,
    plugin_entries,
    register_errata,
    register_paper,
    scratch,
)

__all__ = ["Check", "Claim", "ClaimResult", "Construction", "ConstructionResult", "Experiment", "PAPERS_PACKAGE",
           "PLUGINS_ENV", "Paper", "Registry", "SweepPlan", "above", "all_claims", "all_constructions",
           "all_errata", "all_experiments", "at_least", "at_most", "below", "claim", "discover", "equals",
           "get_construction", "get_experiment", "get_paper", "import_recursively", "info", "load_plugin", "near",
           "paper_ledger", "papers", "plugin_entries", "register_claim", "register_construction", "register_errata",
           "register_experiment", "register_paper", "scratch", "select_claims"]
