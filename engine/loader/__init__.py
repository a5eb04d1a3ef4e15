"""``load_model(path)``: a ``.gguf`` file (llama) or a Hugging Face folder (config.json + safetensors:
Nemotron-H, Nemotron-H Puzzle, Llama) -> our ``HybridLM`` with its tokenizer.

Dense weights are cast to ``dtype``; FP8 / NVFP4 weights stay compressed (dequantized per layer on use); GGUF
Q4_0/Q4_1/Q8_0 weights stay 4-bit for the CPU int4 GEMM when ``cpu_gemm`` is "int4" (the default for them).
The MoE router and its correction bias stay fp32, as in the reference implementation.
``quantize`` ("nvfp4" | "fp8"; default "nvfp4" for a Hugging Face folder on CUDA) stores the dense weights that
``engine.quant.policy.is_quantized`` names in that format, quantized on the device as each is read, shard by
shard (engine/loader/quantize.py); ModelOpt NVFP4 exports load as they are (their declared exclusions checked).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import torch

from engine.config import DEFAULT_CPU_GEMM, ModelConfig
from engine.hf_config import model_config_from_hf
from engine.layers.linear import CPU_GEMMS, Linear
from engine.layers.moe import Experts
from engine.loader.names import llama_names, nemotron_names
from engine.models.hybrid import HybridLM
from engine.quant import QuantizedTensor
from engine.tokenizer import Tokenizer

from engine.quant.policy import FP32_PARAMS as _FP32_PARAMS
from engine.quant.policy import is_quantized


@dataclass
class LoadedModel:
    model: HybridLM
    config: ModelConfig
    tokenizer: Optional[Tokenizer]  # None for a folder without tokenizer.json (e.g. test checkpoints)
    path: Path


def _module_and_attr(model: torch.nn.Module, dotted: str):
    mod_path, _, attr = dotted.rpartition(".")
    return model.get_submodule(mod_path) if mod_path else model, attr


def _expert_parts(source, name: str, n_experts: int) -> list:
    """Stacked ``...experts.up_proj`` or per-expert ``...experts.{e}.up_proj.weight``."""
    if source.has(name):
        w = source.get(name)
        return [w] if isinstance(w, torch.Tensor) else [w[e] for e in range(n_experts)]
    base, _, proj = name.rpartition(".")
    per_expert = [f"{base}.{e}.{proj}.weight" for e in range(n_experts)]
    if not source.has(per_expert[0]):
        raise KeyError(f"checkpoint has neither {name!r} nor {per_expert[0]!r}")
    return [source.get(n) for n in per_expert]


def _quantize(parts: list, fmt: Optional[str], ours: str, shape: tuple, srcs: list[str], declared, device) -> list:
    """Quantize the dense parts of a parameter the policy names (unless the checkpoint's declared quantization
    excludes its module); checks each part against the declared quantization first."""
    from engine.loader.quantize import check_declared, quantize_dense
    if declared is not None:
        for s, p in zip(srcs, parts):
            check_declared(declared, s, p)
    if fmt is None or not is_quantized(ours, shape, fmt):
        return parts
    if declared is not None and any(declared.excluded(s[: -len(".weight")] if s.endswith(".weight") else s)
                                    for s in srcs):
        return parts
    return [quantize_dense(p, fmt, device) if isinstance(p, torch.Tensor) else p for p in parts]


def assign_weights(model: HybridLM, source, names: dict[str, list[str]], dtype: torch.dtype, device,
                   quantize: Optional[str] = None, declared=None) -> None:
    """Fill every parameter named in ``names`` from ``source``; raise on a missing or misshaped tensor.
    ``quantize``: store the dense weights ``engine.quant.policy`` names in that format (module doc);
    ``declared``: the checkpoint's ``QuantConfig`` (engine/loader/quantize.py), checked tensor by tensor."""
    ordered = _in_shard_order(source, names)
    last_use = _last_use(source, model, ordered)  # shard -> index of the last parameter reading it
    for i, (ours, srcs) in enumerate(ordered):
        _assign_one(model, source, ours, srcs, dtype, device, quantize, declared)
        for shard in last_use.get(i, ()):
            source.release(shard)  # its tensors are done: drop its mapping


def _last_use(source, model, ordered) -> dict[int, list]:
    if getattr(source, "release", None) is None:
        return {}
    last = {}
    for i, (ours, srcs) in enumerate(ordered):
        module, _ = _module_and_attr(model, ours)
        for s in srcs:
            names = [s]
            if isinstance(module, Experts) and not source.has(s):
                base, _, proj = s.rpartition(".")
                names = [f"{base}.{e}.{proj}.weight" for e in range(module.up.shape[0])]
            for n in names:
                if source.shard_of(n) is not None:
                    last[source.shard_of(n)] = i
    out: dict[int, list] = {}
    for shard, i in last.items():
        out.setdefault(i, []).append(shard)
    return out


