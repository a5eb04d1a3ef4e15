"""One-time migration of qdrant-client's old local store (``data_dir/qdrant``) into the Edge shard.

Runs on the first start of a data dir that has the old store and no Edge shard yet. Every point is read
with its vectors and payload (the sparse vectors come from the same tokenizer, so they carry over as they
are) and written into a new shard built in a temporary folder, which is flushed and renamed into place
only when complete: a crash mid-way leaves the old store as it was and the migration starts over on the
next start. The old folder is then renamed ``qdrant.migrated`` (kept, not deleted; remove it by hand).
"""
from __future__ import annotations

import logging
import shutil
from pathlib import Path

log = logging.getLogger(__name__)


def migrate_local_store(old: Path, collection: str, dest: Path, dim: int) -> int:
    """Copy ``collection`` from the local store at ``old`` into a new Edge shard at ``dest``; points copied."""
    from ingest.store.edge import EdgeVectorStore
    from ingest.store.server import ServerVectorStore

    if not (old / "collection" / collection).exists():
        return 0
    tmp = dest.with_name(dest.name + ".migrating")
    shutil.rmtree(tmp, ignore_errors=True)
    src = ServerVectorStore(collection, dim, path=old)
    n = 0
    try:
        target = EdgeVectorStore(tmp, dim)
        try:
            for batch in src.scroll_all():
                target.upsert(batch)
                n += len(batch)
            if n != src.count():
                raise RuntimeError(f"migration copied {n} of {src.count()} points from {old}")
            target.optimize()
        finally:
            target.close()
    finally:
        src.close()
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp.rename(dest)
    old.rename(old.with_name(old.name + ".migrated"))
    log.warning("migrated %d points from the old local vector store %s to Qdrant Edge at %s", n, old, dest)
    return n
