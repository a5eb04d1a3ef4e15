"""Engine speed on SmolLM2-135M (packaged GGUF), each number beside a reference run in the same process.

Modes (``BENCH_MODES``, comma-separated; default all):
- ``throughput``: 8 concurrent callers (threads on one ``LLM``), 512-token synthetic prompts, 128 new tokens,
  greedy, EOS ignored. References: transformers' batched ``generate`` on the same weights and dtype (its
  prompt lookup does not batch; ``BENCH_REFERENCE=0`` skips it) and our engine with per-sequence decode
  attention (kernels ``default``, the path before batched CPU decode attention). Then ours with batched
  decode attention, prompt lookup off and on.
- ``batch1``: one request, decode tok/s after its first token, per-sequence vs batched decode attention.
- ``prefill``: one fresh 512- and 2,000-token prompt, prefill tok/s (time to the first token) by chunk size.
- ``rag``: a question over passages of a real contract (CUAD dev, read at run time) with the answer
  quoting them, 8 concurrent: prompt lookup off vs on (acceptance, speedup, outputs identical).
- ``dossier``: a 6,000-token dossier: first answer token from a fresh prefill vs from an engine snapshot.
Runs are interleaved ``BENCH_REPEATS`` times (default 2); medians and each repeat's ratio are printed,
because a shared VM's speed drifts by 10-20% (or far more when others compute) between minutes.

    lexicon bench engine      (or: python bench/bench_engine.py)
Env: BENCH_MODES, BENCH_REQUESTS, BENCH_PROMPT_TOKENS, BENCH_NEW_TOKENS, BENCH_REPEATS, BENCH_DTYPES
(float32,bfloat16), BENCH_REFERENCE (1), BENCH_DOSSIER_TOKENS (6000), BENCH_KV_DTYPE (the model's; bf16 for int4
weights), BENCH_CPU_GEMM (load_model's cpu_gemm:
"onednn" for fp32 GEMMs; the int4 GEMM rounds logits to bf16, where greedy near-ties make "outputs equal"
depend on batch shape).
"""
from __future__ import annotations

import os
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Optional

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch  # noqa: E402

from app.settings import packaged_llm_gguf  # noqa: E402
from engine_workloads import dossier, rag_prompts, synthetic_prompts  # noqa: E402

N_REQ = int(os.environ.get("BENCH_REQUESTS", 8))
PROMPT = int(os.environ.get("BENCH_PROMPT_TOKENS", 512))
NEW = int(os.environ.get("BENCH_NEW_TOKENS", 128))
REPEATS = int(os.environ.get("BENCH_REPEATS", 2))
DTYPES = os.environ.get("BENCH_DTYPES", "float32,bfloat16").split(",")
MODES = os.environ.get("BENCH_MODES", "throughput,batch1,prefill,rag,dossier").split(",")
REFERENCE = os.environ.get("BENCH_REFERENCE", "1") == "1"
DOSSIER = int(os.environ.get("BENCH_DOSSIER_TOKENS", 6000))
CPU_GEMM = os.environ.get("BENCH_CPU_GEMM") or None  # engine.loader.load_model's cpu_gemm (default: its own)


def make_llm(path: Path, loaded, kernels: str = "auto", speculative: bool = False, max_len: int = 0,
             seqs: int = 0, chunk: int = 512):
    """An ``LLM`` on the loaded weights. ``kernels="default"``: per-sequence decode attention (the reference
    the batched CPU path replaced), swapped into the paged context; ``auto`` is what the engine picks."""
    from engine.kernels import select_ops
    from engine.llm import LLM

    from engine.kernels.cpu_decode_attention import bf16_decode

    # the reference's cache dtype; int4 weights (bf16 q/k/v anyway): the engine's default bf16 pool, where decode
    # attention computes in bf16 (PagedContext.decode_bf16)
    kv = "float32" if loaded.model.dtype == torch.float32 and not bf16_decode(loaded.model) else "bfloat16"
    kv = os.environ.get("BENCH_KV_DTYPE") or kv
    llm = LLM(path, max_model_len=max_len or PROMPT + NEW + 16, max_num_seqs=seqs or N_REQ, memory_gib=3.0,
              kv_dtype=kv, chunk_tokens=chunk, loaded=loaded, speculative=speculative)
    if kernels != "auto":
        llm.engine.runner.ctx.ops = select_ops(loaded.model.device, kernels)
    return llm