def _assign_one(model, source, ours: str, srcs: list[str], dtype, device, quantize, declared) -> None:
    module, attr = _module_and_attr(model, ours)
    if isinstance(module, Experts):
        parts = _expert_parts(source, srcs[0], module.up.shape[0])
        if quantize and len(parts) == 1 and isinstance(parts[0], torch.Tensor) and parts[0].dim() == 3:
            parts = list(parts[0].unbind(0))  # a stacked dense [E, I, D]: each expert its own scales
        parts = _quantize(parts, quantize, ours, tuple(getattr(module, attr).shape), srcs, declared, device)
        _set_experts(module, attr, parts, dtype, device)
        return
    parts = [source.get(s) for s in srcs]
    if isinstance(module, Linear) and attr == "weight":
        parts = _quantize(parts, quantize, ours, (module.out_features, module.in_features), srcs, declared,
                          device)
        module.set_weight(parts, dtype, device)
        return
    if any(isinstance(p, QuantizedTensor) for p in parts):
        parts = [p.dequantize(torch.float32) if isinstance(p, QuantizedTensor) else p for p in parts]
    t = torch.cat(parts) if len(parts) > 1 else parts[0]
    current = getattr(module, attr)
    if attr == "conv_weight" and t.dim() == 3:
        t = t.squeeze(1)  # HF conv1d weight [C, 1, K]
    if tuple(t.shape) != tuple(current.shape):
        raise ValueError(f"{srcs[0]}: shape {tuple(t.shape)} does not match {ours} {tuple(current.shape)}")
    target = torch.float32 if attr in _FP32_PARAMS else dtype
    setattr(module, attr, torch.nn.Parameter(t.to(device=device, dtype=target).contiguous(), requires_grad=False))


def _in_shard_order(source, names: dict[str, list[str]]) -> list[tuple[str, list[str]]]:
    """``names`` ordered by the shard holding each parameter's first tensor (a stacked expert name missing
    from the checkpoint: its expert 0), so a loader walks the shards once, in order."""
    shard_of = getattr(source, "shard_of", None)
    if shard_of is None:
        return list(names.items())

    def key(item):
        src = item[1][0]
        if not source.has(src):
            base, _, proj = src.rpartition(".")
            src = f"{base}.0.{proj}.weight"
        return str(shard_of(src) or "")
    return sorted(names.items(), key=key)


def _set_experts(module: Experts, attr: str, parts: list, dtype, device) -> None:
    current = getattr(module, attr)
    if all(isinstance(p, torch.Tensor) for p in parts):
        t = parts[0] if len(parts) == 1 else torch.stack(parts)
        if tuple(t.shape) != tuple(current.shape):
            raise ValueError(f"experts.{attr}: shape {tuple(t.shape)} does not match {tuple(current.shape)}")
        setattr(module, attr, torch.nn.Parameter(t.to(device=device, dtype=dtype).contiguous(), requires_grad=False))
        return
    if tuple(parts[0].shape) != tuple(current.shape[1:]):
        raise ValueError(f"experts.{attr}: expert shape {tuple(parts[0].shape)} != {tuple(current.shape[1:])}")
    setattr(module, f"compressed_{attr}", [p.to(device) for p in parts])
    setattr(module, attr, torch.nn.Parameter(torch.empty(len(parts), 0, 0, dtype=dtype, device=device),
                                             requires_grad=False))


def _load_gguf(path: Path, dtype, device, keep_quantized: bool = False) -> LoadedModel:
    from engine.loader.gguf_file import GgufFile
    from engine.loader.gguf_source import GgufSource, hf_config_from_gguf

    file = GgufFile(path)
    config = model_config_from_hf(hf_config_from_gguf(file))
    source = GgufSource(path, file, keep_quantized=keep_quantized)
    with torch.device("meta"):
        model = HybridLM(config)
    assign_weights(model, source, llama_names(config), dtype, device)
    _materialize_buffers(model, device)
    return LoadedModel(model.eval(), config, Tokenizer.from_gguf_metadata(file.metadata), path)


def _load_hf_folder(folder: Path, dtype, device, quantize: Optional[str] = None) -> LoadedModel:
    from engine.loader.quantize import read_quant_config
    from engine.loader.safetensors_source import SafetensorsSource

    cfg_file = folder / "config.json"
    if not cfg_file.exists():
        raise FileNotFoundError(f"{folder} has no config.json")
    raw = json.loads(cfg_file.read_text())
    config = model_config_from_hf(raw)
    declared = read_quant_config(folder, raw)
    quant = raw.get("quantization_config") or raw.get("llm_config", {}).get("quantization_config") or {}
    block = quant.get("weight_block_size")
    source = SafetensorsSource(folder, tuple(block) if block else None)
    if config.arch == "llama":
        names = llama_names(config)
    else:
        prefix = "backbone" if any(k.startswith("backbone.") for k in source.keys()) else "model"
        names = nemotron_names(config, prefix)
    if config.tie_word_embeddings is False and "lm_head.weight" in names and not source.has("lm_head.weight"):
        raise KeyError(f"{folder}: config says untied embeddings but the checkpoint has no lm_head.weight")
    with torch.device("meta"):
        model = HybridLM(config)
    assign_weights(model, source, names, dtype, device, quantize, declared if declared.algo else None)
    _materialize_buffers(model, device)
    tokenizer = Tokenizer.from_hf_folder(folder, config.eos_token_ids) if (folder / "tokenizer.json").exists() else None
    return LoadedModel(model.eval(), config, tokenizer, folder)


