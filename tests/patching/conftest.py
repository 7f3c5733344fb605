"""Make tests/tolerances.py importable from any import mode."""

import sys
from pathlib import Path

_tests = str(Path(__file__).parent.parent)
if _tests not in sys.path:
    sys.path.insert(0, _tests)
