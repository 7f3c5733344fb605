"""Make tests/constructions/numpy_reference.py importable from any import mode."""

import sys
from pathlib import Path

if str(Path(__file__).parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).parent))
