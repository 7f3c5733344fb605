"""Make tests/tolerances.py importable from any import mode."""

import sys
from pathlib import Path

_p = Path(__file__).parent.parent
if str(_p) not in sys.path:
    sys.path.insert(0, str(_p))
