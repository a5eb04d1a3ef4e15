"""Keep the engine thread's OpenMP team the only one, so that its worker threads spin instead of sleeping.

libgomp (the OpenMP runtime torch's CPU wheels bundle) gives every thread that runs a parallel region its
own pool of worker threads, kept until that thread exits. While it manages more threads than there are
CPUs, it stops spinning between parallel regions ("throttled" waits of ~100 spins) and parks workers on a
futex, so every torch op pays a wake-up. A model loaded on the caller's thread and then served from the
engine's loop thread leaves two pools: measured on this project's 2-core box, the same decode ops ran
1.3-1.8x slower on the loop thread than on the thread that loaded the model, until the loading thread
released its pool (``omp_pause_resource_all``, OpenMP 5.0; it frees only the calling thread's pool).

``LoadAwareTeam``: on an oversubscribed machine an OpenMP team waits at every barrier for a member the OS has
parked, so the engine thread computes alone there: a 2,000-token prefill on this 2-vCPU VM at load 9-10 took
27-59 s with a team of two and 2.7-4.7 s on one thread (ingest/pipeline.py does the same for the embedder).
"""
from __future__ import annotations

import ctypes
import glob
import os
import time
from functools import lru_cache
from typing import Callable, Optional

OMP_PAUSE_SOFT = 1


@lru_cache(maxsize=1)
def _libgomp() -> Optional[ctypes.CDLL]:
    """torch's own copy of libgomp (already loaded: dlopen returns the same handle), or None."""
    import torch

    for path in sorted(glob.glob(os.path.join(os.path.dirname(torch.__file__), "lib", "libgomp*.so*"))):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        if hasattr(lib, "omp_pause_resource_all"):
            return lib
    return None


def release_thread_pool() -> bool:
    """Free the calling thread's OpenMP worker threads (they come back if it runs parallel work again).
    Returns False where torch does not use libgomp or the runtime refuses (e.g. inside a parallel region)."""
    lib = _libgomp()
    return lib is not None and lib.omp_pause_resource_all(OMP_PAUSE_SOFT) == 0


def oversubscribed(load: Optional[float] = None, cpus: Optional[int] = None) -> bool:
    """More runnable threads than CPUs beyond our own team: the 1-minute load average over the CPU count + 1."""
    load = os.getloadavg()[0] if load is None else load
    return load > (cpus or os.cpu_count() or 1) + 1


class LoadAwareTeam:
    """The calling thread's OpenMP team size: its full size while the 1-minute load average is under the CPU
    count + 0.5, one thread once it exceeds the CPU count + 1 (more runnable threads than CPUs beyond this
    engine's own team), unchanged in between. Checked at most once per ``interval`` seconds, from the thread
    that computes (the engine loop, before each step). Set with libgomp's ``omp_set_num_threads``, which
    changes only the calling thread's team (``torch.set_num_threads`` would also change the default of every
    thread that starts torch work later, e.g. the embedder's); without libgomp the team stays as it is."""

    def __init__(self, threads: Optional[int] = None, cpus: Optional[int] = None, interval: float = 1.0,
                 loadavg: Callable[[], float] = lambda: os.getloadavg()[0]):
        import torch

        self.full = threads or torch.get_num_threads()
        self.cpus = cpus or os.cpu_count() or 1
        self.interval, self.loadavg = interval, loadavg
        self.current: Optional[int] = None  # None: not set yet on the computing thread
        self._next = 0.0

    def update(self, now: Optional[float] = None) -> int:
        import torch

        now = time.monotonic() if now is None else now
        if self.current is not None and now < self._next:
            return self.current
        self._next = now + self.interval
        load = self.loadavg()
        if oversubscribed(load, self.cpus):
            want = 1
        else:  # back to the full team only well below the threshold (no flapping in between)
            want = self.full if load < self.cpus + 0.5 else self.current or self.full
        lib = _libgomp()
        if want != self.current and lib is not None:
            torch.get_num_threads()  # torch's per-thread lazy init first, so that it does not undo this later
            lib.omp_set_num_threads(want)
            self.current = want
        return self.current or self.full