def run_concurrent(path: Path, loaded, prompts: list[list[int]], speculative: bool, kernels: str = "auto",
                   ignore_eos: bool = True) -> tuple[float, list[list[int]], dict]:
    """8 caller threads on one LLM, batched by its loop -> (seconds, outputs, stats)."""
    from engine.sampling import SamplingParams

    llm = make_llm(path, loaded, kernels, speculative, max_len=max(len(p) for p in prompts) + NEW + 16,
                   seqs=len(prompts))
    params = SamplingParams(max_tokens=NEW, ignore_eos=ignore_eos)
    llm.generate([prompts[0][:16]], SamplingParams(max_tokens=2))  # warm-up
    outs: list = [None] * len(prompts)

    def call(i: int) -> None:
        outs[i] = llm.generate([prompts[i]], params)[0]

    threads = [threading.Thread(target=call, args=(i,)) for i in range(len(prompts))]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    stats = llm.stats()
    llm.close()
    return elapsed, [o.token_ids for o in outs], stats


def run_transformers(model, prompts: list[list[int]]) -> tuple[float, list[list[int]]]:
    pad = model.config.eos_token_id if isinstance(model.config.eos_token_id, int) else 0
    width = max(len(p) for p in prompts)
    ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    with torch.inference_mode():
        model.generate(ids[:1, :16], attention_mask=mask[:1, :16], max_new_tokens=2, do_sample=False)  # warm-up
        t0 = time.perf_counter()
        out = model.generate(ids, attention_mask=mask, max_new_tokens=NEW, min_new_tokens=NEW, do_sample=False,
                             pad_token_id=pad)
        elapsed = time.perf_counter() - t0
    return elapsed, [row[width:].tolist() for row in out]


def agreement(ours: list[list[int]], theirs: list[list[int]]) -> str:
    same = sum(a == b for a, b in zip(ours, theirs))
    prefix = [next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), len(a)) for a, b in zip(ours, theirs)]
    return f"{same}/{len(ours)} identical to transformers, mean common prefix {statistics.mean(prefix):.1f}/{NEW}"


def ratio_line(ref: list[float], ours: list[float]) -> str:
    each = [r / o for r, o in zip(ref, ours)]
    return f"{statistics.median(each):.2f}x (each repeat: {', '.join(f'{x:.2f}' for x in each)})"


def bench_throughput(path: Path, loaded, dtype_name: str, prompts: list[list[int]]) -> None:
    times: dict[str, list[float]] = {"ref": [], "before": [], "plain": [], "spec": []}
    reference = None
    if REFERENCE:
        from engine.loader.hf_reference import transformers_llama_from_gguf
        reference = transformers_llama_from_gguf(path).to(loaded.model.dtype)
    theirs = None
    for _ in range(REPEATS):
        if reference is not None:
            t, theirs = run_transformers(reference, prompts)
            times["ref"].append(t)
        t, before, _ = run_concurrent(path, loaded, prompts, speculative=False, kernels="default")
        times["before"].append(t)
        t, plain, _ = run_concurrent(path, loaded, prompts, speculative=False)
        times["plain"].append(t)
        t, spec, stats = run_concurrent(path, loaded, prompts, speculative=True)
        times["spec"].append(t)
    total = NEW * len(prompts)
    med = {k: statistics.median(v) for k, v in times.items() if v}
    print(f"\n[{dtype_name}] throughput: {len(prompts)} concurrent x {PROMPT} prompt tokens x {NEW} new tokens, "
          f"median of {REPEATS} interleaved repeats (aggregate new tok/s, prefill included)")
    if "ref" in med:
        print(f"  transformers generate (batched)          {med['ref']:6.2f} s  {total / med['ref']:6.1f} tok/s")
    print(f"  ours, per-sequence decode attention      {med['before']:6.2f} s  {total / med['before']:6.1f} tok/s")
    vs_ref = f"; vs transformers {ratio_line(times['ref'], times['plain'])}, {agreement(plain, theirs)}" \
        if theirs is not None else ""
    print(f"  ours, batched decode attention           {med['plain']:6.2f} s  {total / med['plain']:6.1f} tok/s  "
          f"vs per-sequence {ratio_line(times['before'], times['plain'])}; outputs equal: {plain == before}"
          f"{vs_ref}")
    print(f"  ours, + prompt lookup (engine default)   {med['spec']:6.2f} s  {total / med['spec']:6.1f} tok/s  "
          f"vs lookup off {ratio_line(times['plain'], times['spec'])}; outputs equal lookup-off: {spec == plain}; "
          f"mean acceptance length {stats['spec_mean_acceptance_length']:.2f}; peak batch {stats['peak_batch']}")


