"""Dense sentence embeddings (all-MiniLM-L6-v2 by default, loaded from the packaged weights, CPU)."""
from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np

from engine.openmp import _libgomp, release_thread_pool

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

SMALL_ENCODE = 4  # up to this many texts (search queries) run on the calling thread alone, no OpenMP team
_SHARED: dict[str, "Embedder"] = {}
_SHARED_LOCK = threading.Lock()


class Embedder:
    """Loads lazily; ``encode`` is serialised by a lock (one model, many threads)."""

    def __init__(self, model_path: Path, device: str = "cpu", batch_size: int = 32):
        self.model_path = Path(model_path)
        self.device = device
        self.batch_size = batch_size
        self._model = None
        self._lock = threading.Lock()

    @property
    def model(self):
        if self._model is None:
            from sentence_transformers import SentenceTransformer

            self._model = SentenceTransformer(str(self.model_path), device=self.device)
        return self._model

    @property
    def dim(self) -> int:
        getter = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        return int(getter())

    def encode(self, texts: list[str], release_pool: bool = True, busy_cores: int = 0) -> np.ndarray:
        """Unit-norm embeddings. ``release_pool=False`` keeps this thread's OpenMP pool for the next batch (the
        ingest thread encodes batch after batch; it calls ``release_thread_pool`` itself when the job ends).
        ``busy_cores``: cores the team leaves to others (the ingest pipeline passes them while the machine is
        oversubscribed); the OpenMP team is that much smaller, so no member waits at every barrier for a core
        the OS has given away."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock, _thread_cap(1 if len(texts) <= SMALL_ENCODE else None, busy_cores):
            vecs = self.model.encode(
                texts, batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True,
                show_progress_bar=False,
            )
            # request and job threads come and go; an OpenMP pool left on each would slow the engine's
            # loop thread in the same process (engine/openmp.py)
            if release_pool:
                release_thread_pool()
        return np.asarray(vecs, dtype=np.float32)


class _thread_cap:
    """Cap this thread's OpenMP team (this thread's ICV only; other threads keep theirs). A search query runs
    without a team: a team of 2 waits at every barrier for whichever thread the OS has parked; on this
    project's 2-core box under load (load average 24) one query took 3.3 s with the team and 0.2 s without;
    unloaded, a short query gains little from a second thread anyway. Ingest batches run one thread short of
    the team for each busy core they are told of."""

    def __init__(self, cap: int | None, busy_cores: int = 0):
        self.cap, self.busy = cap, max(0, busy_cores)
        self.lib = _libgomp() if (cap is not None or self.busy) else None
        self.prev = 0

    def __enter__(self):
        if self.lib is not None:
            self.prev = self.lib.omp_get_max_threads()
            n = self.cap if self.cap is not None else self.prev
            self.lib.omp_set_num_threads(max(1, min(n, self.prev - self.busy)))
        return self

    def __exit__(self, *exc):
        if self.lib is not None and self.prev > 0:
            self.lib.omp_set_num_threads(self.prev)


def shared_embedder(model_path: Path) -> Embedder:
    """One embedder per model path per process (the weights are loaded once)."""
    key = str(Path(model_path).resolve())
    with _SHARED_LOCK:
        if key not in _SHARED:
            _SHARED[key] = Embedder(Path(model_path))
        return _SHARED[key]
