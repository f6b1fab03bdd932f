"""Model preparation fails fast and clearly where the hub cannot be reached."""

import os
import subprocess
import sys

from kit.live import ROOT


def prepare(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.prepare", *args],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_real_without_hub_says_how_to_get_weights() -> None:
    result = prepare("real", HF_HUB_OFFLINE="1")
    assert result.returncode == 2
    assert "huggingface-cli download BAAI/bge-reranker-base" in result.stderr
    assert "just twin" in result.stderr
    assert "Traceback" not in result.stderr


def test_real_with_a_missing_snapshot_folder_is_a_clear_error() -> None:
    result = prepare("real", "--source", "/nonexistent/snapshot")
    assert result.returncode == 2
    assert "/nonexistent/snapshot" in result.stderr
    assert "Traceback" not in result.stderr


def test_help_lists_the_three_builds() -> None:
    result = prepare("--help")
    assert result.returncode == 0
    for command in ("real", "twin", "tiny"):
        assert command in result.stdout
