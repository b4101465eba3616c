"""The layout's rules that the import graph shows: no import cycles in ``simengine`` or ``gridweb``
(a cycle hidden by a function-level import is still a cycle), ``simengine.runner`` only runs a
scenario, and replications are pooled in one place (``simengine.driver``)."""
from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def modules(package: str) -> dict[str, Path]:
    out = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _type_checking_only(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of ``known`` that module ``name`` imports anywhere in its code (``from p import
    m`` names module p.m when that is one, else p), except under ``if TYPE_CHECKING``."""
    tree = ast.parse(path.read_text())
    skipped = {id(n) for block in ast.walk(tree) if _type_checking_only(block) for n in ast.walk(block)}
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
            found |= {f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names}
    return (found & known) - {name}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def graph_of(package: str) -> dict[str, set[str]]:
    mods = modules(package)
    return {name: imports_of(name, path, set(mods)) for name, path in mods.items()}


@pytest.mark.parametrize("package", ["simengine", "gridweb"])
def test_no_import_cycles(package):
    assert cycles(graph_of(package)) == []


def test_the_cycle_finder_finds_a_cycle_hidden_in_a_function(tmp_path, monkeypatch):
    # the check itself must be able to fail: two modules importing each other, one lazily
    pkg = tmp_path / "loop"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from loop.b import g\n\ndef f():\n    return g()\n")
    (pkg / "b.py").write_text("def g():\n    from loop import a  # lazily\n    return a\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from loop import a\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert cycles(graph_of("loop")) == [["loop.a", "loop.b"]]


def test_the_runner_only_runs():
    assert len((ROOT / "simengine" / "runner.py").read_text().splitlines()) <= 150


def test_replications_are_pooled_by_the_driver_only():
    # sweeps pool whole runs and reproductions whole configurations; replications of one run
    # go through simengine.driver
    allowed = {"simengine.driver", "simengine.sweep"}
    pooling = {name for name, path in modules("simengine").items()
               if any(pool in path.read_text() for pool in ("ProcessPoolExecutor", "ThreadPoolExecutor",
                                                            "multiprocessing.Pool"))
               and not name.startswith("simengine.reproductions")}
    assert pooling <= allowed, pooling - allowed


def function_level_imports(path: Path) -> list[tuple[int, list[int]]]:
    """Groups of consecutive import statements inside functions: (first line, lines)."""
    tree = ast.parse(path.read_text())
    lines = sorted({sub.lineno for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                    for sub in ast.walk(node) if isinstance(sub, ast.Import | ast.ImportFrom)})
    groups: list[list[int]] = []
    for line in lines:
        if groups and line == groups[-1][-1] + 1:
            groups[-1].append(line)
        else:
            groups.append([line])
    return [(g[0], g) for g in groups]


@pytest.mark.parametrize("package", ["simengine", "gridweb"])
def test_every_function_level_import_says_why(package):
    """Imports belong at the top of a module; one inside a function must break a real cost (an
    import time, a cycle, Django's app loading) and say which in a comment on it or just above it.
    (A group of consecutive ones needs one comment.)"""
    silent = []
    for name, path in modules(package).items():
        if "migrations" in path.parts:
            continue
        text = path.read_text().splitlines()
        for first, group in function_level_imports(path):
            said = any("#" in text[k - 1] for k in group) or text[first - 2].strip().startswith("#")
            if not said:
                silent.append(f"{path.relative_to(ROOT)}:{first}: {text[first - 1].strip()}")
    assert not silent, "function-level imports that do not say why:\n" + "\n".join(silent)
