"""release_thread_pool frees the calling thread's OpenMP workers (so only the engine loop thread keeps a
team), and torch keeps working on that thread afterwards (the pool comes back on demand)."""
import os
import threading

import pytest
import torch

from engine.openmp import release_thread_pool


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/task") or torch.get_num_threads() < 2,
                    reason="counts OS threads of a multi-threaded torch on Linux")
def test_a_thread_that_ran_parallel_torch_work_gives_its_workers_back():
    result, x = {}, torch.randn(1024, 1024)

    def work():
        (x @ x).sum()  # a parallel region: this thread now owns an OpenMP team
        result["with_pool"] = _threads()
        result["released"] = release_thread_pool()
        result["after_release"] = _threads()
        result["product"] = x @ x  # parallel work again after the release

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert result["released"] is True
    assert result["after_release"] <= result["with_pool"] - (torch.get_num_threads() - 1)
    torch.testing.assert_close(result["product"], x @ x)
