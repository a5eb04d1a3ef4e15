"""The resumable per-question journal: one JSON line per answered question, appended and fsynced.

A record's ``key`` is question id + document content hash + run fingerprint; a rerun skips the keys
already present (a torn last line from a kill is ignored and redone).
"""
from __future__ import annotations

import json
import os
from pathlib import Path


def journal_path(out: Path) -> Path:
    return out.with_name(out.stem + ".journal.jsonl")


def record_key(item_id: str, content_hash: str, fingerprint: str) -> str:
    return f"{item_id}|{(content_hash or '')[:12]}|{fingerprint}"


def read_records(path: Path) -> dict[str, dict]:
    out: dict[str, dict] = {}
    if not path.exists():
        return out
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(rec, dict) and "key" in rec:
            out[rec["key"]] = rec
    return out


class Journal:
    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self.records = read_records(path)
        self._fh = open(path, "a", encoding="utf-8")

    def append(self, rec: dict) -> None:
        self._fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self.records[rec["key"]] = rec

    def close(self) -> None:
        self._fh.close()
