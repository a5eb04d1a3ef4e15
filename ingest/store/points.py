"""What both vector store engines (``edge``, ``server``) and their callers share: the names of the two
vectors (``DENSE``, ``SPARSE``), the RRF constant ``RRF_K``, a point (``VectorPoint``) with its sparse vector
(``SparseVec``), and ``VectorStoreBusy``.

It imports no store, so the engines take these from here while ``ingest.store.vectors`` (which opens the
engines) re-exports them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DENSE, SPARSE = "dense", "sparse"
RRF_K = 60


class VectorStoreBusy(RuntimeError):
    """The embedded store's folder is held by another process."""


@dataclass
class SparseVec:
    indices: list[int]
    values: list[float]


@dataclass
class VectorPoint:
    id: str
    dense: np.ndarray
    sparse: SparseVec
    payload: dict  # tenant, doc_id, version, ord
