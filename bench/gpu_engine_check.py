"""The engine end to end on the device: the tiny hybrid (Mamba2 + attention + MLP + MoE) with NVFP4
projections and experts served by ``LLMEngine`` with the Triton kernels and CUDA graphs, against the same
model served with the torch reference kernels, eagerly. Exits non-zero, naming the cause, when a kernel fell
back to its reference (it could not be built here), the graph capture failed, logits are not finite, any
step's logits differ by more than ``TOL`` of their largest magnitude, or the greedy tokens differ.

    python bench/gpu_engine_check.py                          # CUDA (torch + triton only)
    TRITON_INTERPRET=1 python bench/gpu_engine_check.py --tiny  # the same on CPU, interpreted, no capture
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "engine" / "serving")]

import torch  # noqa: E402

TOL = 1e-3  # fp32 model, fp32 dots (input_precision "ieee") on both sides


def nvfp4_hybrid():
    from hybrid_fixtures import random_hybrid, tiny_hybrid_config

    from engine.layers.linear import Linear
    from engine.layers.moe import Experts
    from engine.quant.nvfp4 import quantize_nvfp4
    loaded = random_hybrid(tiny_hybrid_config(), seed=3)
    for name, m in loaded.model.named_modules():
        if isinstance(m, Linear) and m.in_features % 16 == 0 and name != "lm_head":
            m.set_weight([quantize_nvfp4(m.weight.detach())], torch.float32, "cpu")
        elif isinstance(m, Experts):
            m.compressed_up = [quantize_nvfp4(w) for w in m.up.detach()]
            m.compressed_down = [quantize_nvfp4(w) for w in m.down.detach()]
    return loaded


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tiny", action="store_true", help="CPU through the Triton interpreter (no capture)")
    args = ap.parse_args(argv)
    from hybrid_fixtures import on_device

    from engine.kernels.fallback import failures
    from engine.llm_engine import EngineConfig, LLMEngine
    from engine.sampling import SamplingParams

    dev = "cpu" if args.tiny else "cuda"
    if dev == "cuda" and not torch.cuda.is_available():
        print("no CUDA device: run with --tiny", flush=True)
        return 2
    t0 = time.perf_counter()

    def engine(kernels, graphs):  # each engine its own copy: an engine sets its kernels on the model it serves
        return LLMEngine(on_device(nvfp4_hybrid(), dev), EngineConfig(max_model_len=128, max_num_seqs=4, kv_dtype="fp8", chunk_tokens=16,
                                            block_size=8, speculative=False, device=dev, kernels=kernels,
                                            decode_graphs=graphs, memory_gib=2.0))
    ref = engine("torch", "off")
    fast = engine("triton", "static" if args.tiny else "capture")
    problems = []
    graphs = fast.runner.graphs
    print(f"graphs captured {graphs.captured if graphs else None}, capture error "
          f"{graphs.capture_error if graphs else None}", flush=True)
    if not args.tiny and (graphs is None or not graphs.captured):
        problems.append(f"CUDA graph capture failed: {graphs.capture_error if graphs else 'no graphs'}")
    prompts = [[3, 14, 15, 92, 65], [35, 89, 79, 32, 38, 46, 26, 43, 38, 32, 79, 50, 28], [8, 41, 1, 16]]
    n_new = 3 if args.tiny else 12
    outs = [[e.add_request(p, SamplingParams(max_tokens=n_new, ignore_eos=True)) for p in prompts] for e in (ref, fast)]
    diffs = []
    while ref.has_work or fast.has_work:
        ref.step()
        fast.step()
        a, c = ref.runner.last_logits, fast.runner.last_logits
        if a is not None and c is not None and a.shape == c.shape:
            if not bool(torch.isfinite(c).all()):
                problems.append("non-finite logits")
            diffs.append(((c.float() - a.float()).abs().max() / a.float().abs().max().clamp_min(1e-6)).item())
    fell_back = failures(fast.runner.ops)
    if fell_back:
        problems.append(f"kernels fell back to their torch reference: {fell_back}")
    worst = max(diffs) if diffs else float("nan")
    if not diffs or not worst <= TOL:
        problems.append(f"logits differ from the reference by {worst:.2e} of their largest (tol {TOL:g})")
    same = [s.output_ids for s in outs[0]] == [s.output_ids for s in outs[1]]
    if not same:
        problems.append("greedy tokens differ from the reference kernels'")
    replays = graphs.replays if graphs else 0
    print(f"{len(diffs)} steps, max rel logits diff {worst:.2e} (tol {TOL:g}), greedy tokens equal {same}, "
          f"graph replays {replays}, {time.perf_counter() - t0:.1f} s", flush=True)
    print("engine check: " + ("ok" if not problems else "FAIL: " + "; ".join(problems)), flush=True)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
