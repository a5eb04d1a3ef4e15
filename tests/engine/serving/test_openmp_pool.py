"""release_thread_pool frees the calling thread's OpenMP workers (so only the engine loop thread keeps a
team), and torch keeps working on that thread afterwards (the pool comes back on demand)."""
import os
import threading

import pytest
import torch

from engine.openmp import _libgomp, release_thread_pool


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


@pytest.mark.skipif(_libgomp() is None, reason="sets the team through libgomp (torch's OpenMP runtime on Linux)")
def test_load_aware_team_computes_alone_while_the_machine_is_oversubscribed():
    from engine.openmp import LoadAwareTeam

    loads = iter([0.5, 3.5, 2.8, 2.2, 2.9, 3.1])
    team = LoadAwareTeam(threads=2, cpus=2, interval=1.0, loadavg=lambda: next(loads))
    seen = {}

    def loop():  # on its own thread, as the engine loop: the test's thread keeps its team
        seen["teams"] = [(team.update(now=float(t)), torch.get_num_threads()) for t in range(6)]
        seen["within interval"] = team.update(now=5.5)  # the load is not read again (the iterator is empty)

    t = threading.Thread(target=loop)
    t.start()
    t.join()
    # full team; over cpus + 1 -> 1; between the thresholds it stays; under cpus + 0.5 -> full again
    assert seen["teams"] == [(2, 2), (1, 1), (1, 1), (2, 2), (2, 2), (1, 1)] and seen["within interval"] == 1


@pytest.mark.skipif(torch.get_num_threads() < 2 or _libgomp() is None, reason="needs a multi-threaded torch on libgomp")
def test_load_aware_team_sets_only_the_computing_threads_team():
    from engine.openmp import LoadAwareTeam

    full, seen = torch.get_num_threads(), {}

    def loop(load: float):
        team = LoadAwareTeam(cpus=2, loadavg=lambda: load)
        seen[load] = (team.update(), torch.get_num_threads(), float((torch.ones(64, 64) @ torch.ones(64, 64))[0, 0]))

    for load in (10.0, 0.0):
        t = threading.Thread(target=loop, args=(load,))
        t.start()
        t.join()
    assert seen[10.0] == (1, 1, 64.0) and seen[0.0] == (full, full, 64.0)  # a later thread starts with the full team
    assert torch.get_num_threads() == full  # the caller's team is untouched


@pytest.mark.skipif(torch.get_num_threads() < 2 or _libgomp() is None or not os.path.isdir("/proc/self/task"),
                    reason="counts the OpenMP workers of a multi-threaded torch on libgomp")
def test_an_idle_engine_loop_gives_its_openmp_workers_back():
    """Between requests the engine loop frees its team (engine/llm.py ``_idle``): a parked pool of an idle engine
    would keep every other thread's team from spinning (issue #25: a second engine halved the first's decode)."""
    import time

    from app.settings import packaged_llm_gguf
    from engine.llm import LLM
    from engine.openmp import LoadAwareTeam
    from engine.sampling import SamplingParams

    llm = LLM(packaged_llm_gguf(), max_model_len=128, max_num_seqs=1, memory_gib=1.0, speculative=False)
    llm.team = LoadAwareTeam(cpus=os.cpu_count(), loadavg=lambda: 0.0)  # its full team whatever the machine's load
    try:
        idle = _threads()
        during = [_threads() for _ in llm.stream("The supplier shall deliver", SamplingParams(max_tokens=8,
                                                                                                ignore_eos=True))]
        assert max(during) > idle  # the loop's team had workers while it decoded
        deadline = time.monotonic() + 5.0
        while _threads() > idle and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _threads() == idle
    finally:
        llm.close()
