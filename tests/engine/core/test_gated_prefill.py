"""A gated MLP on int4 weights (engine/quant/cpu_kernels.py ``GatedPrefill``): long GEMMs (prefill chunks) run
silu(gate) * up in the epilogues of two bf16 oneDNN halves of the weight, on the same bf16 values as the
Linear's dense copy; few rows keep the int4 kernel; both stay within bf16 rounding of the fp32 MLP."""
import pytest
import torch
import torch.nn.functional as F

from engine.config import MlpSpec
from engine.layers.linear import INT4_MAX_ROWS
from engine.layers.mlp import MLP
from engine.quant.cpu_kernels import COMPUTE_DTYPE, GatedPrefill

H, I = 128, 96


def gated_mlp(seed: int = 3) -> MLP:
    g = torch.Generator().manual_seed(seed)
    mlp = MLP(H, MlpSpec(intermediate_size=I, activation="silu_gated"))
    mlp.up_proj.weight.data = torch.randn(2 * I, H, generator=g) * 0.1
    mlp.down_proj.weight.data = torch.randn(H, I, generator=g) * 0.1
    return mlp


def reference(mlp: MLP, x: torch.Tensor) -> torch.Tensor:
    gate, up = F.linear(x, mlp.up_proj.weight).split(I, dim=-1)
    return F.linear(F.silu(gate) * up, mlp.down_proj.weight)


@pytest.fixture(scope="module")
def packed():
    if not torch.ops.mkldnn._is_mkldnn_bf16_supported():
        pytest.skip("oneDNN has no bf16 GEMM on this CPU (no AVX512-BF16/AMX): the int4 path keeps its fp32 copy")
    ref, mlp = gated_mlp(), gated_mlp()
    assert mlp.pack_cpu("int4") == 2
    return ref, mlp


def test_int4_gated_mlp_gets_bf16_halves_instead_of_the_fused_dense_copy(packed):
    _, mlp = packed
    assert isinstance(mlp.prefill_gated, GatedPrefill) and mlp.gate_proj is None
    assert mlp.up_proj.packed_kind == "int4" and mlp.up_proj.dense_packed is None  # the halves replace it
    assert mlp.packed_nbytes == 2 * I * H * 2  # bf16 [gate; up], counted once


def test_halves_hold_the_dense_copy_values(packed):
    _, mlp = packed
    w = mlp.up_proj.packed.dequantize(COMPUTE_DTYPE)  # what the int4 kernel multiplies by
    x = torch.randn(40, H).to(COMPUTE_DTYPE)
    gate = torch.ops.mkldnn._linear_pointwise(x, mlp.prefill_gated.gate, None, "none", [], "")
    up = torch.ops.mkldnn._linear_pointwise(x, mlp.prefill_gated.up, None, "none", [], "")
    want = F.linear(x.float(), w.float())
    torch.testing.assert_close(torch.cat([gate, up], -1).float(), want, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("rows", [1, INT4_MAX_ROWS, INT4_MAX_ROWS + 1, 300])
def test_both_paths_stay_within_bf16_rounding_of_the_fp32_mlp(packed, rows):
    ref, mlp = packed
    x = torch.randn(rows, H, generator=torch.Generator().manual_seed(rows))
    with torch.inference_mode():
        got, want = mlp(x), reference(ref, x)
    assert got.dtype == torch.float32 and got.shape == (rows, H)
    assert float((got - want).abs().max() / want.abs().max()) < 3e-2
    if rows > INT4_MAX_ROWS:  # the epilogue path: the same as the unfused product on the same bf16 halves
        xb = x.to(COMPUTE_DTYPE)
        g = torch.ops.mkldnn._linear_pointwise(xb, mlp.prefill_gated.gate, None, "none", [], "").float()
        u = torch.ops.mkldnn._linear_pointwise(xb, mlp.prefill_gated.up, None, "none", [], "").float()
        unfused = mlp.down_proj(F.silu(g) * u)
        torch.testing.assert_close(got, unfused, rtol=2e-2, atol=2e-2)