def timed_stream(llm, prompt: list[int], new: int, snapshot: Optional[str] = None) -> tuple[float, float, int]:
    """-> (seconds to the first token, seconds from it to the last, tokens) of one greedy request."""
    from engine.sampling import SamplingParams

    t0 = time.perf_counter()
    handle = llm.submit(prompt, SamplingParams(max_tokens=new, ignore_eos=True), snapshot=snapshot)
    first = None
    for _ in handle.deltas():
        if first is None:
            first = time.perf_counter()
    end = time.perf_counter()
    n = len(handle.result().token_ids)
    first = first if first is not None else end
    return first - t0, end - first, n


def bench_batch1(path: Path, loaded, prompts: list[list[int]]) -> None:
    rates: dict[str, list[float]] = {"default": [], "auto": []}
    for _ in range(REPEATS):
        for kernels in rates:
            llm = make_llm(path, loaded, kernels, speculative=False, seqs=1)
            timed_stream(llm, prompts[0][:16], 2)  # warm-up
            _, decode_s, n = timed_stream(llm, prompts[0], NEW)
            llm.close()
            rates[kernels].append((n - 1) / decode_s)
    med = {k: statistics.median(v) for k, v in rates.items()}
    print(f"\n[{loaded.model.dtype}] batch-1 decode after a {len(prompts[0])}-token prompt, {NEW} new tokens "
          f"(llama.cpp on the issue's quiet machine: 112-129 tok/s)")
    print(f"  per-sequence decode attention  {med['default']:6.1f} tok/s")
    print(f"  batched decode attention       {med['auto']:6.1f} tok/s  "
          f"{ratio_line(rates['auto'], rates['default'])} faster")


def long_text_prompt(tokenizer, n: int) -> list[int]:
    got = dossier(tokenizer, n + 200)
    if got is not None:
        return got[0][:n]
    return synthetic_prompts(tokenizer, 1, n)[0]


def bench_prefill(path: Path, loaded) -> None:
    chunks = [int(c) for c in os.environ.get("BENCH_PREFILL_CHUNKS", "512,1024,2048").split(",")]
    for n in (512, 2000):
        prompt = long_text_prompt(loaded.tokenizer, n)
        rates: dict[int, list[float]] = {c: [] for c in chunks}
        for _ in range(REPEATS):
            for c in rates:
                llm = make_llm(path, loaded, max_len=n + 16, seqs=1, chunk=c)
                timed_stream(llm, prompt[:16], 2)  # warm-up
                first, _, _ = timed_stream(llm, prompt, 1)
                llm.close()
                rates[c].append(len(prompt) / first)
        base = rates[chunks[0]]
        print(f"\n[{loaded.model.dtype}] prefill of a fresh {len(prompt)}-token prompt (to the first token; "
              f"llama.cpp on the issue's quiet machine: {419 if n == 512 else 349} tok/s)")
        for c, r in rates.items():
            print(f"  chunk {c:5d}  {statistics.median(r):7.1f} tok/s  vs chunk {chunks[0]}: {ratio_line(r, base)}")


def bench_rag(path: Path, loaded) -> None:
    prompts = rag_prompts(loaded.tokenizer, N_REQ, PROMPT)
    if prompts is None:
        print("\n[rag] skipped: ../shared/eval/cuad-dev/txt (real contracts) is not here")
        return
    times: dict[str, list[float]] = {"plain": [], "spec": []}
    for _ in range(REPEATS):
        t, plain, _ = run_concurrent(path, loaded, prompts, speculative=False, ignore_eos=False)
        times["plain"].append(t)
        t, spec, stats = run_concurrent(path, loaded, prompts, speculative=True, ignore_eos=False)
        times["spec"].append(t)
    total = sum(map(len, plain))  # answers end at EOS (ignoring it, a 135M model loops and lookup gains)
    med = {k: statistics.median(v) for k, v in times.items()}
    text = loaded.tokenizer.decode(plain[0])[:160].replace("\n", " ")
    print(f"\n[{loaded.model.dtype}] RAG-shaped: {len(prompts)} concurrent questions over retrieved passages of real "
          f"contracts ({min(map(len, prompts))}-{max(map(len, prompts))} prompt tokens), up to {NEW} new tokens, "
          f"stopping at EOS ({total} answer tokens)")
    print(f"  prompt lookup off  {med['plain']:6.2f} s  {total / med['plain']:6.1f} tok/s")
    print(f"  prompt lookup on   {med['spec']:6.2f} s  {total / med['spec']:6.1f} tok/s  "
          f"{ratio_line(times['plain'], times['spec'])}; mean acceptance length "
          f"{stats['spec_mean_acceptance_length']:.2f}; outputs equal: {spec == plain}")
    print(f"  first answer begins: {text!r}")


