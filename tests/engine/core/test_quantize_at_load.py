"""A BF16 Hugging Face checkpoint quantized to NVFP4 at load, and the same weights as a ModelOpt NVFP4 export
(hf_quant_config.json, uint8 weight / e4m3 weight_scale / fp32 weight_scale_2 / input_scale, an exclude
list), both on the tiny hybrid against its bf16 logits; the tensors quantized are exactly those
engine.quant.policy names (what the planner counts), with the same bytes; shards are read in order, each
released before the next; a checkpoint contradicting its declared quantization is refused.

Tolerance (stated; measured on this model in brackets). NVFP4 rounds Gaussian weights with a relative RMS
error of ~9.5%: each quantized tensor's error must be <= 11% (0.092-0.098). A random 6-block model compounds
that noise (no training made it robust), so against the bf16 logits we require a correlation >= 0.8 (0.84)
and a largest error <= 100% of the largest bf16 logit (0.75); what pins the mechanism down is exactness:
the NVFP4 model's logits equal, to 1e-4, those of the same model with every weight replaced by its
dequantized NVFP4 value (dequantization is checked bit by bit in test_quant_formats.py), and the ModelOpt
export's logits equal the quantized-at-load ones exactly.
"""
from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file, save_file

from engine.forward_context import DenseContext
from engine.layers.linear import Linear
from engine.layers.moe import Experts
from engine.loader import load_model
from engine.loader.names import nemotron_names
from engine.quant import Nvfp4Tensor
from engine.quant.nvfp4 import quantize_nvfp4
from engine.quant.policy import is_quantized, weight_bytes, weight_plan

WEIGHT_TOL, REL_TOL, MIN_CORR = 0.11, 1.0, 0.8
SHAPE = dict(moe_latent_size=16, hidden_size=64, head_dim=16, moe_intermediate_size=32, intermediate_size=96,
             moe_shared_expert_intermediate_size=48)


@pytest.fixture(scope="module")
def bf16_folder(tmp_path_factory):
    from nemotron_fixtures import build_reference

    ref = build_reference("M*EM-E", seed=11, **SHAPE).to(torch.bfloat16)
    folder = tmp_path_factory.mktemp("bf16")
    ref.save_pretrained(folder, max_shard_size="30KB")  # several shards
    assert len(list(folder.glob("*.safetensors"))) >= 2
    return folder


def logits(loaded) -> torch.Tensor:
    ids = torch.randint(0, 96, (23,), generator=torch.Generator().manual_seed(4))
    m = loaded.model
    with torch.inference_mode():
        h = m(ids, torch.arange(23), DenseContext.for_model(m).next_step([23]))
        return m.compute_logits(h).float()


def rel_err(got, want) -> float:
    return ((got - want).abs().max() / want.abs().max()).item()


def corr(got, want) -> float:
    return torch.corrcoef(torch.stack([got.flatten(), want.flatten()]))[0, 1].item()


def quantized_names(model) -> set[str]:
    out = set()
    for name, m in model.named_modules():
        if isinstance(m, Linear) and m.compressed:
            out.add(f"{name}.weight")
        elif isinstance(m, Experts) and m.compressed_up:
            out |= {f"{name}.up", f"{name}.down"}
    return out


def dequantized_copy(loaded):
    """The same model with every NVFP4 weight replaced by its dense dequantized value (fp32)."""
    import copy
    loaded = copy.deepcopy(loaded)
    for m in loaded.model.modules():
        if isinstance(m, Linear) and m.compressed:
            m.set_weight([m.dense_weight(torch.float32)], torch.float32, "cpu")
        elif isinstance(m, Experts) and m.compressed_up:
            for attr in ("up", "down"):
                dense = torch.stack([p.dequantize() for p in getattr(m, f"compressed_{attr}")])
                setattr(m, attr, torch.nn.Parameter(dense, requires_grad=False))
                setattr(m, f"compressed_{attr}", None)
    return loaded


def test_nvfp4_at_load_matches_bf16_and_the_policy(bf16_folder):
    from engine.llm_engine import _weights_bytes

    dense = load_model(bf16_folder, dtype=torch.bfloat16, cpu_gemm="plain", quantize="none")
    want = logits(dense)
    q = load_model(bf16_folder, dtype=torch.bfloat16, cpu_gemm="plain", quantize="nvfp4")
    got = logits(q)
    assert want.abs().max() > 1.0
    assert rel_err(got, want) <= REL_TOL and corr(got, want) >= MIN_CORR, (rel_err(got, want), corr(got, want))
    assert 0 < rel_err(got, want)  # it did quantize
    by_name = dict(dense.model.named_modules())
    for name, m in q.model.named_modules():
        if isinstance(m, Linear) and m.compressed:
            w = by_name[name].weight.float()
            assert ((m.dense_weight(torch.float32) - w).norm() / w.norm()).item() <= WEIGHT_TOL, name
    exact = load_model(bf16_folder, dtype=torch.float32, cpu_gemm="plain", quantize="nvfp4")
    torch.testing.assert_close(logits(exact), logits(dequantized_copy(exact)), rtol=0, atol=1e-4)
    plan = weight_plan(q.config, "nvfp4")
    assert quantized_names(q.model) == {t.name for t in plan if t.quantized}
    kinds = {type(p).__name__ for m in q.model.modules() for p in (getattr(m, "compressed", None) or [])}
    assert kinds == {"Nvfp4Tensor"}
    assert q.model.blocks[2].mixer.router_weight.dtype == torch.float32  # the router stays fp32, as counted
    assert _weights_bytes(q.model) == weight_bytes(q.config, "nvfp4", 2).total


