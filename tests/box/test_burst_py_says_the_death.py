"""burst.py says when a real box died under its burst, as the page does: its cause from /api/stats, how long until
it answered again, and which rows the death cut."""

from types import ModuleType

import httpx
import pytest

from tests.box.test_box_live import CAP, LONG_REVIEW, boxed
from tests.front_proxy import fronted
from tests.test_burst_cli import burst  # noqa: F401  (the fixture: burst.py imported as the students run it)

pytestmark = pytest.mark.slow


def test_burst_py_reads_the_real_boxs_death_from_its_stats(burst: ModuleType) -> None:  # noqa: F811
    with boxed(LAB_MEMORY_CAP_BYTES=str(CAP), LAB_BOX_SECONDS_PER_REVIEW="0") as box:
        before = burst.box_life(box.url)
        rows = burst.fire_burst(box.url, "naive", [f"{LONG_REVIEW} {i}" for i in range(50)], timeout_s=120)
        death = burst.look_for_death(box.url, before, rows)
        deaths = box.stats()["deaths"]
        assert httpx.get(f"{box.url}/health", timeout=10).status_code == 200  # what look_for_death waited for
    assert before == burst.BoxLife(0, None) and deaths == 1
    assert death is not None and (death.times, death.cause, death.total) == (1, "memory_cap", 1)
    cut = [row for row in rows if row.cut_by_death]
    assert death.cut == len(cut) >= 1 and all(row.status is None or row.status in (502, 504) for row in cut)
    assert death.back_after_s is not None and death.back_after_s > 0
    line = burst.death_line(death)
    assert line.startswith("상자가 죽었습니다 (메모리 상한) → ") and "실습 시작 뒤 1번 죽음" in line
    assert "상자가 죽어 끊김" in burst.table("naive", rows)


def test_through_the_front_the_deaths_502s_are_said_to_be_the_death(
    burst: ModuleType,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Through nginx the dead box's requests are 502s, not cut connections: burst.py still names the death."""
    monkeypatch.setattr(burst, "TLS_CONTEXT", None)
    burst.trust_any_certificate()  # the front's own CA, as `-k` does
    with boxed(LAB_MEMORY_CAP_BYTES=str(CAP), LAB_BOX_SECONDS_PER_REVIEW="0") as box, fronted(box.url) as front:
        before = burst.box_life(front.url)
        rows = burst.fire_burst(front.url, "naive", [f"{LONG_REVIEW} {i}" for i in range(12)], timeout_s=120)
        death = burst.look_for_death(front.url, before, rows)
        deaths = box.stats()["deaths"]
    assert before == burst.BoxLife(0, None) and deaths == 1
    assert {row.status for row in rows} <= {200, 502} and 502 in {row.status for row in rows}
    assert death is not None and (death.times, death.cause) == (1, "memory_cap")
    assert death.cut == sum(row.status == 502 for row in rows) and all(r.cut_by_death for r in rows if r.status == 502)
    assert burst.death_line(death).startswith("상자가 죽었습니다 (메모리 상한) → ")
