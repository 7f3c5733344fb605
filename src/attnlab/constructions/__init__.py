"""Constructions from the papers: ``build_*`` returns weights, ``check_*`` measures them.

Each module follows one paper's proof, with the proof sketch beside the code.
"""

from attnlab.constructions.memorization import (  # noqa: F401
    MemorizingWeights,
    build_memorizing_weights,
    check_memorization,
)
from attnlab.constructions.memorization_model import (  # noqa: F401
    attention_features,
    draw_dataset,
    memorization_forward,
)
