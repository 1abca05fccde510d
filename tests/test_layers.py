# SPDX-License-Identifier: Apache-2.0
"""The package's layers, read from its imports: every arrow points down.

::

    t3hw/cli.py                      argument parsing; imported by nothing
    t3hw/tools/                      generate, toolchain, simulate, synth, formal, board, ...
    t3hw/verif/                      envs, scenarios, cocotb / amaranth.sim glue, co-sim bench
    t3hw/sw/     sim_models/         driver and bus  |  behavioral and reference models
    t3hw/hw/                         synthesizable blocks and their formal properties
    t3hw/spec/                       params, layouts, register map, contract

Every ``import`` and ``from ... import`` in the package is read with :mod:`ast`, including
those inside functions (a lazy import is still an arrow), and checked against
:data:`ALLOWED`. A second check finds import cycles between modules, and a third the sizes
the layout promises (files under 600 lines, ``elaborate`` under 120). Each rule has a test
that breaks it on purpose in a copy of the package, so a rule that can no longer fail is
noticed.
"""

import ast
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("t3hw", "sim_models")

#: Third-party packages each layer may use (the standard library is always allowed).
THIRD_PARTY = {
    "spec":       {"amaranth"},
    "hw":         {"amaranth"},
    "sw":         {"cocotb"},           # CocotbBus, inside its methods only
    "sim_models": {"numpy"},
}

#: The layers each layer may import (itself always).
ALLOWED = {
    "spec":       set(),
    "hw":         {"spec"},
    "sw":         {"spec"},
    "sim_models": {"spec"},
    "verif":      {"spec", "hw", "sw", "sim_models"},
    "tools":      {"spec", "hw", "sw", "sim_models", "verif"},
    "cli":        {"spec", "hw", "sw", "sim_models", "verif", "tools", "top"},
    "top":        {"spec"},             # t3hw/__init__.py
}

MAX_FILE_LINES = 600
MAX_ELABORATE_LINES = 120


def _layer(module):
    """The layer of a dotted module name of the package (``t3hw.__main__`` runs the command
    line, so it is in the ``cli`` layer)."""
    parts = module.split(".")
    if parts[0] == "sim_models":
        return "sim_models"
    if len(parts) == 1:
        return "top"
    return "cli" if parts[1] in ("cli", "__main__") else parts[1]


