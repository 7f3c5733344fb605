"""The papers' claims as checks. Importing this package registers all of them.

One module per topic (every module in this package other than ``registry`` is
imported for its registrations); each claim's id starts with its paper's name.
"""

import importlib
import pkgutil

from attnlab.claims.registry import (  # noqa: F401
    Claim,
    ClaimResult,
    Measurement,
    all_claims,
    at_least,
    at_most,
    claim,
    select_claims,
)

for _m in pkgutil.iter_modules(__path__):
    if _m.name != "registry":
        importlib.import_module(f"{__name__}.{_m.name}")
