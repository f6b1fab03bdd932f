"""Measurement records as the page says them: when and on what, in Korean, with UTC and the CPU's brand as written."""

import json

from app.api.records_ko import host_ko, record_ko, when_ko
from app.inside.stand_in import measured_figure
from app.settings import PROJECT_ROOT

STAND_IN = (
    "2026-12-02 14:26-14:28 UTC, AMD EPYC (2 vCPUs, avx2), python -m bench.cliff --sizes 0 --tries 3 --no-stand-in "
    "plus the two burst runs before it: the memory cgroup's charge at rest, seed 886 MiB less lab 597 MiB = 289 MiB"
)


def test_a_record_is_said_by_its_date_its_times_in_utc_and_its_host() -> None:
    assert record_ko(STAND_IN) == "2026-12-02 14:26–14:28 UTC, 실습 서버(코어 2개, AMD EPYC)"
    assert when_ko("Measured from 2026-12-02 15:21 UTC on vm") == "2026-12-02 15:21 UTC"
    assert when_ko("2026-12-01T23:32:10") == "2026-12-01 23:32"  # no UTC where the record does not say it
    assert when_ko("no date here") == ""


def test_a_host_keeps_its_cpus_brand_in_latin_letters_and_says_only_what_the_record_says() -> None:
    assert host_ko("vm (2 CPUs, 24 GiB, x86_64, no GPU) (AMD EPYC), lab pinned to core 1") == (
        "실습 서버(코어 2개, AMD EPYC, 그래픽카드 없음)"
    )
    assert host_ko("vm (2 CPUs, 24 GiB, x86_64, no GPU)") == "실습 서버(코어 2개, 그래픽카드 없음)"
    assert host_ko("Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz") == "실습 서버(Intel Xeon)"
    assert host_ko("somewhere") == "실습 서버"


def test_the_committed_records_and_figures_say_no_transliterated_brand() -> None:
    said = [record_ko(measured_figure().measured)]
    for name in ("adaptive-curve.json", "batching-curve.json"):
        data = json.loads((PROJECT_ROOT / "static" / name).read_text(encoding="utf-8"))
        assert data["host_ko"] == host_ko(data["host"]), name  # derived from its English record, never by hand
        said.append(data["host_ko"])
    assert all("AMD EPYC" in words and "에이엠디" not in words and "에픽" not in words for words in said), said
