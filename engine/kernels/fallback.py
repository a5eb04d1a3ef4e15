"""A Triton op that falls back to its torch reference when its kernel cannot be built on this machine.

A first GPU run must either work or name its cause. A kernel that does not compile for this GPU / Triton
version (a ``CompilationError``, ``OutOfResources`` for too much shared memory, a PTX assembler error, an
MLIR pass failure: none of them is the ``RuntimeError`` that a failed CUDA-graph capture raises) switches that
one op to the reference with the same contract, logged once with the cause; every later call goes to the
reference. Errors that are not about building the kernel (bad shapes, out of memory, an op during stream
capture) propagate unchanged. ``Guarded.failure`` holds the cause for engine stats and bench/gpu_check.py.
"""
from __future__ import annotations

import logging
from typing import Callable, Optional

import torch

log = logging.getLogger(__name__)

# InterpreterError: under TRITON_INTERPRET=1 (CPU tests) building and running are one step, and a kernel the
# compiler would refuse (a non-power-of-two arange, a bad constexpr) fails there wrapped in it.
BUILD_ERRORS = ("CompilationError", "CompileTimeAssertionFailure", "UnsupportedLanguageConstruct",
                "OutOfResources", "PTXASError", "InterpreterError")
_BUILD_MODULES = ("/triton/compiler/", "/triton/backends/", "/triton/runtime/build")


def is_build_error(exc: BaseException) -> bool:
    """True for an error raised while Triton built a kernel: one of triton's compile-error classes, or any
    exception whose traceback passes through triton's compiler or backends (MLIR / ptxas failures raise
    plain RuntimeErrors from there)."""
    if isinstance(exc, torch.cuda.OutOfMemoryError):
        return False
    if any(type(e).__name__ in BUILD_ERRORS for e in (exc, exc.__cause__) if e is not None):
        return True
    tb = exc.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename.replace("\\", "/")
        if any(m in name for m in _BUILD_MODULES):
            return True
        tb = tb.tb_next
    return False


def summary(exc: BaseException) -> str:
    """One line for a log: a Triton compile error reads "at L:C:", its source, then the cause: keep the first
    and the last line (and the cause's own message when it was raised from another exception)."""
    lines = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip()]
    text = lines[0] if len(lines) <= 1 else f"{lines[0]} ... {lines[-1]}"
    if exc.__cause__ is not None and str(exc.__cause__) not in text:
        text += f" ({type(exc.__cause__).__name__}: {str(exc.__cause__).strip().splitlines()[-1] if str(exc.__cause__).strip() else ''})"
    return text[:400]


def _capturing() -> bool:
    return torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()


class Guarded:
    def __init__(self, name: str, kernel: Callable, reference: Callable):
        self.name, self.kernel, self.reference = name, kernel, reference
        self.failure: Optional[str] = None

    def __call__(self, *args, **kwargs):
        if self.failure is None:
            try:
                return self.kernel(*args, **kwargs)
            except Exception as exc:
                if _capturing() or not is_build_error(exc):
                    raise
                self.failure = f"{type(exc).__name__}: {summary(exc)}"
                log.warning("Triton kernel %s could not be built (%s); falling back to its torch reference",
                            self.name, self.failure)
        return self.reference(*args, **kwargs)


def failures(ops) -> dict[str, str]:
    """{op name: cause} for every guarded op of ``ops`` (engine.kernels.Ops) that fell back."""
    out = {}
    for value in vars(ops).values():
        if isinstance(value, Guarded) and value.failure is not None:
            out[value.name] = value.failure
    return out
