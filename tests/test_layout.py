"""The server reads in one sitting: short modules, no import cycle, the metrics catalogue imported in two places,
the paths listed in one place only, and nothing outside tests/ leaning on a test module.

Read from the source with `ast` (nothing is imported), counting every import a module makes,
at the top or inside a function, so a lazy import cannot hide a cycle.
"""

import ast
import re
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


ROOT = APP.parent
PATH_NAMES = {"naive", "limited", "batched", "tickets"}  # what app/registry.py registers (checked below)
# The registry, and burst.py: standard-library only for students, held to the registry by tests/test_registry.py.
# app/bench/traffic.py: a burst size per path for the metrics tests, scenario data like the page's notes.
MAY_LIST_PATHS = {ROOT / "app" / "registry.py", ROOT / "static" / "burst.py", ROOT / "app" / "bench" / "traffic.py"}


def path_lists(tree: ast.AST) -> list[int]:
    """Lines of literal tuples, lists, sets or dict keys naming three or more of the paths: a hand-made path list."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            items: list[ast.expr | None] = list(node.keys)
        elif isinstance(node, ast.Tuple | ast.List | ast.Set):
            items = list(node.elts)
        else:
            continue
        names = {item.value for item in items if isinstance(item, ast.Constant) and item.value in PATH_NAMES}
        if len(names) >= 3:
            found.append(node.lineno)
    return found


def test_the_path_finder_finds_a_hand_made_list() -> None:
    assert path_lists(
        ast.parse('X = ("naive", "limited", "batched")\nY = {"tickets": 1, "naive": 2, "limited": 3}')
    ) == [1, 2]
    assert path_lists(ast.parse('X = ("naive", "limited")\nY = [p.name for p in PATHS]')) == []


def test_the_registry_registers_the_names_this_check_looks_for() -> None:
    from app.registry import PATHS

    assert {p.name for p in PATHS} == PATH_NAMES


def test_no_module_in_app_lists_the_paths_by_hand() -> None:
    sources = [p for p in sorted(APP.rglob("*.py")) if p not in MAY_LIST_PATHS]
    lists = {str(p.relative_to(ROOT)): lines for p in sources if (lines := path_lists(ast.parse(p.read_text("utf-8"))))}
    assert lists == {}


LITERAL_GROUP = re.compile(r"\[[^\[\]]*\]|\{[^{}]*\}")  # an innermost [...] or {...}
QUOTED = re.compile(r"[\"'`](\w+)[\"'`]|\b(\w+)\s*:")  # a quoted word, or an object key


def script_path_lists(code: str) -> list[str]:
    """The innermost array or object literals of a script that name three or more of the paths."""
    return [
        group.group(0)[:80]
        for group in LITERAL_GROUP.finditer(code)
        if len({a or b for a, b in QUOTED.findall(group.group(0))} & PATH_NAMES) >= 3
    ]


def test_the_script_finder_finds_a_hand_made_list() -> None:
    assert script_path_lists('const P = ["naive", "limited", "batched"];') == ['["naive", "limited", "batched"]']
    assert script_path_lists("const L = { naive: 1, limited: 2, tickets: 3 };") != []
    assert script_path_lists("const P = JSON.parse(block.textContent);") == []


def test_no_script_in_static_lists_the_paths_by_hand() -> None:
    scripts = [
        p for p in sorted((ROOT / "static").rglob("*")) if p.suffix in {".js", ".py"} and p not in MAY_LIST_PATHS
    ]
    assert scripts, "no scripts found under static/"
    lists = {str(p.relative_to(ROOT)): found for p in scripts if (found := script_path_lists(p.read_text("utf-8")))}
    assert lists == {}


def imported_modules(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return found


def test_nothing_in_app_or_tools_imports_a_test_module() -> None:
    sources = sorted([*APP.rglob("*.py"), *(ROOT / "tools").rglob("*.py")])
    from_tests = {
        str(p.relative_to(ROOT)): sorted(m for m in imported_modules(p) if m == "tests" or m.startswith("tests."))
        for p in sources
    }
    assert {name: modules for name, modules in from_tests.items() if modules} == {}
