"""Read tensors from a Hugging Face folder of ``*.safetensors`` files, recognising compressed weights.

A ``<name>.weight`` comes back as ``Fp8Tensor`` when it is float8 with ``weight_scale_inv`` or
``weight_scale``, as ``Nvfp4Tensor`` when it is packed uint8 with ``weight_scale`` (e4m3, per 16) and
``weight_scale_2`` (fp32 global), and as a dense tensor otherwise.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import torch
from safetensors import safe_open

from engine.quant import Fp8Tensor, Nvfp4Tensor


class SafetensorsSource:
    """Shards are opened on first read and closed by ``release`` (the loader releases each shard when its
    tensors are done, so the mapped pages of one shard at a time stay resident); ``opened`` logs the opens."""

    def __init__(self, folder: str | Path, fp8_block_size: tuple[int, int] | None = None):
        self.folder = Path(folder)
        self.fp8_block_size = fp8_block_size
        files = sorted(self.folder.glob("*.safetensors"))
        if not files:
            raise FileNotFoundError(f"no *.safetensors files in {self.folder}")
        self._handles: dict[Path, object] = {}
        self._where: dict[str, Path] = {}
        self.opened: list[Path] = []
        self.max_open = 0  # the most shards open at once
        for f in files:
            with safe_open(str(f), framework="pt") as h:
                for k in h.keys():
                    self._where[k] = f

    def shard_of(self, name: str) -> Optional[Path]:
        return self._where.get(name)

    def release(self, shard: Path) -> None:
        """Close ``shard`` (reopened if read again)."""
        h = self._handles.pop(shard, None)
        if h is not None and hasattr(h, "__exit__"):
            h.__exit__(None, None, None)

    def _handle(self, shard: Path):
        if shard not in self._handles:
            self._handles[shard] = safe_open(str(shard), framework="pt")
            self.opened.append(shard)
            self.max_open = max(self.max_open, len(self._handles))
        return self._handles[shard]

    def keys(self) -> list[str]:
        return list(self._where)

    def has(self, name: str) -> bool:
        return name in self._where

    def raw(self, name: str) -> torch.Tensor:
        if name not in self._where:
            raise KeyError(f"checkpoint in {self.folder} has no tensor {name!r}")
        return self._handle(self._where[name]).get_tensor(name)

    def get(self, name: str):
        w = self.raw(name)
        base = name[: -len(".weight")] if name.endswith(".weight") else name
        if w.dtype == torch.float8_e4m3fn:
            for scale_name in (f"{base}.weight_scale_inv", f"{base}.weight_scale", f"{name}_scale_inv", f"{name}_scale"):
                if self.has(scale_name):
                    return Fp8Tensor.from_checkpoint(w, self.raw(scale_name), self.fp8_block_size)
            raise ValueError(f"FP8 tensor {name!r} has no weight_scale_inv / weight_scale next to it")
        if w.dtype == torch.uint8 and self.has(f"{base}.weight_scale"):
            if not self.has(f"{base}.weight_scale_2"):
                raise ValueError(f"NVFP4 tensor {name!r} has no weight_scale_2 (global scale)")
            return Nvfp4Tensor.from_checkpoint(w, self.raw(f"{base}.weight_scale"), self.raw(f"{base}.weight_scale_2"))
        return w
