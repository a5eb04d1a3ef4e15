"""The decode step on static buffers (what a CUDA graph replays) equals the eager step: the same logits and
tokens on the tiny hybrid (Mamba2 + attention + MoE) and on a tiny Llama, fp32 and fp8 KV, with padded
batches; the graph capture itself on CUDA."""
from __future__ import annotations

import pytest
import torch
from hybrid_fixtures import on_device, random_hybrid, triton_device, use_interpreter_without_cuda

from engine import kv_quant
from engine.config import AttentionSpec, BlockSpec, MlpSpec, ModelConfig
from engine.llm_engine import EngineConfig, LLMEngine
from engine.sampling import SamplingParams
from engine.static_decode import batch_sizes, padded_size, write_fp8_decode

use_interpreter_without_cuda()  # the Triton case: compiled on CUDA, else interpreted on a CPU

PROMPTS = [[3, 14, 15, 92, 65], [35, 89, 79, 32, 38, 46, 26, 43, 38, 32, 79, 50, 28], [8, 41, 1, 16],
           [5, 6, 7], [60, 61, 62, 63, 64, 65, 66, 67, 68]]


def tiny_llama_config() -> ModelConfig:
    attn = AttentionSpec(num_heads=4, num_kv_heads=2, head_dim=8, rope=True)
    blocks = [BlockSpec("attention", attention=attn), BlockSpec("mlp", mlp=MlpSpec(48, "silu_gated"))] * 2
    return ModelConfig(arch="llama", vocab_size=96, hidden_size=32, blocks=blocks, eos_token_ids=(),
                       name="tiny-llama")


@pytest.fixture(scope="module")
def tiny_llama():
    return random_hybrid(tiny_llama_config(), seed=1)


def lockstep(loaded, kv_dtype: str, kernels: str, n: int = 6, n_prompts: int = 3, max_num_seqs: int = 4):
    """Two engines (eager / static decode) fed the same requests and stepped together; -> per-step logits
    pairs and both outputs."""
    def engine(mode):
        return LLMEngine(loaded, EngineConfig(max_model_len=64, max_num_seqs=max_num_seqs, kv_dtype=kv_dtype,
                                              chunk_tokens=16, block_size=8, speculative=False,
                                              kernels=kernels, decode_graphs=mode))
    eager, static = engine("off"), engine("static")
    assert eager.runner.graphs is None and static.runner.graphs is not None
    params = [SamplingParams(max_tokens=n, ignore_eos=True), SamplingParams(max_tokens=n, temperature=0.9, seed=4),
              SamplingParams(max_tokens=n, temperature=1.2, top_k=10, top_p=0.9, seed=9)]
    pairs, outs = [], []
    for e in (eager, static):
        outs.append([e.add_request(p, params[i % 3]) for i, p in enumerate(PROMPTS[:n_prompts])])
    while eager.has_work or static.has_work:
        eager.step()
        static.step()
        pairs.append((eager.runner.last_logits, static.runner.last_logits))
    return pairs, [[s.output_ids for s in seqs] for seqs in outs], static


@pytest.mark.parametrize("kv_dtype", ["float32", "fp8"])
@pytest.mark.parametrize("model", ["tiny_hybrid", "tiny_llama"])
def test_static_decode_step_equals_the_eager_step(request, model, kv_dtype):
    loaded = request.getfixturevalue(model)
    pairs, (want, got), static = lockstep(loaded, kv_dtype, "torch")
    assert got == want and all(len(o) == 6 for o in got)
    assert static.runner.graphs.eager_steps >= 5  # the decode steps took the static path (3 rows padded to 4)
    for a, b in pairs:
        assert (a is None) == (b is None)
        if a is not None:
            torch.testing.assert_close(b, a, rtol=0, atol=1e-5)


@pytest.mark.slow
def test_static_decode_with_triton_kernels_equals_the_eager_step(tiny_hybrid):
    """What the CUDA graph replays, with the Triton decode attention and Mamba update (interpreted on a CPU)."""
    pytest.importorskip("triton")
    pairs, (want, got), static = lockstep(on_device(tiny_hybrid, triton_device()), "fp8", "triton", n=4)
    assert got == want and static.runner.graphs.eager_steps >= 3
    for a, b in pairs:
        if a is not None:
            torch.testing.assert_close(b, a, rtol=0, atol=1e-4)


