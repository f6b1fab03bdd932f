"""The server reads in one sitting: packages in layers, no import cycle, the metrics catalogue imported in two places,
the paths listed in one place only (no literal list, `dict(…)` or list-like string of them in app/ or static/
outside the registry and the scenario data below), and nothing outside tests/ leaning on a test module (by
import statement, by name at run time, or through `sys.path`).

Read from the source with `ast` (nothing is imported), counting every import a module makes,
at the top or inside a function, so a lazy import cannot hide a cycle.
"""

import ast
import re
from pathlib import Path

from app.paths.registry import PATHS

APP = Path(__file__).parents[1] / "app"
METRICS_IMPORTERS = {"app.observe.collector", "app.door.middleware"}


def module_name(path: Path) -> str:
    parts = path.relative_to(APP.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(APP.rglob("*.py"))}


def every_import(name: str) -> set[str]:
    """Every module name `name` imports: `import x.y`, `from x.y import z` (and `x.y.z`), relative ones resolved."""
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
    return found


def imports_of(name: str) -> set[str]:
    """The app modules `name` imports: `import app.x`, `from app.x import y`, `from app import x`, relative too."""
    return {module for module in every_import(name) if module in MODULES and module != name}


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
    assert "app.engine.lane" in GRAPH["app.paths.batched"]
    assert "app.observe.metrics" in GRAPH["app.observe.collector"]
    assert "app.jobs.lifecycle" in GRAPH["app.paths.tickets"]  # `from app.jobs import lifecycle`


def test_no_import_cycle_in_app() -> None:
    assert cycles(GRAPH) == []


def room(name: str) -> str:
    """Where a module sits: its package under app/ (`app.paths`), or itself when it sits at app/'s root."""
    parts = name.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 or MODULES[name].name == "__init__.py" else name


ROOMS = {room(name): set[str]() for name in MODULES}
for _name, _imported in GRAPH.items():
    ROOMS[room(_name)].update(room(module) for module in _imported if room(module) != room(_name))
FLOOR = {"app.settings", "app.errors", "app.datafile"}  # what every package may read: knobs, the error shape, files
ENTRY = {"app.main", "app.serve"}  # the app and the process that serves it: above every package


def test_the_room_graph_sees_packages_and_root_modules() -> None:
    assert "app.engine" in ROOMS["app.paths"] and "app.paths" in ROOMS["app.lab"]
    assert "app.engine" not in ROOMS["app.engine"]  # a package's own modules are one room
    assert {"app.settings", "app.lab", "app.main"} <= ROOMS.keys()


def test_the_packages_form_layers() -> None:
    """No two rooms (a package, or a module at app/'s root) import each other, directly or round a loop: each
    package can be read after the ones it imports, and moving a module means moving it to where its importers are."""
    assert cycles(ROOMS) == []


def test_the_floor_imports_nothing_of_the_server() -> None:
    """Settings (the box's state included), the error shape and the file reader are read by every package."""
    assert {name: sorted(ROOMS[name]) for name in FLOOR if ROOMS[name]} == {}


def test_no_package_imports_the_entry_modules() -> None:
    importers = {name: sorted(found) for name, imported in ROOMS.items() if (found := imported & ENTRY)}
    assert importers == {"app.serve": ["app.main"]}


def test_only_the_collector_and_the_middleware_import_metrics() -> None:
    assert {name for name, imported in GRAPH.items() if "app.observe.metrics" in imported} == METRICS_IMPORTERS


ROOT = APP.parent
PATH_NAMES = {p.name for p in PATHS}  # the names a hand-made list would repeat (tests/test_registry.py pins them)
# The registry, and burst.py: standard-library only for students, held to the registry by tests/test_registry.py.
# kit/traffic.py: a burst size per path for the metrics tests, scenario data like the page's notes.
# bench/adaptive.py: the paths its benchmark compares, scenario data too; static/adaptive-curve.json: its
# measured medians, written by bench/adaptive_curve.py (data, never edited by hand).
MAY_LIST_PATHS = {
    ROOT / "static" / "adaptive-curve.json",
    ROOT / "app" / "paths" / "registry.py",
    ROOT / "static" / "burst.py",
    ROOT / "kit" / "traffic.py",
    ROOT / "bench" / "adaptive.py",
}


NAME = "|".join(sorted(PATH_NAMES))
# Three or more of the names in a row, separated as a list is in prose or a help text: "a, b or c", "a|b|c".
LISTED_IN_TEXT = re.compile(rf"\b({NAME})\b(?:\s*(?:,|\||/|\bor\b|\band\b)\s*\b(?:{NAME})\b){{2,}}")


def path_lists(tree: ast.AST) -> list[int]:
    """Lines of a hand-made path list: literal tuples, lists, sets, dict keys or `dict(…)` keywords naming three or
    more of the paths, or a string (not a docstring) that lists three in a row."""
    prose = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}  # docstrings, bare strings
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            keys = [key.value for key in node.keys if isinstance(key, ast.Constant)]
        elif isinstance(node, ast.Tuple | ast.List | ast.Set):
            keys = [item.value for item in node.elts if isinstance(item, ast.Constant)]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
            keys = [keyword.arg for keyword in node.keywords]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose:
            keys = list(PATH_NAMES) if LISTED_IN_TEXT.search(node.value) else []
        else:
            continue
        if len(PATH_NAMES.intersection(keys)) >= 3:
            found.append(node.lineno)
    return found


