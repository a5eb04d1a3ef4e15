"""A fast GGUF (v2/v3) header parser: metadata as plain Python values and tensors as numpy views of a memmap.

``gguf.GGUFReader`` builds a numpy view per field element and takes seconds on a 49k-token vocabulary; this
reads the same header in well under a second. Dequantization still goes through ``gguf.quants``.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_NP = {0: np.uint8, 1: np.int8, 2: np.uint16, 3: np.int16, 4: np.uint32, 5: np.int32, 6: np.float32, 7: np.bool_,
       10: np.uint64, 11: np.int64, 12: np.float64}
_STRING, _ARRAY = 8, 9


@dataclass
class GgufTensor:
    name: str
    qtype: int  # gguf.GGMLQuantizationType value
    shape: tuple[int, ...]  # torch order (outermost first), e.g. (out, in)
    data: np.ndarray  # raw bytes (quantized) or typed values


class GgufFile:
    def __init__(self, path: str | Path):
        import gguf

        self.path = Path(path)
        self._buf = np.memmap(self.path, dtype=np.uint8, mode="r")
        mv = memoryview(self._buf)
        self._mv, self._pos = mv, 0
        if bytes(mv[:4]) != b"GGUF":
            raise ValueError(f"{self.path} is not a GGUF file")
        self._pos = 4
        version = self._u32()
        if version < 2:
            raise ValueError(f"{self.path}: GGUF version {version} is not supported (need 2 or 3)")
        n_tensors, n_kv = self._u64(), self._u64()
        self.metadata: dict = {}
        for _ in range(n_kv):
            key = self._str()
            self.metadata[key] = self._value(self._u32())
        infos = []
        for _ in range(n_tensors):
            name = self._str()
            dims = [self._u64() for _ in range(self._u32())]
            qtype, offset = self._u32(), self._u64()
            infos.append((name, dims, qtype, offset))
        align = int(self.metadata.get("general.alignment", 32))
        data_start = (self._pos + align - 1) // align * align
        self.tensors: dict[str, GgufTensor] = {}
        for name, dims, qtype, offset in infos:
            block, type_size = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType(qtype)]
            n = int(np.prod(dims))
            start = data_start + offset
            raw = self._buf[start:start + n // block * type_size]
            shape = tuple(reversed(dims))
            if qtype == 0:  # F32
                data = raw.view(np.float32).reshape(shape)
            elif qtype == 1:  # F16
                data = raw.view(np.float16).reshape(shape)
            else:  # quantized rows: [..., bytes per row]
                data = raw.reshape(*shape[:-1], dims[0] // block * type_size)
            self.tensors[name] = GgufTensor(name, qtype, shape, data)
        del self._mv

    def _take(self, n: int) -> memoryview:
        b = self._mv[self._pos:self._pos + n]
        self._pos += n
        return b

    def _u32(self) -> int:
        return struct.unpack("<I", self._take(4))[0]

    def _u64(self) -> int:
        return struct.unpack("<Q", self._take(8))[0]

    def _str(self) -> str:
        return bytes(self._take(self._u64())).decode("utf-8", errors="replace")

    def _value(self, vtype: int):
        if vtype == _STRING:
            return self._str()
        if vtype == _ARRAY:
            item_type, count = self._u32(), self._u64()
            if item_type in _NP:  # numeric arrays in one read
                dt = np.dtype(_NP[item_type])
                return np.frombuffer(self._take(dt.itemsize * count), dtype=dt).tolist()
            return [self._value(item_type) for _ in range(count)]
        fmt = _SCALARS.get(vtype)
        if fmt is None:
            raise ValueError(f"{self.path}: unknown GGUF value type {vtype}")
        return struct.unpack(fmt, self._take(struct.calcsize(fmt)))[0]

    def dequantize(self, name: str) -> np.ndarray:
        import gguf

        t = self.tensors[name]
        return gguf.quants.dequantize(t.data, gguf.GGMLQuantizationType(t.qtype)).reshape(t.shape)
