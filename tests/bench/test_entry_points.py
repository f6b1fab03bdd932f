"""Every benchmark, experiment and tool with a command line still starts: it imports what it names and parses.

They run for minutes on a real box, so the suite never runs them whole; `--help` catches the rot a moved
module or a renamed helper leaves in code that only `python -m` lines in docs reach. Every module in tools/
earns its place the same way: it is a command (`python -m tools.X --help` answers) with a `just` recipe in a
group, or it goes (what it measured stays in docs/; a helper it needs lives in kit/).
"""

import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOOLS = sorted(f"tools.{path.stem}" for path in (ROOT / "tools").glob("*.py") if path.stem != "__init__")
COMMANDS = sorted(
    f"{path.parent.name}.{path.stem}"
    for folder in ("bench", "kit")
    for path in (ROOT / folder).glob("*.py")
    if "ArgumentParser(" in path.read_text(encoding="utf-8")
)


def test_the_commands_are_found() -> None:
    assert {"bench.adaptive", "bench.cliff", "bench.holds", "bench.peer", "kit.load"} <= set(COMMANDS)
    assert {"tools.fuzz_live", "tools.favicon", "tools.class_check"} <= set(TOOLS)


@pytest.mark.parametrize("module", COMMANDS)
def test_each_command_imports_and_answers_help(
    module: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", [module, "--help"])
    with pytest.raises(SystemExit) as stopped:
        importlib.import_module(module).main()
    assert stopped.value.code == 0
    assert "usage:" in capsys.readouterr().out


def recipes(justfile: str) -> dict[str, tuple[set[str], str]]:
    """Each recipe's name, the groups its attributes name, and its body."""
    found: dict[str, tuple[set[str], str]] = {}
    groups: set[str] = set()
    name = None
    for line in justfile.splitlines():
        if line.startswith("[group("):
            groups.add(line.split("'")[1])
        elif line.startswith("[") or not line.strip():
            continue
        elif (header := re.match(r"([a-z_][\w-]*)\b[^:=]*:(?!=)", line)) and not line.startswith(" "):
            name = header.group(1)
            found[name] = (groups, "")
            groups = set()
        elif line.startswith((" ", "\t")) and name is not None:
            found[name] = (found[name][0], found[name][1] + line.strip() + "\n")
    return found


RECIPES = recipes((ROOT / "justfile").read_text(encoding="utf-8"))


def test_the_recipe_reader_reads_groups_and_bodies() -> None:
    assert recipes("x := 'y'\n# doc\n[group('lab')]\nserve *ARGS: dep\n    python -m app.box\n") == {
        "serve": ({"lab"}, "python -m app.box\n")
    }
    assert RECIPES["serve"][0] == {"lab"} and "python -m app.box" in RECIPES["serve"][1]


@pytest.mark.parametrize("module", TOOLS)
def test_each_tool_answers_help_and_has_a_recipe_in_a_group(module: str) -> None:
    run = subprocess.run(
        [sys.executable, "-m", module, "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.startswith("usage:")
    running = {name for name, (groups, body) in RECIPES.items() if groups and re.search(rf"-m {module}\b", body)}
    assert running, f"no `just` recipe in a group runs {module}"
