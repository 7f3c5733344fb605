"""Every module here times or measures calls: the heap alive before it is frozen (tests/conftest.py, frozen_heap)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module", autouse=True)
def _frozen(frozen_heap: None) -> None:
    """frozen_heap for each module of tests/bench."""
