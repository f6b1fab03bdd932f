"""The one memory cgroup reader on fake v1 and v2 folders: the box and the benchmarks read the same numbers."""

from pathlib import Path

import pytest

from app.box.cgroups import BoxCgroup
from app.inside.cgroup_memory import MemoryFiles, charged_bytes, write_memory_limit
from kit import memcap

MIB = 2**20


def fake_group(folder: Path, version: int, *, peak: bool = True) -> Path:
    """A memory group at 300 MiB used, 40 of them inactive page cache, 250 anonymous, 2 OOM kills, 5 cap hits."""
    folder.mkdir(parents=True, exist_ok=True)
    if version == 1:
        (folder / "memory.limit_in_bytes").write_text(f"{1200 * MIB}\n")
        (folder / "memory.usage_in_bytes").write_text(f"{300 * MIB}\n")
        (folder / "memory.stat").write_text(
            f"rss {200 * MIB}\ninactive_file {MIB}\ntotal_rss {250 * MIB}\ntotal_inactive_file {40 * MIB}\n"
        )
        (folder / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n")
        (folder / "memory.failcnt").write_text("5\n")
        if peak:
            (folder / "memory.max_usage_in_bytes").write_text(f"{900 * MIB}\n")
    else:
        (folder / "memory.max").write_text(f"{1200 * MIB}\n")
        (folder / "memory.current").write_text(f"{300 * MIB}\n")
        (folder / "memory.stat").write_text(f"anon {250 * MIB}\nfile {45 * MIB}\ninactive_file {40 * MIB}\n")
        (folder / "memory.events").write_text("low 0\nhigh 0\nmax 5\noom 2\noom_kill 2\noom_group_kill 0\n")
        if peak:
            (folder / "memory.peak").write_text(f"{900 * MIB}\n")
    return folder


@pytest.mark.parametrize("version", [1, 2])
def test_each_version_reads_usage_charge_anon_peak_kills_and_cap_hits(tmp_path: Path, version: int) -> None:
    files = MemoryFiles.at(fake_group(tmp_path / "g", version))
    assert files.version == version
    assert files.usage_bytes() == 300 * MIB
    assert files.charged_bytes() == 260 * MIB  # the inactive page cache is reclaimed first
    assert files.anon_bytes() == 250 * MIB  # v1's hierarchy total, not the group's own `rss`
    assert files.peak_bytes() == 900 * MIB
    assert files.oom_kills() == 2
    assert files.limit_hits() == 5


@pytest.mark.parametrize("version", [1, 2])
def test_the_cap_is_written_to_the_versions_own_file(tmp_path: Path, version: int) -> None:
    folder = fake_group(tmp_path / "g", version)
    MemoryFiles(folder, version).write_limit(800 * MIB)
    assert (folder / ("memory.limit_in_bytes" if version == 1 else "memory.max")).read_text() == str(800 * MIB)


def test_a_v2_kernel_without_memory_peak_reads_a_peak_of_zero(tmp_path: Path) -> None:
    assert MemoryFiles(fake_group(tmp_path / "g", 2, peak=False), 2).peak_bytes() == 0


@pytest.mark.parametrize("version", [1, 2])
def test_the_box_and_the_benchmark_read_the_same_numbers(
    tmp_path: Path, version: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    parent = tmp_path / "parent"
    monkeypatch.setattr(memcap, "parent_dirs", lambda: ({"memory": parent}, version))
    bench = memcap.MemoryCgroup(1200 * MIB, name="g")
    folder = fake_group(parent / "g", version)
    box = BoxCgroup(version, {"memory": folder})
    assert bench.folder == folder and bench.version == version
    assert (box.oom_kills(), bench.oom_kills(), bench.limit_hits()) == (2, 2, 5)
    assert charged_bytes(str(folder)) == bench.charged_bytes() == 260 * MIB
    write_memory_limit(folder, 700 * MIB)
    assert bench.limit_file.read_text() == str(700 * MIB)


def test_the_box_reads_nothing_where_there_is_no_memory_group(tmp_path: Path) -> None:
    assert BoxCgroup(2, {"cpu": tmp_path}).oom_kills() == 0
    assert BoxCgroup(2, {"memory": tmp_path / "gone"}).oom_kills() == 0
    assert charged_bytes(str(tmp_path / "gone")) is None
    assert charged_bytes(None) is None
