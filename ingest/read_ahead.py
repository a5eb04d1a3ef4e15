"""Files parsed ahead of the embedder, on one worker thread.

For each file the worker runs ``DocumentPipeline.prepare(staged=True)`` (hash, page text, chunks, sparse
vectors), hands it over, then runs ``complete`` (the slow table search) while the consumer embeds that
file's chunks; ``finish`` waits for ``complete`` before it commits. Nothing is written here: a crash loses only
read-ahead work.
"""
from __future__ import annotations

import queue
import threading
from pathlib import Path
from typing import Iterator

from ingest.pipeline import READ_AHEAD, DocumentPipeline, Prepared


def read_ahead(pipeline: DocumentPipeline, items: list[tuple[Path, str]], tenant: str,
               depth: int = READ_AHEAD) -> Iterator[Prepared]:
    """``prepare`` each (path, filename) on a worker thread, up to ``depth`` files ahead of the consumer,
    so parsing the next file overlaps embedding this one. Nothing is written before ``finish``: a crash
    loses only read-ahead work."""
    q: queue.Queue = queue.Queue(maxsize=max(1, depth))
    stop = threading.Event()
    end = object()

    def work() -> None:
        try:
            for path, name in items:
                if stop.is_set():
                    return
                prep = pipeline.prepare(Path(path), tenant, name, staged=True)
                q.put(prep)  # the consumer embeds its chunks while the tables are searched here
                if not prep.done.is_set():
                    pipeline.complete(prep)
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer
            q.put(exc)
        finally:
            q.put(end)

    worker = threading.Thread(target=work, name="lexicon-read-ahead", daemon=True)
    worker.start()
    try:
        while (got := q.get()) is not end:
            if isinstance(got, BaseException):
                raise got
            yield got
    finally:
        stop.set()
        while worker.is_alive():  # unblock a worker waiting on a full queue
            try:
                q.get(timeout=0.1)
            except queue.Empty:
                pass
        worker.join()