def test_static_decode_with_the_engine_s_cpu_ops_and_a_batch_padded_to_eight(tiny_hybrid):
    """Default ops (no kernels): the static step uses the reference decode attention; 5 sequences run as 8."""
    pairs, (want, got), static = lockstep(tiny_hybrid, "float32", "default", n_prompts=5, max_num_seqs=8)
    assert got == want
    assert static.runner.graphs.sizes == [1, 2, 4, 8] and static.runner.graphs.eager_steps >= 5
    for a, b in pairs:
        if a is not None:
            torch.testing.assert_close(b, a, rtol=0, atol=1e-4)


def test_decode_graph_settings(tiny_hybrid, tiny_llama):
    """auto: no graphs and no static step on a CPU; capture refused off CUDA; a sliding-window model keeps the
    eager step under auto and refuses the static one; unknown values are refused."""
    import dataclasses

    def make(loaded, mode):
        return LLMEngine(loaded, EngineConfig(max_model_len=64, max_num_seqs=2, kv_dtype="float32",
                                              decode_graphs=mode))
    assert make(tiny_hybrid, "auto").runner.graphs is None
    with pytest.raises(ValueError, match="needs a CUDA device"):
        make(tiny_hybrid, "capture")
    with pytest.raises(ValueError, match="unknown decode_graphs"):
        make(tiny_hybrid, "always")
    cfg = tiny_llama_config()
    cfg.blocks = [dataclasses.replace(b, attention=dataclasses.replace(b.attention, sliding_window=8))
                  if b.attention else b for b in cfg.blocks]
    windowed = random_hybrid(cfg, seed=1)
    assert make(windowed, "auto").runner.graphs is None
    with pytest.raises(ValueError, match="sliding-window"):
        make(windowed, "static")


def test_batch_sizes_and_padding():
    assert batch_sizes(1) == [1]
    assert batch_sizes(8) == [1, 2, 4, 8]
    assert batch_sizes(40) == [1, 2, 4, 8, 16, 32, 40]
    assert padded_size(batch_sizes(40), 17) == 32 and padded_size(batch_sizes(40), 33) == 40
    assert padded_size(batch_sizes(8), 9) is None


def test_fp8_decode_write_equals_the_general_write():
    """One token per block (a decode step), magnitudes that grow the exponent and ones that do not, a fresh
    block: the static-shape write stores the same bytes and scales as kv_quant.write_fp8."""
    g = torch.Generator().manual_seed(0)
    KV, HD, BS, nb = 2, 8, 4, 6
    pool = torch.zeros(KV, nb * BS, HD).to(kv_quant.FP8)
    scales = kv_quant.new_scales(KV, nb, "cpu")
    first = torch.randn(9, KV, HD, generator=g)  # blocks 0..2 hold 3 tokens each
    kv_quant.write_fp8(pool, scales, torch.tensor([0, 1, 2, 4, 5, 6, 8, 9, 10]), first, BS)
    ref_pool, ref_scales = pool.clone(), scales.clone()
    x = torch.randn(4, KV, HD, generator=g) * torch.tensor([1.0, 100.0, 1e-3, 5.0])[:, None, None]
    slots = torch.tensor([3, 7, 11, 16])  # blocks 0, 1, 2 and the fresh block 4
    kv_quant.write_fp8(ref_pool, ref_scales, slots, x, BS)
    write_fp8_decode(pool, scales, slots, x, BS)
    assert torch.equal(scales, ref_scales)
    used = torch.tensor([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 16])
    assert torch.equal(pool.view(torch.uint8)[:, used], ref_pool.view(torch.uint8)[:, used])


