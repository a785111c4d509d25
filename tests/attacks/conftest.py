"""One intra-op thread for these tests: the networks are tiny, and on a busy two-core machine
a second OpenMP thread makes each call hundreds of times slower."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(scope="module", autouse=True)
def _single_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
