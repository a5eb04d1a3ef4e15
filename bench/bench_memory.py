"""Peak RSS vs context length on a tiny hybrid (4 Mamba2 + 1 attention + 1 MLP layer), 4K..128K tokens.

Each length runs in a fresh subprocess: build the engine sized for one sequence of that length, prefill it
in 512-token chunks, decode 4 tokens, report peak RSS (ru_maxrss). The expected growth is the attention
layer's KV only (fp32 here, the model dtype): 2 x kv_heads x head_dim x 4 B per token; the Mamba state is
a fixed slot whatever the length, and prefill activations are bounded by the chunk.
"""
from __future__ import annotations

import json
import math
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

LENGTHS = [int(x) for x in os.environ.get("BENCH_LENGTHS", "4096,8192,16384,32768,65536,131072").split(",")]


def tiny_hybrid():
    import torch

    from engine.config import AttentionSpec, BlockSpec, MambaSpec, MlpSpec, ModelConfig
    from engine.loader import LoadedModel
    from engine.models.hybrid import HybridLM

    mamba = MambaSpec(num_heads=8, head_dim=16, ssm_state_size=16, n_groups=1, chunk_size=64)
    attn = AttentionSpec(num_heads=2, num_kv_heads=2, head_dim=64)
    m = lambda: BlockSpec("mamba", mamba=mamba)  # noqa: E731
    cfg = ModelConfig(arch="nemotron_h", vocab_size=256, hidden_size=64, name="tiny-hybrid",
                      blocks=[m(), m(), BlockSpec("attention", attention=attn), m(), BlockSpec("mlp", mlp=MlpSpec(128)), m()])
    torch.manual_seed(0)
    model = HybridLM(cfg)
    for name, p in model.named_parameters():
        if name.endswith("A_log"):
            p.copy_(torch.log(torch.linspace(1, 8, p.numel())))
        elif name.endswith(".D") or "norm" in name:
            p.fill_(1.0)
        elif p.dim() >= 2:
            p.normal_(0, 1 / math.sqrt(p.shape[-1]))
        else:
            p.zero_()
    return LoadedModel(model=model, config=cfg, tokenizer=None, path=Path("tiny-hybrid"))


def child(length: int) -> None:
    import torch

    from engine.llm_engine import EngineConfig, LLMEngine
    from engine.planner import kv_bytes_per_token, mamba_state_bytes
    from engine.sampling import SamplingParams

    torch.set_num_threads(1)
    loaded = tiny_hybrid()
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    engine = LLMEngine(loaded, EngineConfig(max_model_len=length + 16, max_num_seqs=1, memory_gib=4.0,
                                            kv_dtype="float32", chunk_tokens=512, n_snapshot_slots=0))
    prompt = [(i * 7919) % 255 + 1 for i in range(length)]
    seq = engine.add_request(prompt, SamplingParams(max_tokens=4, ignore_eos=True))
    t0 = time.perf_counter()
    while engine.has_work:
        engine.step()
    print(json.dumps({"length": length, "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                      "base_rss": base, "seconds": time.perf_counter() - t0, "out": len(seq.output_ids),
                      "kv_per_token": kv_bytes_per_token(loaded.config, "float32"),
                      "mamba_state": mamba_state_bytes(loaded.config, 4)}))


def main() -> int:
    rows = []
    for length in LENGTHS:
        out = subprocess.run([sys.executable, __file__, "--child", str(length)], capture_output=True, text=True)
        if out.returncode != 0:
            print(out.stderr[-2000:])
            return 1
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    first = rows[0]
    kv = first["kv_per_token"]
    print(f"tiny hybrid: 4 Mamba2 + 1 attention (KV {kv} B/token fp32) + 1 MLP; Mamba state "
          f"{first['mamba_state'] / 1024:.1f} KiB/seq; chunked prefill 512 tokens")
    print(f"{'context':>8} {'peak RSS MiB':>13} {'growth MiB':>11} {'KV growth MiB':>14} {'growth/KV':>10} {'time s':>7}")
    for r in rows:
        growth = (r["peak_rss"] - first["peak_rss"]) / 2**20
        kv_growth = (r["length"] - first["length"]) * kv / 2**20
        ratio = f"{growth / kv_growth:10.2f}" if kv_growth else f"{'-':>10}"
        print(f"{r['length']:>8} {r['peak_rss'] / 2**20:13.1f} {growth:11.1f} {kv_growth:14.1f} {ratio} {r['seconds']:7.1f}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        child(int(sys.argv[2]))
    else:
        raise SystemExit(main())
