"""FP8 (e4m3 + fp32 scales) and NVFP4 (e2m1 + e4m3 per-16 + fp32 global) weights: round trips against an
independent reference dequantization, stored compressed, and whole checkpoints loaded in those formats."""
import json

import pytest
import torch
from safetensors.torch import load_file, save_file

from engine.forward_context import DenseContext
from engine.layers.linear import Linear
from engine.loader import load_model
from engine.quant import Fp8Tensor, Nvfp4Tensor
from engine.quant.fp8 import quantize_fp8
from engine.quant.nvfp4 import E2M1_VALUES, quantize_nvfp4


def reference_fp8_block_dequant(data, scale_inv, block):
    """Loop over tiles, the way DeepSeek's reference ``weight_dequant`` reads ``weight_scale_inv``."""
    out = torch.empty(data.shape)
    for i in range(scale_inv.shape[0]):
        for j in range(scale_inv.shape[1]):
            tile = data[i * block:(i + 1) * block, j * block:(j + 1) * block].float()
            out[i * block:(i + 1) * block, j * block:(j + 1) * block] = tile * scale_inv[i, j]
    return out


def reference_nvfp4_dequant(packed, block_scale, global_scale):
    """Bit by bit: sign bit 3, magnitude code bits 0-2, element 2j in the low nibble of byte j."""
    rows, half = packed.shape
    out = torch.empty(rows, half * 2)
    for r in range(rows):
        for j in range(half):
            byte = int(packed[r, j])
            for k, nib in enumerate((byte & 0xF, byte >> 4)):
                v = E2M1_VALUES[nib & 0x7] * (-1.0 if nib & 0x8 else 1.0)
                col = 2 * j + k
                out[r, col] = v * float(block_scale[r, col // 16].float()) * float(global_scale)
    return out


def test_fp8_block_round_trip():
    w = torch.randn(300, 200, generator=torch.Generator().manual_seed(1)) * 0.05
    q = quantize_fp8(w, block=128)
    assert q.data.dtype == torch.float8_e4m3fn and q.scale.shape == (3, 2)
    deq = q.dequantize(torch.float32)
    assert torch.equal(deq, reference_fp8_block_dequant(q.data, q.scale, 128))
    # e4m3 keeps 3 mantissa bits: relative error <= 2^-4 for normal values
    big = w.abs() > w.abs().max() * 2 ** -6
    assert ((deq - w).abs()[big] / w.abs()[big]).max() <= 2 ** -4 + 1e-6
    # checkpoint form: weight_scale_inv [ceil(out/128), ceil(in/128)] multiplies the fp8 values
    again = Fp8Tensor.from_checkpoint(q.data, q.scale)
    assert again.block == (128, 128) and torch.equal(again.dequantize(), deq)
    with pytest.raises(ValueError, match="does not tile"):
        Fp8Tensor.from_checkpoint(q.data, torch.ones(160, 2))
    small = quantize_fp8(w, block=16)  # 300 rows: 19 row blocks of 16, which no smaller count could tell
    assert torch.equal(Fp8Tensor.from_checkpoint(small.data, small.scale, (16, 16)).dequantize(), small.dequantize())


def test_fp8_per_tensor_and_per_row_scales():
    w = torch.randn(16, 32, generator=torch.Generator().manual_seed(2))
    q = quantize_fp8(w, block=None)
    assert q.scale.dim() == 0 and (q.dequantize() - w).abs().max() < 0.07 * w.abs().max()
    row_scale = w.abs().amax(1) / 448.0
    rq = Fp8Tensor.from_checkpoint((w / row_scale[:, None]).to(torch.float8_e4m3fn), row_scale)
    assert torch.allclose(rq.dequantize(), w, rtol=2 ** -4, atol=1e-6)


def test_nvfp4_round_trip_and_bit_layout():
    w = torch.randn(6, 64, generator=torch.Generator().manual_seed(0))
    q = quantize_nvfp4(w)
    assert q.packed.dtype == torch.uint8 and q.packed.shape == (6, 32)
    assert q.block_scale.dtype == torch.float8_e4m3fn and q.block_scale.shape == (6, 4)
    deq = q.dequantize()
    assert torch.allclose(deq, reference_nvfp4_dequant(q.packed, q.block_scale, q.global_scale), rtol=1e-6, atol=0)
    # each value is the nearest e2m1 grid point of its block: error <= half the largest grid gap (1.0) * scale
    step = (q.block_scale.float() * q.global_scale).repeat_interleave(16, dim=1)
    assert ((deq - w).abs() <= 1.0 * step + 1e-6).all()
    # hand-made bytes: 0x21 = [0.5 (code 1), 1.0 (code 2)], 0x9F = [-6 (code 15), -0.5 (code 9)]
    packed = torch.tensor([[0x21, 0x9F] + [0] * 6], dtype=torch.uint8)
    hand = Nvfp4Tensor(packed, torch.full((1, 1), 2.0).to(torch.float8_e4m3fn), torch.tensor(0.5))
    assert hand.dequantize()[0, :4].tolist() == [0.5, 1.0, -6.0, -0.5]


def test_linear_keeps_weights_compressed():
    w = torch.randn(256, 128, generator=torch.Generator().manual_seed(3))
    lin = Linear(128, 256)
    parts = [quantize_fp8(w[:128]), quantize_fp8(w[128:])]  # fused projection from two compressed parts
    lin.set_weight(parts, torch.float32, "cpu")
    assert lin.compressed is not None and lin.weight.numel() == 0
    assert sum(p.nbytes for p in lin.compressed) < w.numel() * 4 / 3
    x = torch.randn(3, 128)
    expected = x @ torch.cat([p.dequantize() for p in parts]).T
    assert torch.allclose(lin(x), expected, atol=1e-5)
    with pytest.raises(ValueError, match="does not match"):
        Linear(128, 100).set_weight(parts, torch.float32, "cpu")


def _quantize_checkpoint(folder, fmt, block=16):
    """Rewrite a saved checkpoint's projection and expert weights in ``fmt`` with the usual tensor names."""
    path = folder / "model.safetensors"
    sd = load_file(str(path))
    out = {}
    for name, t in sd.items():
        quantizable = name.endswith("proj.weight") and t.dim() == 2 and "gate." not in name
        if not quantizable:
            out[name] = t
            continue
        base = name[: -len(".weight")]
        if fmt == "fp8":
            q = quantize_fp8(t, block=block)
            out[name], out[f"{base}.weight_scale_inv"] = q.data, q.scale
        else:
            q = quantize_nvfp4(t)
            out[name], out[f"{base}.weight_scale"], out[f"{base}.weight_scale_2"] = q.packed, q.block_scale, q.global_scale
    save_file(out, str(path))
    if fmt == "fp8":  # block size as FP8 checkpoints declare it
        cfg = json.loads((folder / "config.json").read_text())
        cfg["quantization_config"] = {"quant_method": "fp8", "weight_block_size": [block, block]}
        (folder / "config.json").write_text(json.dumps(cfg))
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["fp8", "nvfp4"])
def test_model_loads_quantized_checkpoint(tmp_path, fmt):
    from nemotron_fixtures import build_reference, save_reference

    ref = build_reference("M*EM-E", seed=7, moe_latent_size=16, hidden_size=64, head_dim=16,
                          moe_intermediate_size=32, intermediate_size=96, moe_shared_expert_intermediate_size=48)
    dense_dir = save_reference(ref, tmp_path / "dense")
    quant_dir = _quantize_checkpoint(save_reference(ref, tmp_path / fmt), fmt)
    quant = load_model(quant_dir)
    kinds = {type(p).__name__ for m in quant.model.modules() if isinstance(m, Linear) and m.compressed
             for p in m.compressed}
    assert kinds == {"Fp8Tensor" if fmt == "fp8" else "Nvfp4Tensor"}
    experts = next(b.mixer.experts for b in quant.model.blocks if b.kind == "moe")
    assert experts.compressed_up is not None and len(experts.compressed_up) == 8

    # reference: the same checkpoint dequantized tensor by tensor (independent code) into a dense folder
    sd = load_file(str(quant_dir / "model.safetensors"))
    dense = {}
    for name, t in sd.items():
        if name.endswith(("weight_scale_inv", "weight_scale", "weight_scale_2")):
            continue
        base = name[: -len(".weight")]
        if fmt == "fp8" and t.dtype == torch.float8_e4m3fn:
            dense[name] = reference_fp8_block_dequant(t, sd[f"{base}.weight_scale_inv"], 16)
        elif fmt == "nvfp4" and t.dtype == torch.uint8:
            dense[name] = reference_nvfp4_dequant(t, sd[f"{base}.weight_scale"], sd[f"{base}.weight_scale_2"])
        else:
            dense[name] = t
    save_file(dense, str(dense_dir / "model.safetensors"))
    dequantized = load_model(dense_dir)

    ids = torch.randint(0, 96, (19,), generator=torch.Generator().manual_seed(8))
    with torch.inference_mode():
        got, want = [m.model.compute_logits(m.model(ids, torch.arange(19), DenseContext.for_model(m.model).next_step([19])))
                     for m in (quant, dequantized)]
    assert want.abs().max() > 0.5
    assert (got - want).abs().max() < 1e-4
