"""Service under load on loopback: /health latency idle vs while asks saturate the server, 429s under
overload, and the server's RSS at idle and under 8 concurrent asks.

Starts a real ``lexicon serve --samples`` subprocess on a free port with its own data dir, then runs three
bounded phases (each stops by itself): idle (the reference), 8 concurrent asks (inside the default limits),
an overload of ``--overload`` concurrent asks, and ``--v1`` concurrent streamed /v1 chat completions. Prints latencies, ratios to the idle reference, status
counts and RSS. Usage: ``python bench/bench_service.py [--overload 24] [--tokens 32]``.
"""
from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = ["What is the liability cap?", "Which law governs this agreement?",
             "How many days of notice are needed to terminate the agreement?", "What was revenue in 2024?"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q / 100 * (len(values) - 1))))]


class HealthProbe:
    """Polls /health every 50 ms on its own thread until stopped; records latencies (ms)."""

    def __init__(self, url: str):
        self.url, self.ms, self.errors = url, [], 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        with httpx.Client(timeout=30) as c:
            while not self._stop.is_set():
                t = time.perf_counter()
                try:
                    ok = c.get(self.url + "/health").status_code == 200
                except httpx.HTTPError:
                    ok = False
                self.ms.append((time.perf_counter() - t) * 1000)
                self.errors += not ok
                time.sleep(0.05)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(timeout=60)


def asks(url: str, n: int, key: str, deadline_s: float, pid: int) -> tuple[dict, float, list[float]]:
    """n concurrent /api/ask calls; (status counts, peak RSS MiB while they ran, latencies of the 200s in s)."""
    peak, done = [rss_mib(pid)], threading.Event()

    def watch():
        while not done.is_set():
            peak.append(rss_mib(pid))
            time.sleep(0.2)

    def one(i):
        t = time.perf_counter()
        with httpx.Client(timeout=deadline_s) as c:
            try:
                r = c.post(url + "/api/ask", headers={"X-API-Key": key},
                           json={"question": QUESTIONS[i % len(QUESTIONS)], "mode": "rag"})
                return r.status_code, time.perf_counter() - t
            except httpx.HTTPError:
                return "timeout", time.perf_counter() - t

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    with ThreadPoolExecutor(max(1, n)) as pool:
        results = list(pool.map(one, range(n)))
    done.set()
    watcher.join()
    counts: dict = {}
    for code, _ in results:
        counts[code] = counts.get(code, 0) + 1
    return counts, max(peak), [s for code, s in results if code == 200]


def v1_streams(url: str, n: int, key: str, deadline_s: float, tokens: int) -> dict:
    """n concurrent streamed /v1/chat/completions; status counts."""
    def one(i):
        with httpx.Client(timeout=deadline_s) as c:
            try:
                with c.stream("POST", url + "/v1/chat/completions", headers={"X-API-Key": key},
                              json={"messages": [{"role": "user", "content": f"Write a short note number {i}."}],
                                    "max_tokens": tokens, "stream": True}) as r:
                    for _ in r.iter_lines():
                        pass
                    return r.status_code
            except httpx.HTTPError:
                return "timeout"

    with ThreadPoolExecutor(n) as pool:
        codes = list(pool.map(one, range(n)))
    return {c: codes.count(c) for c in set(codes)}


def report(name: str, probe: HealthProbe, ref_p95: float | None) -> float:
    p50, p95 = pct(probe.ms, 50), pct(probe.ms, 95)
    ratio = f"  ({p95 / ref_p95:.2f}x idle p95)" if ref_p95 else ""
    print(f"{name:<28} /health n={len(probe.ms):4d} p50 {p50:7.1f} ms  p95 {p95:7.1f} ms  max {max(probe.ms):7.1f} ms"
          f"  errors {probe.errors}{ratio}", flush=True)
    return p95


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--overload", type=int, default=24, help="concurrent asks in the overload phase")
    ap.add_argument("--tokens", type=int, default=32, help="LEXICON_MAX_NEW_TOKENS of the server")
    ap.add_argument("--v1", type=int, default=16, help="concurrent /v1 streams in the last phase (0: skip)")
    ap.add_argument("--only-v1", action="store_true", help="skip the ask phases")
    ap.add_argument("--deadline", type=float, default=600, help="seconds any phase may take")
    args = ap.parse_args()
    data = Path(tempfile.mkdtemp(prefix="bench-service-"))
    port = free_port()
    env = {**os.environ, "LEXICON_DATA_DIR": str(data), "LEXICON_MAX_NEW_TOKENS": str(args.tokens),
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    server = subprocess.Popen([sys.executable, "-m", "app.cli", "serve", "--samples", "--port", str(port)], cwd=ROOT,
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + args.deadline
        while True:
            try:
                if httpx.get(url + "/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                print("server did not come up", file=sys.stderr)
                return 1
            time.sleep(0.5)
        limits = httpx.get(url + "/health").json()["queues"]["ask"]
        print(f"server pid {server.pid}; ask gate: {limits['max_active']} active + {limits['max_queued']} queued; "
              f"max_new_tokens {args.tokens}", flush=True)
        rss_start = rss_mib(server.pid)
        counts, _, _ = asks(url, 1, "demo-key", args.deadline, server.pid)  # loads the weights
        rss_idle = rss_mib(server.pid)
        print(f"RSS after start {rss_start:.0f} MiB; idle with the model loaded {rss_idle:.0f} MiB", flush=True)

        with HealthProbe(url) as idle:
            time.sleep(5)
        ref = report("idle (reference)", idle, None)

        if args.only_v1:
            args.overload = 0
        else:
            with HealthProbe(url) as busy:
                counts, peak, lat = asks(url, 8, "demo-key", args.deadline, server.pid)
            report("8 concurrent asks", busy, ref)
            print(f"  statuses {counts}; ask latency p50 {statistics.median(lat) if lat else float('nan'):.1f} s; "
                  f"peak RSS {peak:.0f} MiB (+{peak - rss_idle:.0f} over idle)", flush=True)

        if args.overload:
            with HealthProbe(url) as over:
                counts, peak, lat = asks(url, args.overload, "demo-key", args.deadline, server.pid)
            report(f"{args.overload} concurrent asks", over, ref)
            print(f"  statuses {counts}; 429s {counts.get(429, 0)} of {args.overload}; peak RSS {peak:.0f} MiB",
                  flush=True)
        if args.v1:
            with HealthProbe(url) as v1:
                counts = v1_streams(url, args.v1, "demo-key", args.deadline, args.tokens * 2)
            report(f"{args.v1} concurrent /v1 streams", v1, ref)
            print(f"  statuses {counts}", flush=True)
        gates = httpx.get(url + "/health").json()["queues"]["ask"]
        print(f"  ask gate after: admitted {gates['admitted']}, rejected {gates['rejected']}, active {gates['active']}, "
              f"queued {gates['queued']}", flush=True)
        return 0
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)


if __name__ == "__main__":
    sys.exit(main())
