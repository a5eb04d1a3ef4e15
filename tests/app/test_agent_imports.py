"""The layers import downwards only: engine and ingest never import app, and no module of app imports itself back
through others (no import circles, lazy imports inside functions counted too: a circle hidden in a function is
still one). Read from the source with ``ast``; run this file as a script to print the circles and the import
floors of app/agent (the longest chain of imports within it)."""
from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("app", "ingest", "engine")


def modules(root: Path = ROOT) -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in sorted((root / pkg).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


def imports(mods: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the repository modules it imports, anywhere in its file."""
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        is_pkg = path.name == "__init__.py"
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    pkg = name.split(".") if is_pkg else name.split(".")[:-1]
                    pkg = pkg[:len(pkg) - node.level + 1]
                    base = ".".join(pkg + ([base] if base else []))
                targets = [f"{base}.{a.name}" for a in node.names] + [base]
            else:
                continue
            for t in targets:
                while t and t not in mods:  # "app.agent.scope.Scope" -> "app.agent.scope"
                    t = t.rpartition(".")[0]
                if t and t != name:
                    deps.add(t)
        graph[name] = deps
    return graph


def cycles(graph: dict[str, set[str]], prefix: str) -> list[list[str]]:
    """Strongly connected components of more than one module among the modules under ``prefix`` (Tarjan)."""
    nodes = [n for n in graph if n == prefix or n.startswith(prefix + ".")]
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in nodes:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for n in nodes:
        if n not in index:
            visit(n)
    return out


def floors(graph: dict[str, set[str]], prefix: str) -> int:
    """The longest chain of imports among the modules under ``prefix`` (a circle counts as one floor)."""
    comps = {m: tuple(c) for c in cycles(graph, prefix) for m in c}
    nodes = [n for n in graph if n.startswith(prefix + ".")]
    memo: dict[str, int] = {}

    def depth(v: str, seen: frozenset) -> int:
        if v in memo:
            return memo[v]
        below = [w for w in graph[v] if w in nodes and w not in seen and comps.get(w, w) != comps.get(v, v)]
        d = 1 + max((depth(w, seen | {v}) for w in below), default=0)
        memo[v] = d
        return d

    return max((depth(n, frozenset()) for n in nodes), default=0)


def test_engine_and_ingest_never_import_app():
    graph = imports(modules())
    bad = sorted(f"{m} -> {d}" for m, deps in graph.items() if m.split(".")[0] in ("engine", "ingest")
                 for d in deps if d.split(".")[0] == "app")
    assert bad == [], bad


def test_app_has_no_import_circles():
    graph = imports(modules())
    assert cycles(graph, "app") == []


def test_the_checker_sees_a_circle(tmp_path):
    """The checker itself: a lazy import inside a function closes a circle it reports."""
    pkg = tmp_path / "app"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from app.b import f\n")
    (pkg / "b.py").write_text("def f():\n    from app import a\n")
    graph = imports({"app": pkg / "__init__.py", "app.a": pkg / "a.py", "app.b": pkg / "b.py"})
    assert cycles(graph, "app") == [["app.a", "app.b"]]


def module_caches(mods: dict[str, Path], prefix: str = "app.agent") -> list[str]:
    """Module-level names bound to an empty container or a ``...Cache(...)``: state kept across questions."""
    out = []
    for name, path in mods.items():
        if not name.startswith(prefix):
            continue
        for node in ast.parse(path.read_text()).body:
            value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if value is not None else []
            empty = isinstance(value, (ast.Dict, ast.List, ast.Set)) and not getattr(value, "keys", None) and \
                not getattr(value, "elts", None)
            call = isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and (
                value.func.id.endswith("Cache") or (value.func.id in ("dict", "OrderedDict", "set") and not value.args))
            if empty or call:
                out += [f"{name}.{t.id}" for t in targets if isinstance(t, ast.Name)]
    return sorted(out)


if __name__ == "__main__":
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT
    g = imports(modules(root))
    print(f"{root}: app/agent floors {floors(g, 'app.agent')}")
    for c in module_caches(modules(root)):
        print("module-level cache:", c)
    for c in cycles(g, "app"):
        print("circle:", " <-> ".join(c))
    for m, deps in sorted(g.items()):
        for d in sorted(deps):
            if m.split(".")[0] in ("engine", "ingest") and d.split(".")[0] == "app":
                print("upward:", m, "->", d)