def test_gathered_moe_equals_the_per_expert_loop(tiny_hybrid):
    """The sync-free expert path (used off the CPU, capturable) equals the per-expert loop, also when its
    pairs are split into several chunks."""
    from engine.layers.moe import MoE

    moe = next(m for m in tiny_hybrid.model.modules() if isinstance(m, MoE))
    x = torch.randn(7, 32, generator=torch.Generator().manual_seed(2))
    w, idx = moe.route(x)
    want = moe.experts(x, idx, w)
    for chunk in (1 << 30, 3 * 2 * 16 * 32 * 4):
        torch.testing.assert_close(moe.experts.forward_gathered(x, idx, w, chunk_bytes=chunk), want,
                                   rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("scale", ["block", "tensor"])
def test_gathered_moe_with_fp8_experts_equals_the_expert_loop(scale):
    """FP8 experts off the CPU take the gathered path (no bincount().tolist() host sync): the routed experts'
    bytes gathered and dequantized, never all experts; the per-expert parts become views of one stack."""
    from engine.layers.moe import Experts
    from engine.quant.fp8 import quantize_fp8

    g = torch.Generator().manual_seed(5)
    E, inter, dim = 6, 48, 32
    ex = Experts(E, dim, inter)
    ex.compressed_up = [quantize_fp8(torch.randn(inter, dim, generator=g) / dim ** 0.5,
                                     block=16 if scale == "block" else None) for _ in range(E)]
    ex.compressed_down = [quantize_fp8(torch.randn(dim, inter, generator=g) / inter ** 0.5,
                                       block=16 if scale == "block" else None) for _ in range(E)]
    x = torch.randn(5, dim, generator=g)
    idx = torch.rand(5, E, generator=g).topk(2, dim=-1).indices
    w = torch.rand(5, 2, generator=g)
    want = ex(x, idx, w)  # CPU: the per-expert loop
    got = ex.forward_gathered(x, idx, w, chunk_bytes=3 * 2 * inter * dim * 4)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    up, _ = ex._fp8_stacked()
    assert ex.compressed_up[2].data.data_ptr() == up.data[2].data_ptr()
    torch.testing.assert_close(ex(x, idx, w), want, rtol=0, atol=0)  # the views read the same bytes


def test_prompt_ids_out_of_range_are_refused_before_any_step(tiny_hybrid):
    engine = LLMEngine(tiny_hybrid, EngineConfig(max_model_len=64, max_num_seqs=2, kv_dtype="float32"))
    for bad in ([1, 96], [-1], [1, 2.0]):
        with pytest.raises(ValueError, match="token id out of range"):
            engine.add_request(bad)
    assert not engine.has_work


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graph capture needs a CUDA device")
def test_captured_decode_graphs_equal_eager_decode_without_host_sync():
    from hybrid_fixtures import tiny_hybrid_config

    from engine.sampling import SamplingBatch, sample_tokens

    loaded = random_hybrid(tiny_hybrid_config())
    loaded.model.to("cuda")
    loaded.model.share_rotaries("cuda")

    def run(mode):
        e = LLMEngine(loaded, EngineConfig(max_model_len=64, max_num_seqs=4, kv_dtype="fp8", chunk_tokens=16,
                                           block_size=8, speculative=False, device="cuda", decode_graphs=mode))
        seqs = [e.add_request(p, SamplingParams(max_tokens=6, ignore_eos=True)) for p in PROMPTS[:3]]
        while e.has_work:
            e.step()
        return e, [s.output_ids for s in seqs]

    _, want = run("off")
    engine, got = run("capture")
    graphs = engine.runner.graphs
    assert graphs.captured == [1, 2, 4] and graphs.capture_error is None and graphs.replays >= 5
    assert got == want
    seqs = [engine.add_request(p, SamplingParams(max_tokens=4, ignore_eos=True)) for p in PROMPTS[:2]]
    engine.step()  # prefill
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:  # a replayed step and device sampling: no host sync until the ids are copied back
        logits = graphs.run(seqs)
        sample_tokens(logits, SamplingBatch.prepare([s.params for s in seqs], [1, 2], [0, 0], logits.shape[-1],
                                                    "cuda"))
    finally:
        torch.cuda.set_sync_debug_mode(0)
