"""Make tests/tolerances.py and this folder's numpy_reference.py importable from any import mode."""

import sys
from pathlib import Path

for _p in (Path(__file__).parent, Path(__file__).parents[2]):  # tests/papers/memorization, tests
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))
