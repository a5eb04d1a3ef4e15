"""Keep the engine thread's OpenMP team the only one, so that its worker threads spin instead of sleeping.

libgomp (the OpenMP runtime torch's CPU wheels bundle) gives every thread that runs a parallel region its
own pool of worker threads, kept until that thread exits. While it manages more threads than there are
CPUs, it stops spinning between parallel regions ("throttled" waits of ~100 spins) and parks workers on a
futex, so every torch op pays a wake-up. A model loaded on the caller's thread and then served from the
engine's loop thread leaves two pools: measured on this project's 2-core box, the same decode ops ran
1.3-1.8x slower on the loop thread than on the thread that loaded the model, until the loading thread
released its pool (``omp_pause_resource_all``, OpenMP 5.0; it frees only the calling thread's pool).
"""
from __future__ import annotations

import ctypes
import glob
import os
from functools import lru_cache
from typing import Optional

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