def _modules(root):
    """``{dotted name: path}`` of every module of the package under ``root``."""
    found = {}
    for pkg in PACKAGES:
        for path in sorted((root / pkg).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _imports(name, path, is_package, modules):
    """Every module of the package that ``name`` imports, and every other top-level package it
    imports: ``([(line, dotted module)], [(line, top-level name)])``; relative imports are
    resolved, and ``from pkg import mod`` counts as importing ``pkg.mod``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    here = name.split(".") if is_package else name.split(".")[:-1]
    ours, external = [], []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[:len(here) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            submodules = [f"{module}.{a.name}" for a in node.names
                          if f"{module}.{a.name}" in modules]
            targets = submodules or [module]
        else:
            continue
        for target in targets:
            top = target.split(".")[0]
            if top in PACKAGES:
                while target not in modules and "." in target:
                    target = target.rsplit(".", 1)[0]
                ours.append((node.lineno, target))
            elif top not in sys.stdlib_module_names and top != "__future__":
                external.append((node.lineno, top))
    return ours, external


def _graph(root):
    """``{module: [(line, imported module of the package)]}`` and the third-party imports."""
    modules = _modules(root)
    graph, external = {}, {}
    for name, path in modules.items():
        graph[name], external[name] = _imports(name, path, path.name == "__init__.py", modules)
    return modules, graph, external


def layer_violations(root):
    """Every import that breaks :data:`ALLOWED` or :data:`THIRD_PARTY`, as text."""
    modules, graph, external = _graph(root)
    bad = []
    for name, edges in graph.items():
        layer = _layer(name)
        rel = modules[name].relative_to(root)
        for line, target in edges:
            other = _layer(target)
            if target in ("t3hw.cli",) and name != "t3hw.__main__":
                bad.append(f"{rel}:{line}: imports t3hw.cli (nothing may)")
            elif other != layer and other not in ALLOWED[layer]:
                bad.append(f"{rel}:{line}: {layer} imports {target} ({other})")
        allowed_ext = THIRD_PARTY.get(layer)
        if allowed_ext is not None:
            for line, top in external[name]:
                if top not in allowed_ext:
                    bad.append(f"{rel}:{line}: {layer} imports {top} (allowed: "
                               f"{', '.join(sorted(allowed_ext)) or 'the standard library'})")
    return bad


def import_cycles(root):
    """Strongly connected groups of more than one module (or a module importing itself)."""
    _, graph, _ = _graph(root)
    succ = {n: sorted({t for _, t in e}) for n, e in graph.items()}
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):                               # Tarjan, recursive: the graph is small
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in succ[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1 or v in succ[v]:
                out.append(sorted(group))

    for v in sorted(succ):
        if v not in index:
            visit(v)
    return out


def size_violations(root):
    """Files over :data:`MAX_FILE_LINES` and ``elaborate`` methods over
    :data:`MAX_ELABORATE_LINES`."""
    bad = []
    for name, path in _modules(root).items():
        text = path.read_text()
        rel = path.relative_to(root)
        if text.count("\n") > MAX_FILE_LINES:
            bad.append(f"{rel}: {text.count(chr(10))} lines (at most {MAX_FILE_LINES})")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef) and node.name == "elaborate":
                n = node.end_lineno - node.lineno + 1
                if n > MAX_ELABORATE_LINES:
                    bad.append(f"{rel}:{node.lineno}: elaborate is {n} lines "
                               f"(at most {MAX_ELABORATE_LINES})")
    return bad


# --- the rules, on the package as it is ----------------------------------------------------

def test_every_import_points_down():
    assert layer_violations(ROOT) == []


def test_no_import_cycles():
    assert import_cycles(ROOT) == []


def test_files_and_elaborate_methods_are_small():
    assert size_violations(ROOT) == []


# --- each rule, broken on purpose in a copy -------------------------------------------------

@pytest.fixture
def copy(tmp_path):
    for pkg in PACKAGES:
        shutil.copytree(ROOT / pkg, tmp_path / pkg,
                        ignore=shutil.ignore_patterns("__pycache__", "*.vlt", "*.ys", "*.v"))
    return tmp_path


def _append(path, text):
    path.write_text(path.read_text() + text)


@pytest.mark.parametrize("module, line, expect", [
    ("t3hw/hw/tracker.py", "from sim_models.tracker import TrackerModel\n",
     "hw imports sim_models.tracker"),
    ("t3hw/hw/dma.py", "from t3hw.tools import toolchain\n", "hw imports t3hw.tools"),
    ("t3hw/spec/params.py", "from t3hw.hw import queue\n", "spec imports t3hw.hw.queue"),
    ("sim_models/dram.py", "from t3hw.hw.arbiter import Arbiter\n",
     "sim_models imports t3hw.hw.arbiter"),
    ("sim_models/gpu.py", "import matplotlib\n", "sim_models imports matplotlib"),
    ("sim_models/network.py", "def f():\n    import cocotb\n", "sim_models imports cocotb"),
    ("t3hw/hw/queue.py", "import numpy\n", "hw imports numpy"),
    ("t3hw/tools/generate.py", "from t3hw import cli\n", "imports t3hw.cli"),
    ("t3hw/verif/stimulus.py", "from ..tools import simulate\n", "verif imports t3hw.tools"),
])
def test_a_broken_layer_rule_is_caught(copy, module, line, expect):
    before = set(layer_violations(copy))
    _append(copy / module, line)
    found = sorted(set(layer_violations(copy)) - before)
    assert len(found) == 1 and expect in found[0], found


def test_a_cycle_is_caught(copy):
    _append(copy / "t3hw/spec/params.py", "def _late():\n    from .regmap import RegisterMap\n")
    cycles = import_cycles(copy)
    assert any({"t3hw.spec.params", "t3hw.spec.regmap"} <= set(c) for c in cycles), cycles


def test_an_oversized_file_or_elaborate_is_caught(copy):
    before = set(size_violations(copy))
    _append(copy / "t3hw/hw/merge.py", "\n" * MAX_FILE_LINES)
    _append(copy / "t3hw/hw/queue.py", "\n\nclass Big:\n    def elaborate(self, platform):\n"
            + "        pass\n" * MAX_ELABORATE_LINES)
    found = set(size_violations(copy)) - before
    assert any(f.startswith("t3hw/hw/merge.py:") and "lines (at most" in f for f in found)
    assert any(f.startswith("t3hw/hw/queue.py:") and "elaborate is" in f for f in found)
