"""Fixtures shared across test directories.

The test session registers one extra paper, ``selftest`` (tests/fixtures/selftest_paper.py),
through ATTNLAB_PLUGINS, so the sweep engine can be tested in every process it starts
(process pools, Dask workers, the CLI in a subprocess) without a fixture in the package.
"""

import os
import sys
from pathlib import Path

import pytest
import torch

from attnlab.cli import main
from attnlab.registry import Claim

if str(Path(__file__).parent) not in sys.path:  # tests/helpers.py, tests/tolerances.py
    sys.path.insert(0, str(Path(__file__).parent))
collect_ignore = ["fixtures"]  # test modules there belong to fixture papers (tests/fixtures/sixth), run by their tests
SELFTEST_PLUGIN = str(Path(__file__).parent / "fixtures" / "selftest_paper.py")
os.environ["ATTNLAB_PLUGINS"] = SELFTEST_PLUGIN
# Off a terminal the commands print one progress line per step on stderr; the tests read stderr
# for exact error lines, so they run without them (tests/cli/test_terminal_output.py turns them on).
os.environ["ATTNLAB_PROGRESS"] = "0"

# Under pytest-xdist (`pytest -n auto`) every worker would start one torch thread per core:
# the workers share the cores instead.
if "PYTEST_XDIST_WORKER_COUNT" in os.environ:
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"])))


@pytest.fixture(scope="session", autouse=True)
def claim_cache(tmp_path_factory):
    """Every registered claim is computed once per session (tests/claim_cache.py): Claim.run of a
    registered claim goes through a cache shared by the xdist workers, so the registry test, the
    papers' claim tests and `verify` in process reuse one another's results."""
    from claim_cache import ClaimCache

    base = tmp_path_factory.getbasetemp()
    shared = base.parent if "PYTEST_XDIST_WORKER" in os.environ else base  # popen-gwN's parent is shared
    run = Claim.run
    cache = ClaimCache(shared / "claims", run)
    patch = pytest.MonkeyPatch()
    patch.setattr(Claim, "run", lambda self, seed=0: cache.result(self, seed))
    yield cache
    patch.undo()


@pytest.fixture(scope="module")
def frozen_heap():
    """The benchmark's timer and memory probe run a full ``gc.collect()`` before each measurement
    (attnlab.bench.timing, attnlab.bench.memory); in a test process that has imported torch, transformers
    and dask and collected the suite, each walks over half a million objects (about 0.35 s). Here the
    objects alive when a module starts are collected once and frozen (``gc.freeze``) for that module, so a
    collection inside it walks only what the module created; unfrozen after it."""
    import gc

    gc.collect()
    gc.freeze()
    yield
    gc.unfreeze()


@pytest.fixture
def one_thread():
    """Tiny models gain nothing from a second thread, and on a shared machine its spin-waiting
    costs several times the work: one torch thread for the test, restored afterwards."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def cli(capsys):
    """The command line in-process: cli(argv) -> (exit status, stdout, stderr)."""

    def run(argv: list[str]) -> tuple[int, str, str]:
        capsys.readouterr()
        try:
            main(argv)
            code = 0
        except SystemExit as e:
            code = e.code
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.fixture
def cli_error(cli):
    """cli_error(argv) -> the one error line of a command that must fail with exit status 2."""

    def run(argv: list[str]) -> str:
        code, _, err = cli(argv)
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1 and lines[0].startswith("attnlab: error: "), (code, err)
        return lines[0]

    return run
