"""The package's shape as tests: the import graph (every `from alkit... import`, also inside
functions) has no cycles, and the layers point one way."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "alkit"


def _graph() -> dict[str, set[str]]:
    mods: dict[str, Path] = {}
    for p in ROOT.rglob("*.py"):
        name = ".".join(p.relative_to(ROOT.parent).with_suffix("").parts)
        mods[name.removesuffix(".__init__")] = p
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for m, p in mods.items():
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module.startswith("alkit"):
                for a in node.names:
                    target = f"{node.module}.{a.name}"
                    edges[m].add(target if target in mods else node.module)
            elif isinstance(node, ast.Import):
                edges[m].update(a.name for a in node.names if a.name in mods)
        edges[m] &= set(mods)
        edges[m].discard(m)
    return edges


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    group = []
                    while True:
                        x = stack.pop()
                        on.discard(x)
                        group.append(x)
                        if x == v:
                            break
                    if len(group) > 1:
                        out.append(sorted(group))
            elif w not in index:
                index[w] = low[w] = counter
                counter += 1
                stack.append(w)
                on.add(w)
                work.append((w, iter(sorted(edges[w]))))
            elif w in on:
                low[v] = min(low[v], index[w])
    return out


def test_no_import_cycles() -> None:
    assert _cycles(_graph()) == []


def test_cycle_detector_finds_a_planted_cycle() -> None:
    edges = _graph()
    edges["alkit.types"] = edges["alkit.types"] | {"alkit.loop"}
    assert any("alkit.types" in g and "alkit.loop" in g for g in _cycles(edges))


def _upward(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    below = {  # module prefix -> prefixes it must not import
        "alkit.types": ("alkit.",),
        "alkit.distributions": ("alkit.loop", "alkit.strategies", "alkit.acquisition", "alkit.learners", "alkit.engines"),
        "alkit.strategies": ("alkit.loop", "alkit.runs", "alkit.engines", "alkit.learners", "alkit.models", "alkit.pools",
                             "alkit.cli", "alkit.acquisition"),
        "alkit.posterior": ("alkit.loop", "alkit.strategies", "alkit.acquisition", "alkit.learners", "alkit.engines"),
        "alkit.acquisition": ("alkit.loop", "alkit.runs", "alkit.strategies", "alkit.engines", "alkit.learners", "alkit.pools", "alkit.cli"),
        "alkit.learners": ("alkit.loop", "alkit.runs", "alkit.strategies", "alkit.engines", "alkit.pools", "alkit.cli"),
        "alkit.engines": ("alkit.loop", "alkit.runs", "alkit.strategies", "alkit.cli"),
        "alkit.pools": ("alkit.loop", "alkit.runs", "alkit.strategies", "alkit.engines", "alkit.learners", "alkit.cli"),
        "alkit.loop": ("alkit.presets", "alkit.registry", "alkit.cli"),
    }
    bad = [(m, t) for m, targets in edges.items() for t in targets
           for prefix, banned in below.items()
           if (m == prefix or m.startswith(prefix + ".")) and any(t == b.rstrip(".") or t.startswith(b if b.endswith(".") else b + ".") or t == b for b in banned)
           and not (prefix == "alkit.types" and t == m)]
    return bad


def test_layers_point_one_way() -> None:
    assert _upward(_graph()) == []


def test_layer_check_finds_planted_upward_imports() -> None:
    edges = _graph()
    edges["alkit.strategies.diverse"].add("alkit.engines")
    edges["alkit.loop"].add("alkit.presets")
    assert set(_upward(edges)) >= {("alkit.strategies.diverse", "alkit.engines"), ("alkit.loop", "alkit.presets")}
