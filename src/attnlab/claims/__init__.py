"""The papers' claims as checks. Importing this package registers all of them.

One module per topic; each claim's id starts with its paper's short name.
"""

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

# Topic modules (imported for their registrations).
from attnlab.claims import (  # noqa: F401,E402
    softmax,
)
