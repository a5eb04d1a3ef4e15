"""What this CPU's torch build can do, for tests of paths that exist only there (a test skips, with the reason,
where the engine itself falls back)."""
from __future__ import annotations

import torch


def onednn_bf16() -> bool:
    """oneDNN packs and runs a bf16 linear here (AVX512-BF16 / AMX CPUs; without it the engine stays fp32)."""
    from engine.layers.linear import _pack_onednn

    return _pack_onednn(torch.ones(8, 8, dtype=torch.bfloat16)) is not None


NO_ONEDNN_BF16 = "this CPU has no oneDNN bf16 GEMM (no AVX512-BF16): the engine keeps these GEMMs in fp32"
