"""Fixtures shared across test directories."""

import pytest
import torch


@pytest.fixture
def one_thread():
    """Tiny models gain nothing from a second thread, and on a shared machine its spin-waiting
    costs several times the work: one torch thread for the test, restored afterwards."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
