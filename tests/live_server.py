"""A real HTTP server for tests: an ASGI app under uvicorn in a background thread, on a free loopback port."""
from __future__ import annotations

import socket
import threading
import time


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LiveServer:
    """``app`` served by uvicorn in a background thread of this process, until :meth:`stop`."""

    def __init__(self, app, port: int):
        import uvicorn

        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                                    lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, name="test-uvicorn", daemon=True)

    def start(self, timeout: float = 120.0) -> "LiveServer":
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self.thread.is_alive():
                raise RuntimeError("uvicorn exited during startup (see the log above)")
            if time.monotonic() > deadline:
                raise RuntimeError(f"server not up after {timeout:.0f} s")
            time.sleep(0.1)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)
