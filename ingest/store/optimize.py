"""Qdrant Edge's ``optimize()`` (the HNSW build) in a child process, so the serving process's GIL stays free.

qdrant-edge-py 0.9 holds the GIL for the whole of ``EdgeShard.optimize()`` (measured: a Python thread of the
same process did not run once during a 6 s optimize; the service stalled up to 56 s at 100k points), and it
has no threaded or non-blocking variant. A shard folder is owned by one process (its WAL is locked), so the
child works on a copy:

1. the owner flushes the shard and, with its writes held back (searches go on), copies the folder to
   ``<shard>.optimizing``;
2. a child process (``python -m ingest.store.optimize <copy> <dim>``) loads the copy, optimizes, flushes and
   closes it: the graph build runs on the child's GIL and cores;
3. the owner swaps the folders: close, ``<shard>`` -> ``<shard>.old``, copy -> ``<shard>``, load. Searches
   wait only for this close/rename/load; ``<shard>.old`` is deleted afterwards.

Nothing is written to the shard between the copy and the swap (writes wait), so the optimized copy holds
exactly the shard's points. A crash at any step leaves a complete shard: ``recover_swap`` (run before every
load) puts ``<shard>.old`` back when the swap was cut between its two renames and deletes leftovers.
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

log = logging.getLogger(__name__)
CHILD_TIMEOUT_S = 3600.0


def work_path(path: Path) -> Path:
    return path.with_name(path.name + ".optimizing")


def old_path(path: Path) -> Path:
    return path.with_name(path.name + ".old")


def recover_swap(path: Path) -> None:
    """Before loading ``path``: undo a swap a crash cut short, drop the leftovers of an unfinished one."""
    old, work = old_path(path), work_path(path)
    if not path.exists() and old.exists():
        os.rename(old, path)  # crashed between the two renames: the shard as it was before
        log.warning("vector store: an interrupted index swap was rolled back (%s)", path)
    shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(old, ignore_errors=True)


def optimize_copy(path: Path, dim: int) -> Path | None:
    """Copy the (flushed, not written meanwhile) shard at ``path`` and optimize the copy in a child process.
    Returns the optimized copy's folder, or None when there was nothing to optimize. Raises RuntimeError when
    the child fails (the shard at ``path`` is untouched)."""
    work = work_path(path)
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(path, work)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(Path(__file__).resolve().parents[2]),
                                                                  os.environ.get("PYTHONPATH", "")) if p)}
    try:
        proc = subprocess.run([sys.executable, "-m", "ingest.store.optimize", str(work), str(dim)],
                              capture_output=True, text=True, timeout=CHILD_TIMEOUT_S, env=env)
    except (OSError, subprocess.SubprocessError) as exc:
        shutil.rmtree(work, ignore_errors=True)
        raise RuntimeError(f"the optimize process could not run: {exc}") from exc
    if proc.returncode != 0:
        shutil.rmtree(work, ignore_errors=True)
        raise RuntimeError(f"the optimize process failed (exit {proc.returncode}): {proc.stderr.strip()[-2000:]}")
    changed = bool(json.loads(proc.stdout.strip().splitlines()[-1])["changed"])
    if not changed:
        shutil.rmtree(work, ignore_errors=True)
        return None
    return work


def swap_in(path: Path, work: Path) -> None:
    """Replace the (closed) shard folder ``path`` by the optimized ``work``; then ``old`` can be deleted."""
    old = old_path(path)
    shutil.rmtree(old, ignore_errors=True)
    os.rename(path, old)
    os.rename(work, path)


def main(argv: list[str]) -> int:
    """The child: optimize the shard copy at argv[0] (dense size argv[1]) and print {"changed": bool}."""
    try:
        os.nice(5)  # the serving process's requests come first
    except OSError:
        pass
    _die_with_parent()
    import qdrant_edge as qe

    from ingest.store.edge_config import edge_config

    shard = qe.EdgeShard.load(argv[0], edge_config(int(argv[1])))
    try:
        changed = shard.optimize()
        shard.flush()
    finally:
        shard.close()
    print(json.dumps({"changed": bool(changed)}))
    return 0


def _die_with_parent() -> None:
    """A server killed mid-optimize takes this child with it (Linux), so no orphan writes into the copy
    that the restarted server deletes (``recover_swap``)."""
    try:
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
