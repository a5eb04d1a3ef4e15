"""Backpressure: bounded admission for the expensive routes, 429 + ``Retry-After`` when full.

Each :class:`Gate` lets ``max_active`` requests run and ``max_queued`` more wait (first come, first served,
at most ``max_wait_s``); anything past that is answered at once with 429 and a ``Retry-After`` estimated
from how long recent requests held their slot. The :class:`Backpressure` ASGI middleware holds the slot
until the whole response is sent, so a streamed answer (SSE) counts for as long as it streams, and a client
that goes away frees its slot. Everything here runs on the event loop: no locks, no threads, and routes
without a gate (``/health``) are never queued behind the ones with one.
"""
from __future__ import annotations

import asyncio
import json
import math
import time
from collections import deque
from dataclasses import dataclass


class Gate:
    def __init__(self, name: str, max_active: int, max_queued: int, max_wait_s: float, typical_s: float = 5.0):
        self.name, self.max_active, self.max_queued, self.max_wait_s = name, max(1, max_active), max(0, max_queued), max_wait_s
        self.active = 0
        self.admitted = self.rejected = self.timed_out = 0
        self.hold_s = typical_s  # moving average of how long a request holds its slot
        self._waiters: deque[asyncio.Future] = deque()

    @property
    def queued(self) -> int:
        return len(self._waiters)

    async def acquire(self) -> bool:
        """True with a slot held (call :meth:`release`), False when full or waited ``max_wait_s`` in vain."""
        if self.active < self.max_active and not self._waiters:
            self.active += 1
            self.admitted += 1
            return True
        if len(self._waiters) >= self.max_queued:
            self.rejected += 1
            return False
        fut = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        try:
            await asyncio.wait_for(asyncio.shield(fut), self.max_wait_s)
            self.admitted += 1
            return True
        except asyncio.TimeoutError:
            if fut.done() and not fut.cancelled():  # handed the slot just as the wait ran out: take it
                self.admitted += 1
                return True
            fut.cancel()
            self.rejected += 1
            self.timed_out += 1
            return False
        except asyncio.CancelledError:  # the client went away while queued
            if fut.done() and not fut.cancelled():
                self.release(0.0)
            fut.cancel()
            raise
        finally:
            if fut in self._waiters:
                self._waiters.remove(fut)

    def release(self, held_s: float) -> None:
        if held_s > 0:
            self.hold_s = 0.8 * self.hold_s + 0.2 * held_s
        while self._waiters:  # hand the slot straight to the next live waiter
            fut = self._waiters.popleft()
            if not fut.done():
                fut.set_result(True)
                return
        self.active = max(0, self.active - 1)

    def retry_after(self) -> int:
        """Seconds until a slot is likely free: the queue ahead drained at the observed hold time."""
        return int(min(300, max(1, math.ceil(self.hold_s * (self.queued + 1) / self.max_active))))

    def stats(self) -> dict:
        return {"active": self.active, "queued": self.queued, "max_active": self.max_active,
                "max_queued": self.max_queued, "admitted": self.admitted, "rejected": self.rejected,
                "timed_out": self.timed_out, "hold_s": round(self.hold_s, 3)}


@dataclass
class Rule:
    method: str
    prefix: str
    gate: Gate

    def matches(self, method: str, path: str) -> bool:
        return method == self.method and (path == self.prefix or path.startswith(self.prefix.rstrip("/") + "/"))


def gates_from_settings(settings) -> dict[str, Gate]:
    wait = settings.queue_max_wait_s
    return {"ask": Gate("ask", settings.ask_max_active, settings.ask_max_queued, wait, typical_s=10.0),
            "v1": Gate("v1", settings.v1_max_active, settings.v1_max_queued, wait, typical_s=5.0),
            "upload": Gate("upload", settings.upload_max_active, settings.upload_max_queued, wait, typical_s=1.0)}


def default_rules(gates: dict[str, Gate]) -> list[Rule]:
    return [Rule("POST", "/api/ask", gates["ask"]),
            Rule("POST", "/v1/chat/completions", gates["v1"]), Rule("POST", "/v1/completions", gates["v1"]),
            Rule("POST", "/api/documents", gates["upload"])]


def too_busy(gate_name: str, retry_after: int, detail: str | None = None) -> tuple[dict, bytes]:
    body = json.dumps({"detail": detail or f"server busy: too many {gate_name} requests in flight; "
                                           f"retry after {retry_after} s"}).encode()
    return ({"type": "http.response.start", "status": 429,
             "headers": [(b"content-type", b"application/json"), (b"retry-after", str(retry_after).encode()),
                         (b"content-length", str(len(body)).encode())]}, body)


class Backpressure:
    """ASGI middleware: requests matching a rule pass through that rule's gate."""

    def __init__(self, app, rules: list[Rule]):
        self.app, self.rules = app, rules

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        rule = next((r for r in self.rules if r.matches(scope["method"], scope["path"])), None)
        if rule is None:
            return await self.app(scope, receive, send)
        gate = rule.gate
        if not await gate.acquire():
            start, body = too_busy(gate.name, gate.retry_after())
            await send(start)
            await send({"type": "http.response.body", "body": body})
            return
        began = time.monotonic()
        try:
            await self.app(scope, receive, send)
        finally:
            gate.release(time.monotonic() - began)
