"""The measuring side's one Server-Timing reader and peak-memory sampler, and the students' copy of the reader."""

import os
import threading

import psutil

from app.api.measured import naive_bursts
from bench.readme import BLOCK, README, rendered
from kit.measure import PeakRss, alone, server_timing, timing_s, tree
from tests.conftest import students_burst

HEADERS = [
    "wait;dur=12.5, infer;dur=980.1",
    "wait;dur=0.0, infer;dur=0.0",
    "infer;dur=3",
    'wait;desc="queue";dur=7, infer;dur=1e3',
    " wait ; dur=4 ,infer;dur=5",
    "wait;dur=x, infer;dur=2",
    "cache, wait;dur=1",
    "",
    None,
]


def test_server_timing_reads_each_duration_in_milliseconds() -> None:
    assert server_timing("wait;dur=12.5, infer;dur=980.1") == {"wait": 12.5, "infer": 980.1}
    assert server_timing('wait;desc="queue";dur=7') == {"wait": 7.0}
    assert server_timing("wait;dur=x, infer;dur=2") == {"infer": 2.0}
    assert server_timing("cache") == {} and server_timing(None) == {}
    assert timing_s("wait;dur=250, infer;dur=980", "infer") == 0.98
    assert timing_s("wait;dur=250", "infer") is None


def test_students_burst_py_reads_server_timing_as_the_shared_reader_does() -> None:
    burst = students_burst()
    for header in HEADERS:
        assert burst.parse_server_timing(header) == server_timing(header), header


def test_peak_rss_counts_memory_this_process_touched() -> None:
    before = psutil.Process().memory_info().rss
    ballast = bytearray(b"x" * (64 * 2**20))  # written, so resident
    with PeakRss(tree(os.getpid())) as rss:
        pass  # even a run shorter than one sampling interval is sampled once
    assert rss.peak >= before + 60 * 2**20
    assert len(ballast) == 64 * 2**20


def test_peak_rss_keeps_the_highest_of_each_other_reading_and_skips_one_that_fails() -> None:
    readings = [5, 9]  # then 3 for ever: the peak is the 9 in between
    third = threading.Event()

    def anon() -> int:
        if readings:
            return readings.pop(0)
        third.set()
        return 3

    def gone() -> int:
        raise OSError("the cgroup was removed")

    with PeakRss(alone(os.getpid()), every_s=0.001, also={"anon": anon, "gone": gone}) as rss:
        assert third.wait(timeout=10)
    assert rss.peaks == {"anon": 9, "gone": 0}
    assert rss.peak > 0


def test_the_readme_quotes_the_committed_bursts() -> None:
    measured = naive_bursts()
    assert measured is not None
    text = README.read_text(encoding="utf-8")
    assert BLOCK.search(text) is not None, "README.md lost its measured block"
    assert rendered(text, measured) == text, "README.md's measured sentence is stale: python -m bench.readme"
    assert measured.when in text and measured.host in text
