"""Make tests/tolerances.py and this folder's numpy_reference.py importable from any import mode;
capacity cells written by hand."""

import sys
from pathlib import Path

import pytest

from attnlab.papers.memorization.capacity_cells import Cell

for _p in (Path(__file__).parent, Path(__file__).parents[2]):  # tests/papers/memorization, tests
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))


@pytest.fixture
def panel_cells():
    """panel_cells(d_h values, largest T memorized) -> the cells of a d_h panel: for each value,
    one cell at T = best (memorized by both replicates) and one at 2 best + 1 (by neither)."""

    def cells(values, best, H=2, n=4):
        out = []
        for v, t in zip(values, best):
            for T, ok in ((t, True), (2 * t + 1, False)):
                out.append(Cell(H=H, n=n, d_h=v, T=T, memorized=[ok, ok],
                                steps_to_memorize=[1, 1] if ok else [-1, -1], seconds=0.0,
                                final_accuracy=[1.0, 1.0] if ok else [0.5, 0.7]))
        return out

    return cells
