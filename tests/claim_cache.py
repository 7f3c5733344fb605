"""Each registered claim computed once per test session, whichever test asks first and in
whichever pytest-xdist worker it runs.

The registry test runs every claim at two seeds; a paper's own claim tests, `verify` in
process and the tables at 80 columns ask for some of the same (claim, seed) pairs again. The
first call computes the check and stores it (pickled) in a folder shared by the session's
workers, under a lock for that pair; every later call, in any worker, reads it back. Only the
registered claims of the package's papers are cached: a test's own Claim (a broken check, a toy bound) runs as
written. A test that changes what a claim reads (an environment variable, a patched module)
computes it afresh with ``claim_cache.run(claim, seed)``, Claim.run as written.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Callable

from filelock import FileLock

from attnlab.registry import Claim, ClaimResult, all_claims

PAPERS = "attnlab.papers."
RunFn = Callable[[Claim, int], ClaimResult]


class ClaimCache:
    """Results of registered claims by (id, seed), kept in memory and in ``root`` (shared by workers)."""

    def __init__(self, root: Path, run: RunFn):
        self.root, self.run = root, run
        self.computed: list[tuple[str, int]] = []  # what this process computed (not read back)
        self.memory: dict[tuple[str, int], ClaimResult] = {}
        root.mkdir(parents=True, exist_ok=True)

    def is_registered(self, c: Claim) -> bool:
        """A claim of the papers in the package, as registered (a test's own or plugin paper's is not)."""
        return c.check.__module__.startswith(PAPERS) and any(r is c for r in all_claims() if r.id == c.id)

    def result(self, c: Claim, seed: int) -> ClaimResult:
        """``c.run(seed)``, computed once per session for a registered claim."""
        if not self.is_registered(c):
            return self.run(c, seed)
        key = (c.id, int(seed))
        if key in self.memory:
            return self.memory[key]
        path = self.root / f"{c.id}@{int(seed)}.pickle"
        with FileLock(f"{path}.lock"):
            if path.exists():
                check, error, seconds = pickle.loads(path.read_bytes())
                r = ClaimResult(c, check, error, seconds)
            else:
                r = self.run(c, seed)
                path.write_bytes(pickle.dumps((r.check, r.error, r.seconds)))
                self.computed.append(key)
        self.memory[key] = r
        return r