def test_shards_are_read_in_order_and_released(bf16_folder, monkeypatch):
    from engine.loader import safetensors_source

    sources = []
    real = safetensors_source.SafetensorsSource

    class Recording(real):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            sources.append(self)
            self.released = []

        def release(self, shard):
            self.released.append(shard)
            super().release(shard)

    monkeypatch.setattr(safetensors_source, "SafetensorsSource", Recording)
    load_model(bf16_folder, dtype=torch.bfloat16, cpu_gemm="plain", quantize="nvfp4")
    (src,) = sources
    shards = sorted(set(src._where.values()))
    assert sorted(src.opened) == shards  # each shard opened once
    assert sorted(src.released) == shards  # and released after its last tensor was read
    assert src.max_open <= 2  # one shard at a time, two where a parameter's tensors span a boundary


def write_modelopt(bf16_folder, out, exclude=("lm_head", "*.gate", "*.mixer.o_proj"), pack_excluded=False):
    """The tiny model as ModelOpt exports NVFP4: every tensor the policy quantizes (unless excluded) as
    packed uint8 + weight_scale (e4m3 [out, in/16]) + weight_scale_2 (fp32 []) + input_scale (fp32 [])."""
    import fnmatch

    cfg = json.loads((bf16_folder / "config.json").read_text())
    out.mkdir()
    (out / "config.json").write_text(json.dumps(cfg))
    (out / "hf_quant_config.json").write_text(json.dumps(
        {"producer": {"name": "modelopt", "version": "0.29.0"},
         "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": None, "group_size": 16,
                          "exclude_modules": list(exclude)}}))
    loaded = load_model(bf16_folder, dtype=torch.bfloat16, cpu_gemm="plain", quantize="none")
    ours_of = {}
    for ours, srcs in nemotron_names(loaded.config, "model" if "model_type" in cfg else "backbone").items():
        for s in srcs:
            ours_of[s] = ours
    sd = {}
    for f in sorted(bf16_folder.glob("*.safetensors")):
        sd.update(load_file(str(f)))
    prefix = "model." if any(k.startswith("model.") for k in sd) else "backbone."
    names = nemotron_names(loaded.config, prefix[:-1])
    ours_of = {s: o for o, srcs in names.items() for s in srcs}
    written = {}
    for name, t in sd.items():
        ours = ours_of.get(name)
        if ours is None and ".experts." in name:  # per-expert tensor: its stacked parameter
            base = name.split(".experts.")[0] + ".experts." + name.split(".")[-2]
            ours = ours_of.get(base)
        module = name[: -len(".weight")]
        excluded = any(fnmatch.fnmatchcase(module, f"*{p}") or fnmatch.fnmatchcase(module, p) for p in exclude)
        shape = (2, *t.shape) if ".experts." in name else tuple(t.shape)
        if ours is None or not is_quantized(ours, shape, "nvfp4") or (excluded and not pack_excluded):
            written[name] = t
            continue
        q = quantize_nvfp4(t)
        written[name] = q.packed
        written[f"{module}.weight_scale"] = q.block_scale
        written[f"{module}.weight_scale_2"] = q.global_scale.float()
        written[f"{module}.input_scale"] = torch.tensor(1.0 / 448)
    save_file(written, str(out / "model.safetensors"))
    return out


def test_modelopt_export_loads_with_its_exclusions(bf16_folder, tmp_path):
    want = logits(load_model(bf16_folder, dtype=torch.bfloat16, cpu_gemm="plain", quantize="none"))
    folder = write_modelopt(bf16_folder, tmp_path / "modelopt")
    m = load_model(folder, dtype=torch.bfloat16, cpu_gemm="plain")  # on CPU: no quantize at load
    got = logits(m)
    assert rel_err(got, want) <= REL_TOL and corr(got, want) >= MIN_CORR, (rel_err(got, want), corr(got, want))
    names = quantized_names(m.model)
    o_proj = {n for n in names if n.endswith("o_proj.weight")}
    assert not o_proj and any(n.endswith("qkv_proj.weight") for n in names)  # the excluded module stays dense
    experts = next(b.mixer.experts for b in m.model.blocks if b.kind == "moe")
    assert all(isinstance(p, Nvfp4Tensor) for p in experts.compressed_up)
    # quantizing at load honours the same exclusions and gives the same weights
    again = load_model(folder, dtype=torch.bfloat16, cpu_gemm="plain", quantize="nvfp4")
    assert quantized_names(again.model) == names
    torch.testing.assert_close(logits(again), got, rtol=0, atol=0)


def test_a_checkpoint_contradicting_its_declared_quantization_is_refused(bf16_folder, tmp_path):
    folder = write_modelopt(bf16_folder, tmp_path / "bad", pack_excluded=True)
    with pytest.raises(ValueError, match="excludes"):
        load_model(folder, dtype=torch.bfloat16, cpu_gemm="plain")
    cfg = json.loads((folder / "hf_quant_config.json").read_text())
    cfg["quantization"]["quant_algo"] = "W4A8_AWQ"
    (folder / "hf_quant_config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match="not supported"):
        load_model(folder, dtype=torch.bfloat16, cpu_gemm="plain")
