"""api/satlab's layers: each top-level module or package of satlab sits in one layer, and imports
only from its own layer or lower ones, without cycles. Read statically with ast (no module is
imported); every import counts, function-local and TYPE_CHECKING ones too, since a function-local
import that dodges a cycle is still the cycle."""

from __future__ import annotations

import ast
from pathlib import Path

SATLAB = Path(__file__).resolve().parents[1] / "satlab"

# Lowest first. A new top-level module or package must be placed here.
LAYERS: list[tuple[str, set[str]]] = [
    # No satlab imports beyond this layer: paths, environment, storage, statistics, progress bars.
    (
        "base",
        {
            "__init__",
            "settings",
            "safe_yaml",
            "db",
            "stats",
            "metrics",
            "htmlkit",
            "progress",
            "records",
            "bounded",
        },
    ),
    # What a scenario is: its schema, the congestion-control schemes, the link budget, verdicts.
    (
        "domain",
        {
            "linkbudget",
            "expectations",
            "schemes",
            "link_backend",
            "scenario",
            "beam_hosts",
            "contention",
            "gateway_settings",
            "catalog",
            "phy",
            "traffic",
        },
    ),
    # The Rust link model's answers and the emulator's check of a link (each run as a bounded
    # process), the traces built on them, and OpenSAND's configuration format read and written.
    ("link tools", {"linkmodel", "linkcheck", "raintrace", "weather", "modemlog", "opensand"}),
    # The process inside each box that starts programs on the orchestrator's behalf.
    ("agent", {"agent"}),
    # Boxes, links and programs for one run, and the runner.
    ("testbed", {"testbed"}),
    # The FastAPI service: database models, experiments, results, routes.
    ("service", {"service"}),
    # Clients of the service and the worker that runs its runs.
    (
        "applications",
        {"worker", "rest_client", "ci_verdicts", "db_admin", "remote_cli", "reproduce"},
    ),
    # Entry points.
    ("entry points", {"app", "cli", "toolkit_cli"}),
]
LAYER_OF = {unit: i for i, (_, units) in enumerate(LAYERS) for unit in units}


def _units() -> set[str]:
    """The top-level modules and packages of satlab (`__init__` stands for the package itself)."""
    found = {p.stem for p in SATLAB.glob("*.py")}
    found |= {p.parent.name for p in SATLAB.glob("*/__init__.py")}
    return found


def _unit_of(module: str, units: set[str]) -> str | None:
    """The top-level unit a dotted module name lies in, None outside satlab."""
    parts = module.split(".")
    if parts[0] != "satlab":
        return None
    return parts[1] if len(parts) > 1 and parts[1] in units else "__init__"


def _imported(node: ast.Import | ast.ImportFrom, package: str) -> list[str]:
    """The dotted names an import statement reads, relative ones resolved against `package`."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:
        parts = package.split(".")
        base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
    # `from satlab import db` names a submodule; `from satlab.x import y` reads satlab.x.
    return [f"{base}.{a.name}" for a in node.names] if base == "satlab" else [base]


def import_graph() -> dict[str, dict[str, list[str]]]:
    """unit -> imported unit -> where (file:line), between different units only."""
    units = _units()
    graph: dict[str, dict[str, list[str]]] = {u: {} for u in units}
    for path in sorted(SATLAB.rglob("*.py")):
        rel = path.relative_to(SATLAB.parent).with_suffix("")
        module = ".".join(rel.parts).removesuffix(".__init__")
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        source = _unit_of(module, units)
        assert source is not None
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for name in _imported(node, package):
                target = _unit_of(name, units)
                if target is not None and target != source:
                    where = f"{path.relative_to(SATLAB.parent)}:{node.lineno}"
                    graph[source].setdefault(target, []).append(where)
    return graph


def find_cycle(graph: dict[str, dict[str, list[str]]]) -> list[str] | None:
    """One cycle of the graph (its units, the first repeated at the end), None when acyclic."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(u: str) -> list[str] | None:
        state[u] = 1
        path.append(u)
        for v in sorted(graph.get(u, {})):
            if state.get(v) == 1:
                return path[path.index(v) :] + [v]
            if v not in state and (found := visit(v)):
                return found
        path.pop()
        state[u] = 2
        return None

    for u in sorted(graph):
        if u not in state and (found := visit(u)):
            return found
    return None


def test_every_unit_has_a_layer() -> None:
    assert sorted(_units() - LAYER_OF.keys()) == [], "add these to LAYERS in test_layers.py"


def test_no_import_cycle_between_top_level_units() -> None:
    graph = import_graph()
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(
        f"{a} ({graph[a][b][0]})" for a, b in zip(cycle, cycle[1:], strict=False)
    )


def test_imports_go_downward_only() -> None:
    upward = [
        f"{src} ({LAYERS[LAYER_OF[src]][0]}) imports {dst} ({LAYERS[LAYER_OF[dst]][0]}) at "
        + ", ".join(where)
        for src, targets in sorted(import_graph().items())
        for dst, where in sorted(targets.items())
        if src in LAYER_OF and dst in LAYER_OF and LAYER_OF[dst] > LAYER_OF[src]
    ]
    assert upward == []


def test_the_check_sees_cycles() -> None:
    graph = {"a": {"b": ["a.py:1"]}, "b": {"c": ["b.py:1"]}, "c": {"a": ["c.py:9"]}}
    assert find_cycle(graph) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b": ["a.py:1"]}, "b": {}}) is None
