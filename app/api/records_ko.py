"""Measurement records in the page's Korean: the records stay in English where they are kept (/api/model, the
JSON files under docs/bench/ and static/), and a student reads when and on what they were measured in Korean.

Dates and times stay as written ("2026-12-02 14:26–14:28 UTC", UTC kept as UTC) and the CPU's brand stays in
Latin letters ("AMD EPYC"), never transliterated; the rest of a record (commands, versions, how it was read)
is for /api/model and the docs, not the page.
"""

import re

# Brand words in a CPU's name, kept as written: a student searches for "AMD EPYC", not its transliteration.
CPU_BRANDS = ("AMD", "EPYC", "Ryzen", "Threadripper", "Intel", "Xeon", "Core", "Apple", "Ampere", "Graviton")
WHEN = re.compile(
    r"(?P<date>\d{4}-\d\d-\d\d)(?:[ T](?P<start>\d\d:\d\d)(?:\s*[-–]\s*(?P<end>\d\d:\d\d))?)?(?P<utc> UTC)?"
)
CORES = re.compile(r"(\d+) v?CPUs?\b")


def when_ko(record: str) -> str:
    """The record's first date, with its time or time span and "UTC" if it says so: `2026-12-02 14:26–14:28 UTC`."""
    found = WHEN.search(record)
    if found is None:
        return ""
    times = "–".join(t for t in (found["start"], found["end"]) if t)
    return " ".join(p for p in (found["date"], times, "UTC" if found["utc"] else "") if p)


def host_ko(host: str) -> str:
    """A host in Korean words, from a record's host ("vm (2 CPUs, 24 GiB, x86_64, no GPU), AMD EPYC"):
    `실습 서버(코어 2개, AMD EPYC, 그래픽카드 없음)`; only what the record says."""
    cores = CORES.search(host)
    words = re.split(r"[\s(),]+", host.replace("(R)", " ").replace("(TM)", " "))
    brand = " ".join(w for w in words if w in CPU_BRANDS)
    gpu = "그래픽카드 없음" if re.search(r"\bno GPU\b", host) else ""
    parts = [f"코어 {cores[1]}개" if cores else "", brand, gpu]
    shown = ", ".join(p for p in parts if p)
    return f"실습 서버({shown})" if shown else "실습 서버"


def record_ko(record: str) -> str:
    """When and on what a record was measured: `2026-12-02 14:26–14:28 UTC, 실습 서버(코어 2개, AMD EPYC)`."""
    return ", ".join(p for p in (when_ko(record), host_ko(record)) if p)
