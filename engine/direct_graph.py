"""A function compiled once by ``torch.compile`` (inductor, C++ wrapper), then called without dynamo (issue #14).

Dynamo guards every module, weight and attribute a traced function read: ~5,000 checks, 2.3 ms a call for a
30-layer decode step on this project's 2-vCPU VMs, a fifth of the step. ``DirectGraph`` keeps inductor's compiled
graph and the inputs it was traced with, and each call swaps in only the per-call ones: the tensors and ints
named in ``inputs`` and the sizes read off them (placeholders such as ``L['x'].size()[0]``, evaluated on the
call's values). Everything else the graph reads (weights, the KV pool) is the same tensor every call, its sizes
the same numbers. That is what makes skipping the guards safe, and what a user of this class must keep true.

Shapes: only what changes is symbolic. The weights and the pool keep static sizes (a trace with every size
symbolic took ~50 s of sympy on these VMs, against ~5 s). The ints in ``inputs`` start as constants: the first
trace is not compiled, and a second call with other ints makes dynamo generalize them (automatic dynamic) into
the graph that is compiled and kept. ``batch_dims`` mark the first dimension of per-call tensors dynamic. Duck
sizing is off, or a per-call size that equals another size at trace time would be assumed equal to it forever.
``check`` then calls the traced function through dynamo on a third set of values: a recompile (the graph was
specialized after all) or a result that differs from the direct call's is an error, and the caller keeps its
eager path. A different pool size is a different graph (a cold compile, then inductor's on-disk cache).
"""
from __future__ import annotations

import re
from typing import Callable

import torch

_ROOT = re.compile(r"L\['(\w+)'\]")


class DirectGraph:
    def __init__(self, fn: Callable, inputs: tuple[str, ...], batch_dims: tuple[str, ...] = ()):
        """``fn``'s parameters named in ``inputs`` change between calls (pass them by keyword); nothing else it
        reads may. ``batch_dims``: tensor inputs whose first dimension changes between calls."""
        self.inputs, self.batch_dims = inputs, batch_dims
        self.compiles = 0  # graphs dynamo handed to inductor: 1 after a general trace
        self._graph = None
        self._args: list = []
        self._per_call: list[tuple[int, object]] = []  # (placeholder index, code evaluating it on the call's L)
        self._traced = torch.compile(fn, backend=self._backend, dynamic=None, fullgraph=True)

    def _backend(self, gm, example_inputs):
        from torch._inductor.compile_fx import compile_fx

        names = [n.meta["grapharg"].source.name for n in gm.graph.nodes if n.op == "placeholder"]
        roots = {m.group(1) for m in map(_ROOT.match, names) if m}
        if not roots >= set(self.inputs):  # an int was specialized to its value: a trace to generalize, not run
            return gm.forward
        graph = compile_fx(gm, example_inputs, config_patches={"cpp_wrapper": True})
        self.compiles += 1  # (dynamo may restart a trace from inside compile_fx: not a compile)
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
        """Through dynamo. The first call traces with the ints as constants (not compiled); a call with other
        ints recompiles with them symbolic, and that graph is compiled and kept."""
        import torch.fx.experimental._config as fx_config

        for name in self.batch_dims:
            torch._dynamo.mark_dynamic(inputs[name], 0)
        with fx_config.patch(use_duck_shape=False):
            return self._traced(**inputs)

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
