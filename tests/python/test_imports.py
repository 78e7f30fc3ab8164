"""The package's shape: every module imports on its own in a fresh
interpreter, no module imports another that (directly or not) imports it back
— also through imports inside functions, which would only hide a cycle — and
the pipeline's layers import only downwards: record <- analysis <- report <- live <-
traffic <- cli. analysis/ and report/ know nothing of how traffic was made."""
import ast
import os
import subprocess
import sys

import pytest

PKG = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                   "userspace", "python")
# a module may import from its own layer and the ones before it
LAYERS = ["files", "record", "analysis", "report", "live", "traffic", "cli"]
TOP = {"__init__": "analysis", "__main__": "cli"}


def modules():
    out = {}
    for dirpath, _, files in os.walk(os.path.join(PKG, "hopscope")):
        for f in files:
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(dirpath, f), PKG)[:-3].split(os.sep)
                if rel[-1] == "__init__":
                    rel = rel[:-1]
                out[".".join(rel)] = os.path.join(dirpath, f)
    return out


MODULES = modules()


def imports(name, path):
    """Every hopscope module that name imports, anywhere in its code."""
    tree = ast.parse(open(path).read(), path)
    package = name.split(".") if path.endswith("__init__.py") else name.split(".")[:-1]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            mod = ".".join(base + ([node.module] if node.module else []))
            # `from pkg import mod` names a module when one exists by that name
            targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in MODULES else mod
                       for a in node.names]
        else:
            continue
        found |= {t for t in targets if t in MODULES and t != name}
    return found


GRAPH = {name: imports(name, path) for name, path in MODULES.items()}


def layer(name):
    parts = name.split(".")
    if len(parts) == 1:
        # the package itself: its public face is the record file (load) and
        # the routers of a path joined (load_path)
        return "analysis"
    return TOP.get(parts[1], parts[1])


def test_the_walk_found_the_pipeline():
    for sub in ("hopscope.record.load", "hopscope.analysis.stats", "hopscope.report.pdf",
                "hopscope.traffic.run", "hopscope.cli"):
        assert sub in MODULES
    assert {layer(m) for m in MODULES} <= set(LAYERS)


def test_no_import_cycles():
    cycles, state = [], {}

    def visit(node, stack):
        state[node] = "open"
        for nxt in sorted(GRAPH[node]):
            if state.get(nxt) == "open":
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = "done"

    for m in sorted(GRAPH):
        if m not in state:
            visit(m, [m])
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_layers_import_only_downwards():
    wrong = [f"{m} ({layer(m)}) imports {t} ({layer(t)})"
             for m, targets in GRAPH.items() for t in targets
             if LAYERS.index(layer(t)) > LAYERS.index(layer(m))]
    assert not wrong, "\n".join(wrong)


@pytest.mark.slow  # a fresh interpreter per module
@pytest.mark.parametrize("name", sorted(set(MODULES) - {"hopscope.__main__"}))  # runs the CLI
def test_imports_alone(name):
    r = subprocess.run([sys.executable, "-c", f"import {name}"], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=PKG))
    assert r.returncode == 0, r.stderr
