"""A function compiled once by ``torch.compile`` (inductor, C++ wrapper), then called without dynamo (issue #14).

Dynamo guards every module, weight and attribute a traced function read: ~5,000 checks, 2.3 ms a call for a
30-layer decode step on this project's 2-vCPU VMs, a fifth of the step. ``DirectGraph`` keeps inductor's compiled
graph and the inputs it was traced with, and each call swaps in only the per-call ones: the tensors and ints
named in ``inputs`` and the sizes read off them (placeholders such as ``L['x'].size()[0]``, evaluated on the
call's values). Everything else the graph reads (weights, the KV pool) is the same tensor every call, its sizes
the same numbers. That is what makes skipping the guards safe, and what a user of this class must keep true.

Tracing runs without duck sizing: otherwise a per-call size that happens to equal a weight's size at trace time
(a batch of 2 and the int4 scales' pair dimension) is assumed equal to it forever. ``check`` then calls the
traced function through dynamo on other values: a recompile (the graph was specialized after all) or a result
that differs from the direct call's is an error, and the caller keeps its eager path.
"""
from __future__ import annotations

import logging
import re
from typing import Callable

import torch

_ROOT = re.compile(r"L\['(\w+)'\]")


class DirectGraph:
    def __init__(self, fn: Callable, inputs: tuple[str, ...]):
        """``fn``'s parameters named in ``inputs`` change between calls (pass them by keyword); nothing else it
        reads may."""
        self.inputs = inputs
        self.compiles = 0  # graphs dynamo handed to inductor: 1 after a general trace
        self._graph = None
        self._args: list = []
        self._per_call: list[tuple[int, object]] = []  # (placeholder index, code evaluating it on the call's L)
        self._traced = torch.compile(fn, backend=self._backend, dynamic=True, fullgraph=True)

    @property
    def compiled(self) -> bool:
        return self._graph is not None

    def _backend(self, gm, example_inputs):
        from torch._inductor.compile_fx import compile_fx

        graph = compile_fx(gm, example_inputs, config_patches={"cpp_wrapper": True})
        self.compiles += 1  # (dynamo may restart a trace from inside compile_fx: not a compile)
        names = [n.meta["grapharg"].source.name for n in gm.graph.nodes if n.op == "placeholder"]
        args, per_call = [], []
        for i, (name, value) in enumerate(zip(names, example_inputs)):
            root = _ROOT.match(name)
            if root and root.group(1) in self.inputs:  # a per-call tensor or int, or a size read off one
                per_call.append((i, compile(name, "<graph input>", "eval")))
                value = None
            elif isinstance(value, torch.SymInt):  # a size or stride of a persistent tensor: its number
                value = value.node.hint
            args.append(value)
        self._graph, self._args, self._per_call = graph, args, per_call
        return graph

    def trace(self, **inputs):
        """Through dynamo: traces and compiles on the first call."""
        import torch.fx.experimental._config as fx_config

        # without duck sizing every weight size is its own symbol, and sympy warns (RecursionError, harmless:
        # the expression is kept unsimplified) on a few dozen of them: not the operator's business
        shapes_log = logging.getLogger("torch.fx.experimental.symbolic_shapes")
        level = shapes_log.level
        shapes_log.setLevel(logging.ERROR)
        try:
            with fx_config.patch(use_duck_shape=False):
                return self._traced(**inputs)
        finally:
            shapes_log.setLevel(level)

    def __call__(self, **inputs):
        args, env = list(self._args), {"L": inputs}
        for i, code in self._per_call:
            args[i] = eval(code, env)  # noqa: S307 (code compiled from dynamo's own source names, above)
        return self._graph(*args)[0]

    def check(self, **inputs) -> None:
        """Dynamo's call and the direct call on inputs other than the trace's must agree, with no recompile."""
        want = self.trace(**inputs)
        if self.compiles != 1:
            raise RuntimeError(f"the compiled graph was specialized to its trace's inputs ({self.compiles} compiles)")
        if not torch.equal(self(**inputs), want):
            raise RuntimeError("the compiled graph called directly differs from dynamo's call")
