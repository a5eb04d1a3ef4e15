"""Weights quantized at load, and the quantization a checkpoint declares (NVIDIA ModelOpt exports).

A BF16 Hugging Face checkpoint loads as NVFP4 (or FP8) with ``load_model(..., quantize="nvfp4")``: each tensor
that ``engine.quant.policy.is_quantized`` names is read from its shard, moved to the target device,
quantized there and its dense copy dropped, so the host holds one tensor at a time; the loader walks the
shards in order and releases each one when its tensors are done (engine/loader/safetensors_source.py), so
the mapped pages of at most one shard stay resident.

A ModelOpt NVFP4 export declares itself in ``hf_quant_config.json`` (``{"quantization": {"quant_algo":
"NVFP4", "group_size": 16, "exclude_modules": [...]}}``) or in config.json's ``quantization_config``
(``quant_method "modelopt"``, ``quant_algo``, ``ignore`` / ``exclude_modules``). Its tensors are
``weight`` (uint8, two e2m1 per byte), ``weight_scale`` (e4m3 per 16), ``weight_scale_2`` (fp32 per tensor)
and ``input_scale`` (activation scale for FP4 tensor cores, which this engine does not use: read past).
``read_quant_config`` returns what the checkpoint declares; ``check_declared`` refuses a checkpoint whose
tensors contradict it (an excluded module stored packed, a group size other than 16, an unknown algorithm).
"""
from __future__ import annotations

import fnmatch
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import torch

KNOWN_ALGOS = ("NVFP4", "FP8")


@dataclass(frozen=True)
class QuantConfig:
    algo: Optional[str] = None  # "NVFP4" | "FP8" | None (not a ModelOpt export)
    exclude: tuple[str, ...] = field(default_factory=tuple)  # module name patterns kept dense
    group_size: Optional[int] = None
    source: str = ""

    def excluded(self, module: str) -> bool:
        """Is the checkpoint module ``module`` (a tensor name without ``.weight``) in the exclude list?"""
        return any(fnmatch.fnmatchcase(module, p) or fnmatch.fnmatchcase(module, f"*.{p}")
                   or module == p for p in self.exclude)


def read_quant_config(folder: Path, raw: dict) -> QuantConfig:
    """The quantization a folder declares: hf_quant_config.json first, else config.json's quantization_config
    when it is a ModelOpt one; ``QuantConfig()`` when neither says anything."""
    hq = folder / "hf_quant_config.json"
    if hq.exists():
        q = json.loads(hq.read_text()).get("quantization", {})
        return _parse(q, str(hq.name))
    qc = raw.get("quantization_config") or {}
    if qc.get("quant_method") == "modelopt" or "quant_algo" in qc:
        return _parse(qc, "config.json quantization_config")
    return QuantConfig()


def _parse(q: dict, source: str) -> QuantConfig:
    algo = q.get("quant_algo")
    if algo is not None and str(algo).upper() not in KNOWN_ALGOS:
        raise ValueError(f"{source}: quant_algo {algo!r} is not supported (known: {', '.join(KNOWN_ALGOS)})")
    group = q.get("group_size")
    if algo and str(algo).upper() == "NVFP4" and group not in (None, 16):
        raise ValueError(f"{source}: NVFP4 group_size {group} (this engine reads blocks of 16)")
    exclude = tuple(q.get("exclude_modules") or q.get("ignore") or ())
    return QuantConfig(str(algo).upper() if algo else None, exclude, group, source)


def check_declared(qc: QuantConfig, hf_name: str, part) -> None:
    """Refuse a tensor that contradicts the declared quantization: an excluded module stored quantized."""
    from engine.quant import QuantizedTensor
    module = hf_name[: -len(".weight")] if hf_name.endswith(".weight") else hf_name
    if qc.algo and isinstance(part, QuantizedTensor) and qc.excluded(module):
        raise ValueError(f"{hf_name} is stored {type(part).__name__} but {qc.source} excludes {module!r}")


def quantize_dense(t: torch.Tensor, fmt: str, device) -> object:
    """One dense [out, in] weight -> its ``fmt`` form on ``device`` (quantized there; the dense copy dropped)."""
    from engine.quant.fp8 import quantize_fp8
    from engine.quant.nvfp4 import quantize_nvfp4
    w = t.to(device)
    if fmt == "nvfp4":
        return quantize_nvfp4(w)
    if fmt == "fp8":
        return quantize_fp8(w, block=128)
    raise ValueError(f"cannot quantize at load to {fmt!r}: nvfp4 | fp8")
