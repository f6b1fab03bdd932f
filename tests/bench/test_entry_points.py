"""Every benchmark, experiment and tool with a command line still starts: it imports what it names and parses.

They run for minutes on a real box, so the suite never runs them whole; `--help` catches the rot a moved
module or a renamed helper leaves in code that only `python -m` lines in docs reach.
"""

import importlib
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = sorted(
    f"{path.parent.name}.{path.stem}"
    for folder in ("bench", "tools", "kit")
    for path in (ROOT / folder).glob("*.py")
    if "ArgumentParser(" in path.read_text(encoding="utf-8")
)


def test_the_commands_are_found() -> None:
    assert {"bench.adaptive", "bench.cliff", "bench.holds", "bench.peer", "kit.load", "tools.fuzz_live"} <= set(
        COMMANDS
    )


@pytest.mark.parametrize("module", COMMANDS)
def test_each_command_imports_and_answers_help(
    module: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", [module, "--help"])
    with pytest.raises(SystemExit) as stopped:
        importlib.import_module(module).main()
    assert stopped.value.code == 0
    assert "usage:" in capsys.readouterr().out