def bench_dossier(path: Path, loaded) -> None:
    got = dossier(loaded.tokenizer, DOSSIER)
    if got is None:
        print("\n[dossier] skipped: ../shared/eval/cuad-dev/txt (real contracts) is not here")
        return
    import engine.paged_context as paged

    full, prefix, cont = got
    fresh, before, snap, create, bf16 = [], [], [], [], []
    for r in range(REPEATS):
        llm = make_llm(path, loaded, max_len=len(full) + 64, seqs=2)
        timed_stream(llm, full[:16], 2)  # warm-up
        paged.FLASH_LONG_PREFILL = False  # the reference: long chunks' attention as a Python online softmax
        before.append(timed_stream(llm, full, 1)[0])
        paged.FLASH_LONG_PREFILL = True
        fresh.append(timed_stream(llm, full, 1)[0])
        if llm.engine.runner.kv.dtype == torch.bfloat16:  # the opt-in bf16 compute on a bf16 pool
            paged.LONG_PREFILL_BF16 = True
            bf16.append(timed_stream(llm, full, 1)[0])
            paged.LONG_PREFILL_BF16 = False
        t0 = time.perf_counter()
        llm.create_snapshot("dossier", prefix)
        create.append(time.perf_counter() - t0)
        snap.append(statistics.median(timed_stream(llm, cont, 1, snapshot="dossier")[0] for _ in range(3)))
        llm.close()
    print(f"\n[{loaded.model.dtype}] dossier of {len(full)} tokens (real contracts): first answer token "
          f"(target: fresh <= 10 s; from the snapshot >= 20x faster)")
    print(f"  fresh, Python long attention  {statistics.median(before):6.2f} s  "
          f"({len(full) / statistics.median(before):.0f} tok/s; each: {', '.join(f'{x:.2f}' for x in before)})")
    print(f"  fresh prefill + first token   {statistics.median(fresh):6.2f} s  "
          f"({len(full) / statistics.median(fresh):.0f} tok/s; each: {', '.join(f'{x:.2f}' for x in fresh)})  "
          f"{ratio_line(before, fresh)} faster")
    if bf16:
        print(f"  fresh, bf16 attention (opt-in) {statistics.median(bf16):5.2f} s  {ratio_line(before, bf16)} faster "
              f"than the Python attention (engine.paged_context.LONG_PREFILL_BF16)")
    print(f"  snapshot creation (prefix)    {statistics.median(create):6.2f} s")
    print(f"  from the snapshot             {statistics.median(snap):6.3f} s  {ratio_line(fresh, snap)} faster "
          f"than fresh ({len(cont)} continuation tokens)")


def main() -> int:
    from engine.loader import load_model

    path = packaged_llm_gguf()
    print(f"SmolLM2-135M on CPU ({torch.get_num_threads()} threads); modes {','.join(MODES)}; the machine may be "
          f"shared: compare ratios within a run, not absolute numbers across runs")
    for dtype_name in DTYPES:
        loaded = load_model(path, dtype=getattr(torch, dtype_name.strip()), cpu_gemm=CPU_GEMM)
        prompts = synthetic_prompts(loaded.tokenizer, N_REQ, PROMPT)
        if "throughput" in MODES:
            bench_throughput(path, loaded, dtype_name, prompts)
        if "batch1" in MODES:
            bench_batch1(path, loaded, prompts)
        if "prefill" in MODES:
            bench_prefill(path, loaded)
        if "rag" in MODES:
            bench_rag(path, loaded)
        if "dossier" in MODES:
            bench_dossier(path, loaded)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
