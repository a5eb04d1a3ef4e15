"""GGUF blocks kept quantized and run by torch's CPU int4 GEMM (engine/quant/gguf_blocks.py, cpu_kernels.py,
Linear "int4"): the blocks decode exactly like ``gguf.quants``, the int4 kernel applies the file's own codes
(only bf16 scales), Q8_0 / dense weights as two 4-bit planes equal their per-32 rounding, and a packed Linear
gives F.linear's result within bf16 rounding on both its int4 (few rows) and dense-copy (many rows) paths."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from engine.layers.linear import INT4_MAX_ROWS, Linear
from engine.loader.gguf_file import GgufFile
from engine.loader.gguf_source import GgufSource
from engine.quant import Fp8Tensor
from engine.quant.cpu_kernels import COMPUTE_DTYPE, Int4Weight, round_q8
from engine.quant.gguf_blocks import QTYPES, GgufBlockTensor


@pytest.fixture(scope="module")
def gguf_file():
    from app.settings import packaged_llm_gguf

    return GgufFile(packaged_llm_gguf())


def blocks(file: GgufFile, name: str, rows: int = 96) -> tuple[GgufBlockTensor, torch.Tensor]:
    """The first ``rows`` rows of a file tensor as blocks, and gguf.quants' dequantization of them."""
    import gguf

    t = file.tensors[name]
    raw = np.array(t.data[:rows])
    want = gguf.quants.dequantize(raw, gguf.GGMLQuantizationType(t.qtype)).reshape(rows, t.shape[1])
    return GgufBlockTensor(torch.from_numpy(raw), QTYPES[t.qtype], t.shape[1]), torch.from_numpy(want.astype(np.float32))


def rel_err(got: torch.Tensor, want: torch.Tensor) -> float:
    return float((got - want).abs().max() / want.abs().max())


@pytest.mark.parametrize("name", ["blk.0.attn_q.weight", "blk.7.ffn_down.weight", "token_embd.weight"])
def test_blocks_dequantize_like_gguf_quants(gguf_file, name):
    t, want = blocks(gguf_file, name)
    assert t.qtype == ("Q8_0" if name == "token_embd.weight" else "Q4_1")
    assert torch.equal(t.dequantize(), want)
    assert t.nbytes == t.raw.numel() < want.numel() * (1.1 if t.bits == 8 else 0.65)


def test_source_keeps_blocks_with_q_rows_unpermuted(gguf_file):
    dense, kept = GgufSource(gguf_file.path, gguf_file), GgufSource(gguf_file.path, gguf_file, keep_quantized=True)
    for name in ("model.layers.2.self_attn.q_proj.weight", "model.layers.2.self_attn.k_proj.weight",
                 "model.layers.2.mlp.up_proj.weight"):
        got = kept.get(name)
        assert isinstance(got, GgufBlockTensor)
        assert torch.equal(got.dequantize(), dense.get(name))
    assert isinstance(kept.get("model.norm.weight"), torch.Tensor)  # F32 stays dense
    assert kept.quantized_types() == {"Q4_1", "Q8_0"}


def test_int4_kernel_applies_the_q4_1_codes(gguf_file):
    (q, want_q), (k, want_k) = blocks(gguf_file, "blk.1.attn_q.weight"), blocks(gguf_file, "blk.1.attn_k.weight", 64)
    w = Int4Weight.from_parts([q, k])
    want = torch.cat([want_q, want_k])
    got = w.dequantize()
    # exact codes; only the fp16 scale d and zero m + 8d are rounded to bf16 (8 bits): |diff| <~ 2^-8 |w|
    assert (got - want).abs().max() <= 2 ** -7 * want.abs().max()
    assert not torch.equal(got, torch.zeros_like(got))
    x = torch.randn(3, q.in_features)
    assert rel_err(w(x), x @ want.t()) < 1e-2  # bf16 activations
    assert w.nbytes <= want.numel() * 0.625  # half a byte per value + bf16 scale and zero per 32, like Q4_1


def test_q8_planes_equal_the_file_codes_and_a_dense_rounding(gguf_file):
    t, want = blocks(gguf_file, "token_embd.weight", 256)
    from_blocks, (from_dense, dense) = Int4Weight.from_parts([t]), Int4Weight.from_parts([want], with_dense=True)
    # the dense weight dequantized from Q8_0 is rounded back to the same codes and scales
    assert torch.equal(from_blocks.packed, from_dense.packed)
    assert torch.equal(from_blocks.scales_zeros, from_dense.scales_zeros)
    assert torch.equal(dense, want)
    assert from_blocks.in_features == t.in_features and from_blocks.repeat_input
    assert (from_blocks.dequantize() - want).abs().max() <= 2 ** -7 * want.abs().max()
    x = torch.randn(2, t.in_features)
    assert rel_err(from_blocks(x), x @ want.t()) < 1e-2


