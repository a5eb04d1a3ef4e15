"""A process that built the engine exits with its own exit code, never with an abort.

What aborted (``terminate called without an active exception``, signal 6, exit 134): a daemon thread still
inside native code when the interpreter finalizes. Python 3 ends such a thread with ``pthread_exit`` as soon as
it asks for the GIL again; the forced unwind crosses a ``noexcept`` C++ frame of torch and the C++ runtime
calls ``std::terminate``. The thread that outlives ``service.close()`` is the engine's background decode
compile (``lexicon-compile-decode``, engine/compiled_decode.py: inductor, 20 s from its cache, minutes cold),
which has no stop point; the engine loop, the ask workers, the ingest pool and the read-ahead thread are all
joined by the close chain (``LexiconService.close``). Reproduced on this tree: a script that builds the
service, generates 8 tokens and closes died with 134 in 1 of 2 runs, the compile thread alive after close.

(A cold compile on a loaded 2-core machine ran past 10 minutes, so waiting for it is no answer.)

So ``LexiconService.close`` stops it: once the engine is closed its compile is of no use, and the thread is
asked to end by an asynchronous ``SystemExit`` (``PyThreadState_SetAsyncExc``), raised at its next Python
instruction (dynamo and inductor are Python between native calls), which unwinds it normally; then it is
joined. Two guards stay behind it for a worker that still does not end:
- the ``lexicon`` CLI (``app.cli.main``) joins what is left for a moment, then flushes its output and ends
  the process with the command's own exit code (``os._exit``: the finalization that would kill the thread
  never runs; everything stored was committed and closed before);
- any other process (a script, a notebook) gets an ``atexit`` hook that joins the worker (bounded) before
  finalization starts.
"""
from __future__ import annotations

import _imp
import atexit
import ctypes
import logging
import os
import sys
import threading
import time

NATIVE_WORKERS = ("lexicon-",)  # this project's worker threads (engine loop, decode compile, ask, read-ahead)
_hooked = False


def lingering(prefixes: tuple[str, ...] = NATIVE_WORKERS) -> list[threading.Thread]:
    """Live daemon threads of ours other than the caller."""
    me = threading.current_thread()
    return [t for t in threading.enumerate()
            if t is not me and t.daemon and t.is_alive() and t.name.startswith(prefixes)]


def join_lingering(timeout_s: float | None) -> list[threading.Thread]:
    """Join our daemon threads for at most ``timeout_s`` in all (None: until they end); -> those still alive."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    for t in lingering():
        t.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
    return lingering()


def join_at_exit(timeout_s: float = 120.0) -> None:
    """Make interpreter exit wait (bounded) for our workers (registered once, by ``LexiconService.close``)."""
    global _hooked
    if not _hooked:
        _hooked = True
        atexit.register(join_lingering, timeout_s)


def compile_thread(chat_model) -> threading.Thread | None:
    """The embedded engine's background decode-compile thread, when it is still running."""
    compiled = getattr(getattr(getattr(getattr(chat_model, "llm", None), "engine", None), "runner", None),
                       "compiled", None)
    thread = getattr(compiled, "_thread", None)
    return thread if isinstance(thread, threading.Thread) and thread.is_alive() else None


def stop_thread(thread: threading.Thread | None, timeout_s: float = 60.0) -> bool:
    """End ``thread`` with a ``SystemExit`` raised at its next Python instruction, and join it; whether it ended.

    Never while an import is under way: an exception raised inside importlib's bootstrap, between taking the
    import lock and the ``try`` that releases it, leaves the lock held by a thread that no longer exists, and
    the next import anywhere waits for ever (seen: 1 run in 3 of the exit test hung at exit, in dynamo's atexit
    ``dump_compile_times`` importing ``tabulate``). So the exception is raised when no import holds the lock,
    and dynamo's atexit hook, which only logs compile times and imports at exit, is taken off."""
    if thread is None or not thread.is_alive():
        return True
    deadline = time.monotonic() + timeout_s
    while thread.is_alive() and time.monotonic() < deadline:
        if _imp.lock_held():  # an import is under way (in any thread): wait for it to end
            time.sleep(0.001)
            continue
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), ctypes.py_object(SystemExit))
        thread.join(0.5)
        if thread.is_alive():  # not yet at a Python instruction: take the exception back, try again
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), None)
    _drop_dynamo_exit_log()
    return not thread.is_alive()


def _drop_dynamo_exit_log() -> None:
    dynamo = sys.modules.get("torch._dynamo.utils")
    hook = getattr(dynamo, "dump_compile_times", None)
    if hook is not None:
        atexit.unregister(hook)


def finish(code: int, wait_s: float = 2.0) -> int:
    """The CLI's last step: ``code`` when no worker of ours is left after ``wait_s``; otherwise flush and end
    the process here with ``code`` (see the module doc)."""
    left = join_lingering(wait_s)
    if not left:
        return code
    logging.getLogger("lexicon").debug("exiting past %s", ", ".join(t.name for t in left))
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # a closed pipe: nothing more to say
            pass
    os._exit(code)
