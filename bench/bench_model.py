"""Model-core decode speed: our HybridLM (one sequence, DenseContext) vs transformers' Llama ``generate`` on
the packaged SmolLM2-135M GGUF, same process, same prompt, greedy. Prints tokens/s and the ratio for the
default CPU path for this quantized GGUF (int4 weights, bf16 GEMM inputs), oneDNN-packed fp32 weights (exact),
plain F.linear, and fbgemm fp16-weight GEMMs, and the weight bytes one decode step reads for each.

    lexicon bench model        (or: python bench/bench_model.py [--new 48])
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

PROMPT = [{"role": "user", "content": "Explain what an indemnification clause in a supply agreement does."}]


def transformers_reference(path: Path):
    from engine.loader.hf_reference import transformers_llama_from_gguf

    return transformers_llama_from_gguf(path)


def ours_generate(model, ids: list[int], n_new: int) -> list[int]:
    from engine.forward_context import DenseContext

    ctx = DenseContext.for_model(model).next_step([len(ids)])
    h = model(torch.tensor(ids), torch.arange(len(ids)), ctx)
    out, pos = [], len(ids)
    for _ in range(n_new):
        nxt = int(model.compute_logits(h[-1:]).argmax())
        out.append(nxt)
        h = model(torch.tensor([nxt]), torch.tensor([pos]), ctx.next_step([1]))
        pos += 1
    return out


def timed(fn, repeats: int = 2):
    fn()  # warm-up
    best, result = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--new", type=int, default=48, help="tokens to generate")
    args = parser.parse_args()
    from app.settings import packaged_llm_gguf
    from engine.loader import load_model

    path = packaged_llm_gguf()
    ours = {gemm: load_model(path, cpu_gemm=gemm) for gemm in ("int4", "onednn", "plain", "fp16")}
    ids = ours["onednn"].tokenizer.apply_chat_template(PROMPT)
    ref = transformers_reference(path)
    n = args.new
    print(f"SmolLM2-135M on CPU ({torch.get_num_threads()} threads), prompt {len(ids)} tokens, {n} new, greedy, batch 1")
    with torch.inference_mode():
        t_hf, theirs = timed(lambda: ref.generate(torch.tensor([ids]), max_new_tokens=n, min_new_tokens=n,
                                                  do_sample=False)[0, len(ids):].tolist())
        print(f"transformers generate (fp32):            {n / t_hf:6.1f} tok/s")
        labels = {"int4": "ours, default (int4 weights)", "onednn": "ours, oneDNN fp32 GEMM (exact)",
                  "plain": "ours, plain F.linear (fp32)", "fp16": "ours, fbgemm fp16-weight GEMM"}
        from engine.layers.linear import Linear
        for gemm, loaded in ours.items():
            t, got = timed(lambda: ours_generate(loaded.model, ids, n))
            mb = sum(m.decode_nbytes for m in loaded.model.modules() if isinstance(m, Linear)) / 1e6
            if loaded.model.lm_head is None and loaded.model._tied_head is None:  # plain: F.linear on the embedding
                mb += loaded.model.embed.weight.numel() * loaded.model.embed.weight.element_size() / 1e6
            print(f"{labels[gemm]:40s} {n / t:6.1f} tok/s  ratio {t_hf / t:4.2f}x  same tokens: {got == theirs}  "
                  f"({mb:.0f} MB weights per step)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