def _materialize_buffers(model: HybridLM, device) -> None:
    """Non-checkpoint state built on the meta device (rope inv_freq, optional biases) gets real values."""
    model.share_rotaries(device)
    for name, p in list(model.named_parameters()):
        if p.is_meta:
            raise KeyError(f"parameter {name} was not loaded from the checkpoint")


def resolve_cpu_gemm(path: str | Path, device, cpu_gemm: Optional[str] = None) -> str:
    """The CPU GEMM kind ``load_model`` uses: ``cpu_gemm``, else LEXICON_ENGINE_CPU_GEMM, else
    ``engine.config.DEFAULT_CPU_GEMM``; "auto" is "int4" for a GGUF file with Q4_0/Q4_1/Q8_0 weights on CPU,
    else "onednn"."""
    kind = cpu_gemm or os.environ.get("LEXICON_ENGINE_CPU_GEMM") or DEFAULT_CPU_GEMM
    if kind not in CPU_GEMMS + ("auto",):
        raise ValueError(f"cpu_gemm must be one of auto, {', '.join(CPU_GEMMS)}, got {kind!r}")
    if kind != "auto":
        return kind
    path = Path(path)
    if torch.device(device).type == "cpu" and path.suffix == ".gguf" and path.is_file():
        from engine.loader.gguf_file import GgufFile
        from engine.loader.gguf_source import GgufSource
        if GgufSource(path, GgufFile(path)).quantized_types():
            return "int4"
    return "onednn"


def resolve_quantize(path: Path, device, quantize: Optional[str] = None) -> Optional[str]:
    """The weight format a load quantizes to: ``quantize`` ("none" for none), else LEXICON_ENGINE_QUANTIZE,
    else "nvfp4" for a Hugging Face folder on CUDA (the format ``lexicon plan`` assumes there), else none."""
    kind = quantize or os.environ.get("LEXICON_ENGINE_QUANTIZE")
    if kind is None:
        kind = "nvfp4" if torch.device(device).type == "cuda" and Path(path).is_dir() else "none"
    if kind not in ("none", "nvfp4", "fp8"):
        raise ValueError(f"quantize must be none, nvfp4 or fp8, got {kind!r}")
    return None if kind == "none" else kind


def load_model(path: str | Path, dtype: torch.dtype = torch.float32, device: str | torch.device = "cpu",
               mamba_dt_clamp: Optional[str] = None, cpu_gemm: Optional[str] = None,
               quantize: Optional[str] = None) -> LoadedModel:
    """``mamba_dt_clamp``: override MambaSpec.dt_clamp ("kernel" default, "torch_forward" = transformers).
    ``cpu_gemm`` (CPU only; default ``resolve_cpu_gemm``: "int4" for quantized GGUF files, else "onednn"):
    "onednn" packs every projection for oneDNN's GEMM in the weights' own dtype; "int4" keeps GGUF 4/8-bit
    weights 4-bit for torch's int4 GEMM (dense weights rounded to 8 bits per 32, see
    engine/quant/cpu_kernels.py) with a dense oneDNN copy for prefill; "fp16" runs fbgemm fp16-weight GEMMs
    (weights rounded to fp16); "plain" keeps ``F.linear`` on the dense weights. See engine/layers/linear.py."""
    path = Path(path)
    cpu_gemm = resolve_cpu_gemm(path, device, cpu_gemm)
    loaded = _load(path, dtype, device, keep_quantized=cpu_gemm == "int4" and torch.device(device).type == "cpu",
                   quantize=resolve_quantize(path, device, quantize))
    if cpu_gemm != "plain":
        loaded.model.pack_cpu(cpu_gemm)
    if mamba_dt_clamp is not None:
        if mamba_dt_clamp not in ("kernel", "torch_forward"):
            raise ValueError(f"mamba_dt_clamp must be 'kernel' or 'torch_forward', got {mamba_dt_clamp!r}")
        for b in loaded.config.blocks:
            if b.mamba is not None:
                b.mamba.dt_clamp = mamba_dt_clamp  # the mixers hold these same spec objects
    return loaded


def _load(path: Path, dtype, device, keep_quantized: bool = False, quantize: Optional[str] = None) -> LoadedModel:
    if not path.exists():
        raise FileNotFoundError(f"model path {path} does not exist")
    with torch.inference_mode(False), torch.no_grad():
        if path.suffix == ".gguf":
            return _load_gguf(path, dtype, device, keep_quantized)
        if path.is_dir():
            return _load_hf_folder(path, dtype, device, quantize)
    raise ValueError(f"{path} is neither a .gguf file nor a Hugging Face model folder")
