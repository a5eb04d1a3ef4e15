"""CPU-packed projections (engine/layers/linear.py): oneDNN keeps the weights' dtype exactly, its fused
epilogues equal the unfused ops, a gated MLP split into gate/up GEMMs equals the stacked one, fp16 packing
rounds only the weights, and a whole model packed for oneDNN equals the same model on plain F.linear."""
import pytest
import torch
import torch.nn.functional as F

from cpu_features import NO_ONEDNN_BF16, onednn_bf16  # tests/cpu_features.py
from engine.config import MlpSpec
from engine.layers.linear import Linear
from engine.layers.mlp import MLP


def dense_linear(n_in: int, n_out: int, bias: bool, dtype=torch.float32, seed: int = 0) -> Linear:
    g = torch.Generator().manual_seed(seed)
    lin = Linear(n_in, n_out, bias=bias)
    lin.set_weight([torch.randn(n_out, n_in, generator=g) / n_in ** 0.5], dtype, "cpu")
    if bias:
        lin.bias = torch.nn.Parameter(torch.randn(n_out, generator=g).to(dtype), requires_grad=False)
    return lin


@pytest.mark.parametrize("rows", [1, 8, 40, 512])
@pytest.mark.parametrize("bias", [False, True])
def test_onednn_packed_linear_equals_f_linear_in_fp32(rows, bias):
    lin = dense_linear(96, 200, bias)
    w, b = lin.weight.clone(), None if lin.bias is None else lin.bias.clone()
    assert lin.pack_cpu("onednn") and lin.packed_kind == "onednn" and lin.weight.numel() == 0
    x = torch.randn(rows, 96)
    got = lin(x)
    assert got.dtype == torch.float32 and got.shape == (rows, 200)
    torch.testing.assert_close(got, F.linear(x, w, b), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(lin(x[None]), got[None], rtol=0, atol=0)  # 3-D input, same rows
    wide = torch.randn(rows, 2 * 96)
    torch.testing.assert_close(lin(wide[:, ::2]), F.linear(wide[:, ::2], w, b), rtol=1e-5, atol=1e-5)  # strided
    assert lin.packed_nbytes == 96 * 200 * 4


@pytest.mark.skipif(not onednn_bf16(), reason=NO_ONEDNN_BF16)
def test_onednn_packed_linear_in_bf16_and_wrong_dtype_is_an_error():
    lin = dense_linear(64, 48, True, dtype=torch.bfloat16)
    w, b = lin.weight.clone(), lin.bias.clone()
    assert lin.pack_cpu("onednn")
    x = torch.randn(5, 64).bfloat16()
    torch.testing.assert_close(lin(x).float(), F.linear(x, w, b).float(), rtol=2e-2, atol=2e-2)
    with pytest.raises(TypeError, match="packed"):
        lin(torch.randn(5, 64))
    with pytest.raises(RuntimeError, match="packed"):
        lin.dense_weight()


def test_fused_epilogues_equal_unfused_ops():
    lin = dense_linear(64, 80, True)
    w, b = lin.weight.clone(), lin.bias.clone()
    lin.pack_cpu("onednn")
    x, other = torch.randn(7, 64), torch.randn(7, 80)
    torch.testing.assert_close(lin.forward_silu(x), F.silu(F.linear(x, w, b)), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(lin.forward_mul(x, other), F.linear(x, w, b) * other, rtol=1e-5, atol=1e-5)
    plain = dense_linear(64, 80, True)  # unpacked: the same methods fall back to the plain ops
    torch.testing.assert_close(plain.forward_mul(x, other), F.linear(x, w, b) * other)


def test_gated_mlp_split_for_onednn_equals_the_stacked_mlp():
    torch.manual_seed(0)
    mlp = MLP(48, MlpSpec(72, activation="silu_gated"))
    mlp.up_proj.set_weight([torch.randn(144, 48) / 7], torch.float32, "cpu")
    mlp.down_proj.set_weight([torch.randn(48, 72) / 8.5], torch.float32, "cpu")
    x = torch.randn(11, 48)
    want = mlp(x)
    assert mlp.pack_cpu("onednn") == 3
    assert mlp.gate_proj is not None and mlp.up_proj.out_features == 72
    torch.testing.assert_close(mlp(x), want, rtol=1e-5, atol=1e-5)


def test_fp16_packing_rounds_only_the_weights_and_skips_what_it_cannot_hold():
    lin = dense_linear(64, 32, False)
    w = lin.weight.clone()
    assert lin.pack_cpu("fp16") and lin.packed_kind == "fp16"
    x = torch.randn(4, 64)
    torch.testing.assert_close(lin(x), F.linear(x, w.half().float()), rtol=1e-4, atol=1e-4)
    big = dense_linear(8, 8, False)
    big.weight.data[0, 0] = 1e6  # beyond fp16 range: stays exact fp32
    assert not big.pack_cpu("fp16") and big.packed is None
    with pytest.raises(ValueError, match="unknown CPU GEMM"):
        big.pack_cpu("int3")


def test_whole_model_packed_for_onednn_equals_plain_f_linear(tmp_path):
    from engine.forward_context import DenseContext
    from engine.loader import load_model
    from nemotron_fixtures import build_reference, save_reference

    folder = save_reference(build_reference("M*-E", seed=3), tmp_path / "ckpt")
    plain, packed = load_model(folder, cpu_gemm="plain"), load_model(folder)
    assert sum(isinstance(m, Linear) and m.packed is not None for m in packed.model.modules()) >= 6
    ids = torch.randint(0, 96, (23,))
    with torch.inference_mode():
        logits = [m.model.compute_logits(m.model(ids, torch.arange(23), DenseContext.for_model(m.model).next_step([23])))
                  for m in (plain, packed)]
    torch.testing.assert_close(logits[1], logits[0], rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="cpu_gemm"):
        load_model(folder, cpu_gemm="fast")