def test_round_q8_is_a_per_32_rounding():
    w = torch.randn(8, 64)
    w[0, 3] = 50.0  # an outlier spoils only its own block of 32
    q, d = round_q8(w)
    back = (q.float().view(8, 2, 32) * d[..., None]).view(8, 64)
    assert q.dtype == torch.int8 and q.abs().max() == 127
    assert (back - w).abs()[0, 32:].max() <= d[0, 1] / 2 + 1e-6
    assert (back - w).abs().max() <= d.max() / 2 + 1e-6
    with pytest.raises(ValueError, match="multiple of 32"):
        round_q8(torch.randn(4, 40))


def test_linear_int4_packs_gguf_parts_and_switches_to_the_dense_copy(gguf_file):
    parts = [blocks(gguf_file, f"blk.3.{n}.weight", 64) for n in ("attn_q", "attn_k", "attn_v")]
    want = torch.cat([w for _, w in parts])
    lin = Linear(576, want.shape[0], bias=True)
    lin.bias = torch.nn.Parameter(torch.randn(want.shape[0]), requires_grad=False)
    lin.set_weight([p for p, _ in parts], torch.float32, "cpu")
    assert lin.compressed is not None and lin.pack_cpu("int4")
    assert lin.packed_kind == "int4" and lin.compressed is None and lin.weight.numel() == 0
    assert lin.decode_nbytes == lin.packed.nbytes <= want.numel() * 0.625
    assert not lin.pack_cpu("int4")  # already packed
    for rows in (1, INT4_MAX_ROWS, INT4_MAX_ROWS + 1, 64):
        x = torch.randn(rows, 576)
        got = lin(x)
        assert got.dtype == torch.float32 and got.shape == (rows, want.shape[0])
        assert rel_err(got, F.linear(x, want, lin.bias)) < 1e-2, rows
    if lin.dense_packed is not None:  # the two paths multiply by the same bf16 weight
        x = torch.randn(INT4_MAX_ROWS + 1, 576)
        small = torch.cat([lin(x[i:i + 1]) for i in range(len(x))])
        assert rel_err(lin(x), small) < 1e-2
    with pytest.raises(RuntimeError, match="int4-packed"):
        lin.dense_weight()


def test_linear_int4_rounds_dense_weights_to_8_bits_and_falls_back_to_onednn():
    torch.manual_seed(0)
    w = torch.randn(48, 64)
    lin = Linear(64, 48)
    lin.set_weight([w], torch.float32, "cpu")
    assert lin.pack_cpu("int4") and lin.packed.repeat_input
    x = torch.randn(2, 64)
    assert rel_err(lin(x), x @ w.t()) < 1e-2
    fp8 = Linear(64, 48)
    from engine.quant.fp8 import quantize_fp8
    fp8.set_weight([quantize_fp8(w, block=None)], torch.float32, "cpu")
    assert isinstance(fp8.compressed[0], Fp8Tensor) and not fp8.pack_cpu("int4") and fp8.packed is None
    odd = Linear(40, 16)
    odd.set_weight([torch.randn(16, 40)], torch.float32, "cpu")
    assert odd.pack_cpu("int4") and odd.packed_kind == "onednn"  # K not a multiple of 32: exact oneDNN instead
    rows = Linear(64, 40)
    rows.set_weight([torch.randn(40, 64)], torch.float32, "cpu")
    assert rows.pack_cpu("int4") and rows.packed_kind == "onednn"  # rows not a multiple of 16
    assert COMPUTE_DTYPE == torch.bfloat16


def test_gguf_blocks_the_int4_kernel_cannot_take_are_dequantized_for_onednn(gguf_file):
    t, want = blocks(gguf_file, "blk.0.attn_k.weight", 40)  # 40 rows: not a multiple of the kernel's 16
    lin = Linear(576, 40)
    lin.set_weight([t], torch.float32, "cpu")
    assert lin.pack_cpu("int4") and lin.packed_kind == "onednn" and lin.compressed is None
    x = torch.randn(2, 576)
    torch.testing.assert_close(lin(x), x @ want.t(), rtol=1e-4, atol=1e-4)


def test_bad_blocks_are_refused():
    with pytest.raises(ValueError, match="do not hold"):
        GgufBlockTensor(torch.zeros(4, 19, dtype=torch.uint8), "Q4_1", 32)
    with pytest.raises(ValueError, match="not kept quantized"):
        GgufBlockTensor(torch.zeros(4, 20, dtype=torch.uint8), "Q5_K", 32)
