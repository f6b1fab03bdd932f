"""The server reads in one sitting: short modules, no import cycle, the metrics catalogue imported in two places.

Read from the source with `ast` (nothing is imported), counting every import a module makes,
at the top or inside a function, so a lazy import cannot hide a cycle.
"""

import ast
from pathlib import Path

APP = Path(__file__).parents[1] / "app"
MAX_LINES = 250
LONG_ALLOWED = (["app", "bench"], ["app", "prepare"])  # benchmarks and model preparation: tools, not the server
METRICS_IMPORTERS = {"app.collector", "app.middleware"}


def module_name(path: Path) -> str:
    parts = path.relative_to(APP.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(APP.rglob("*.py"))}


def imports_of(name: str) -> set[str]:
    """The app modules `name` imports: `import app.x`, `from app.x import y`, `from app import x`, relative too."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)  # `from app import metrics`
    return {module for module in found if module in MODULES and module != name}


GRAPH = {name: imports_of(name) for name in MODULES}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_import_graph_sees_the_server() -> None:
    assert "app.lane" in GRAPH["app.strategies.batched"]
    assert "app.metrics" in GRAPH["app.collector"]
    assert "app.jobs.lifecycle" in GRAPH["app.strategies.tickets"]  # `from app.jobs import lifecycle`


def test_no_import_cycle_in_app() -> None:
    assert cycles(GRAPH) == []


def test_only_the_collector_and_the_middleware_import_metrics() -> None:
    assert {name for name, imported in GRAPH.items() if "app.metrics" in imported} == METRICS_IMPORTERS


def test_server_modules_are_under_250_lines() -> None:
    server = {name: path for name, path in MODULES.items() if name.split(".")[:2] not in LONG_ALLOWED}
    lines = {name: len(path.read_text("utf-8").splitlines()) for name, path in server.items()}
    assert {name: n for name, n in lines.items() if n > MAX_LINES} == {}
    assert "app.lane" in server and "app.bench.load" not in server
