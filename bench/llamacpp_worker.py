"""llama.cpp (llama-cpp-python) in a child process, for bench_vs_llamacpp.py.

A child process, not the benchmark's own: two OpenMP runtimes in one process (torch's bundled libgomp and the
one ggml links) slowed each other. Measured on the 2-vCPU AMD VM, llama.cpp's batch-1 decode in the
benchmark's process fell from 113 to 88 tok/s once torch had loaded a model, and to 45-53 while one of our
engines was alive, back to ~97 after it closed. In its own process each side runs as a user would run it.

The parent drives the child over pipes (one JSON line per call) and times nothing itself: the child times
its own evals. llama.cpp runs with its default model params (extra buffer types: the CPU repacks of Q4_0 /
Q8_0 tensors, AMX) unless they crash here: on an AMX Xeon (llama-cpp-python 0.3.36, seen 2026-12-03) the AMX
buffer segfaults in the first eval, and the child is restarted without extra buffer types.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional


class LlamaCpp:
    """Greedy generation through llama.cpp's own eval loop (argmax of the last logits, EOS not special)."""

    def __init__(self, path: str, threads: int, defaults: bool):
        import llama_cpp.llama_cpp as lib
        from llama_cpp import Llama

        default_params = lib.llama_model_default_params

        def no_extra_buffers():  # llama.cpp's plain AVX2/AVX512 kernels, no repacked layouts
            params = default_params()
            params.use_extra_bufts = False
            return params

        if not defaults:
            lib.llama_model_default_params = no_extra_buffers
        try:
            self.llm = Llama(path, n_ctx=4096, n_batch=512, n_threads=threads, verbose=False)
        finally:
            lib.llama_model_default_params = default_params

    def prefill(self, ids: list[int]) -> float:
        self.llm.reset()
        t0 = time.perf_counter()
        self.llm.eval(ids)
        return time.perf_counter() - t0

    def argmax(self) -> int:
        import numpy as np

        # Llama.scores is only filled with logits_all=True (0.3.x): read the last token's logits from the context
        logits = np.ctypeslib.as_array(self.llm._ctx.get_logits_ith(-1), shape=(self.llm.n_vocab(),))
        return int(np.argmax(logits))

    def generate(self, ids: list[int], new: int) -> tuple[float, float, list[int]]:
        """-> (seconds to the first token, seconds for the rest, tokens)."""
        t0 = time.perf_counter()
        self.prefill(ids)
        out = [self.argmax()]
        first = time.perf_counter()
        while len(out) < new:
            self.llm.eval([out[-1]])
            out.append(self.argmax())
        return first - t0, time.perf_counter() - first, out


def serve(path: str, threads: int, defaults: bool) -> None:
    """The child: a warm-up eval, "ready", then one JSON reply per JSON request line."""
    llm = LlamaCpp(path, threads, defaults)
    llm.generate(llm.llm.tokenize(b"The supplier shall deliver the goods."), 2)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        if req["op"] == "prefill":
            print(json.dumps({"seconds": llm.prefill(req["ids"])}), flush=True)
        else:
            print(json.dumps(llm.generate(req["ids"], req["new"])), flush=True)


class LlamaCppProcess:
    """The parent's handle: ``prefill`` and ``generate`` as ``LlamaCpp``'s, run in the child."""

    def __init__(self, path: Path, threads: int, defaults: bool = True):
        self.defaults = defaults
        self.proc = subprocess.Popen([sys.executable, __file__, str(path), str(threads), str(int(defaults))],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        line = self.proc.stdout.readline()
        if not line:
            err = self.proc.stderr.read()[-2000:]
            self.proc.wait()
            raise RuntimeError(f"llama.cpp child exited with {self.proc.returncode}: {err.strip()}")

    def _call(self, req: dict):
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"llama.cpp child died (exit {self.proc.wait()})")
        return json.loads(line)

    def prefill(self, ids: list[int]) -> float:
        return self._call({"op": "prefill", "ids": ids})["seconds"]

    def generate(self, ids: list[int], new: int) -> tuple[float, float, list[int]]:
        first, rest, out = self._call({"op": "generate", "ids": ids, "new": new})
        return first, rest, out

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)


def start(path: Path, threads: int) -> Optional[LlamaCppProcess]:
    """llama.cpp with its defaults, else (they crashed here, or BENCH_LLAMACPP_DEFAULTS=off) without extra
    buffer types; None without llama-cpp-python."""
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        return None
    if os.environ.get("BENCH_LLAMACPP_DEFAULTS", "auto") != "off":
        try:
            return LlamaCppProcess(path, threads, defaults=True)
        except RuntimeError as exc:
            print(f"llama.cpp with its default params failed here ({str(exc)[:200]}); "
                  "running it without extra buffer types")
    return LlamaCppProcess(path, threads, defaults=False)


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1")
