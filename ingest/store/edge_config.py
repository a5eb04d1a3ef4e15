"""How an Edge shard is set up: its ``qe.EdgeConfig`` (``edge_config``: the two named vectors, HNSW, int8
quantization, the optimizer's segment sizes) and the search-time ``HNSW_EF``.

New points stay in an appendable segment searched by brute force (``INDEXING_THRESHOLD_KB``, ~2.6k chunks),
indexed segments are capped (``MAX_SEGMENT_KB``, ~42k chunks) and merged only past ``SEGMENT_NUMBER``
segments (why: ``ingest.store.edge``). Both the owner of a shard (``ingest.store.edge``) and the optimize
child process (``ingest.store.optimize``) load shards with this config; it imports neither.
"""
from __future__ import annotations

import qdrant_edge as qe

from ingest.store.points import DENSE, SPARSE

INDEXING_THRESHOLD_KB = 4_000
MAX_SEGMENT_KB = 64_000
SEGMENT_NUMBER = 6
HNSW_M, HNSW_EF_CONSTRUCT, HNSW_EF = 16, 100, 96


def edge_config(dim: int) -> qe.EdgeConfig:
    return qe.EdgeConfig(
        vectors={DENSE: qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine)},
        sparse_vectors={SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
        hnsw_config=qe.HnswIndexConfig(m=HNSW_M, ef_construct=HNSW_EF_CONSTRUCT, full_scan_threshold=1_000),
        # int8 copies for the graph walk, originals rescore the top candidates: ~4x less work per distance
        quantization_config=qe.ScalarQuantizationConfig(qe.ScalarType.Int8, quantile=0.99, always_ram=True),
        optimizers=qe.EdgeOptimizersConfig(default_segment_number=SEGMENT_NUMBER,
                                           indexing_threshold=INDEXING_THRESHOLD_KB, max_segment_size=MAX_SEGMENT_KB),
    )