def test_the_path_finder_finds_a_hand_made_list() -> None:
    assert path_lists(
        ast.parse('X = ("naive", "limited", "batched")\nY = {"tickets": 1, "naive": 2, "limited": 3}')
    ) == [1, 2]
    assert path_lists(ast.parse("X = dict(naive=3, limited=8, batched=4)")) == [1]
    assert path_lists(ast.parse('H = "naive, limited or batched"\nI = f"one of naive|limited|tickets: {x}"')) == [1, 2]
    assert path_lists(ast.parse('X = ("naive", "limited")\nY = [p.name for p in PATHS]')) == []
    assert path_lists(ast.parse('"""Paths naive, limited and batched share the lane."""\nZ = "naive is slow"')) == []
    assert path_lists(ast.parse("Lab(naive=a, limited=b, batched=c)")) == []  # fields of a typed owner, not a list


def test_no_module_in_app_kit_or_bench_lists_the_paths_by_hand() -> None:
    measuring = [p for d in ("kit", "bench") for p in (ROOT / d).rglob("*.py")]
    sources = [p for p in sorted([*APP.rglob("*.py"), *measuring]) if p not in MAY_LIST_PATHS]
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


def text_files(folder: Path) -> list[Path]:
    """Every file under `folder` that reads as UTF-8 text (scripts, styles, templates, Lua, a Caddyfile, data)."""
    found = []
    for path in sorted(folder.rglob("*")):
        try:
            if path.is_file() and "__pycache__" not in path.parts:
                path.read_text("utf-8")
                found.append(path)
        except UnicodeDecodeError:
            continue  # an icon, a font
    return found


def test_no_other_file_in_app_or_static_lists_the_paths_by_hand() -> None:
    """static/'s scripts and styles, app/'s Lua, Caddyfile and data: the text files the AST check does not read."""
    candidates = [*text_files(ROOT / "static"), *(p for p in text_files(APP) if p.suffix != ".py")]
    files = [p for p in candidates if p not in MAY_LIST_PATHS]
    assert any(p.suffix == ".js" for p in files), "no scripts found under static/"
    lists = {
        str(p.relative_to(ROOT)): found
        for p in files
        if (found := script_path_lists(text := p.read_text("utf-8")) or [m[0] for m in LISTED_IN_TEXT.finditer(text)])
    }
    assert lists == {}


IMPORTERS = {"import_module", "__import__", "spec_from_file_location"}  # imports by name at run time


def imported_modules(path: Path) -> set[str]:
    """Modules `path` imports, by statement or at run time by name (`importlib.import_module("tests.x")`),
    and any folder it adds to `sys.path` (`sys.path.insert(0, "tests")`), written as that folder's module."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute | ast.Name):
            called = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
            on_path = (
                isinstance(node.func, ast.Attribute)
                and called in {"insert", "append", "extend"}
                and ast.unparse(node.func.value) == "sys.path"
            )
            if called in IMPORTERS or on_path:
                for arg in node.args:
                    for text in (n.value for n in ast.walk(arg) if isinstance(n, ast.Constant)):
                        if isinstance(text, str):
                            found.add(text.strip("/").replace("/", ".").removesuffix(".py"))
    return found


def test_the_import_finder_sees_imports_by_name_and_path_hacks(tmp_path: Path) -> None:
    source = tmp_path / "tool.py"
    source.write_text(
        'import importlib, sys\nfrom tests.fakes import GatedScorer\nimportlib.import_module("tests.waiting")\n'
        'sys.path.insert(0, str(ROOT / "tests"))\n__import__("app.engine.lane")\n'
    )
    assert imported_modules(source) == {"importlib", "sys", "tests.fakes", "tests.waiting", "tests", "app.engine.lane"}


def test_the_server_never_imports_the_measuring_side() -> None:
    """Floors read downward: kit/, bench/ and tools/ measure the lab and import app/, never the other way round."""
    leaning = {
        name: sorted(imported)
        for name in MODULES
        if (imported := {m for m in every_import(name) if m.split(".")[0] in {"kit", "bench", "tools", "tests"}})
    }
    assert leaning == {}


def test_the_client_kit_imports_no_benchmark_or_tool() -> None:
    """kit/ is the floor the benchmarks and tools stand on: what it needs is in app/ or in kit/ itself."""
    leaning = {
        str(p.relative_to(ROOT)): sorted(m for m in imported_modules(p) if m.split(".")[0] in {"bench", "tools"})
        for p in sorted((ROOT / "kit").rglob("*.py"))
    }
    assert {name: modules for name, modules in leaning.items() if modules} == {}


def test_nothing_in_app_kit_bench_tools_or_static_imports_a_test_module() -> None:
    sources = sorted(
        [*APP.rglob("*.py"), *(p for d in ("kit", "bench", "tools", "static") for p in (ROOT / d).rglob("*.py"))]
    )
    from_tests = {
        str(p.relative_to(ROOT)): sorted(m for m in imported_modules(p) if m == "tests" or m.startswith("tests."))
        for p in sources
    }
    assert {name: modules for name, modules in from_tests.items() if modules} == {}


PROGRAMS = ("app.box", "app.front", "app.prepare")  # the supervisor, the classroom front, model export


def test_the_server_never_imports_the_programs_around_it() -> None:
    """The box's supervisor and the front start the server and import from it; the server imports neither."""

    def in_program(module: str) -> bool:
        return any(module == program or module.startswith(f"{program}.") for program in PROGRAMS)

    upward = {name: sorted(filter(in_program, GRAPH[name])) for name in MODULES if not in_program(name)}
    assert {name: found for name, found in upward.items() if found} == {}
