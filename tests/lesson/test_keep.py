"""The lesson's file and feed with fakes: what is written comes back at the next start, within the bound; a write
never blocks the loop; each view gets the whole record, then each tick's changes, or the whole again if behind."""

import asyncio
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from app.lesson.entry import COLUMNS
from app.lesson.feed import KEPT_TEXTS, LessonFeed, open_feed
from app.lesson.keep import Batch, Kept, LessonFile
from app.lesson.record import LessonRecord
from app.settings import Settings
from tests.lesson.test_record import scope, start


def recorded(n: int, record: LessonRecord) -> None:
    for i in range(n):
        e = record.arrive(scope(f"{i:022d}"), "limited")
        record.answer_started(e, start(200, (b"server-timing", f"wait;dur={i}.0, infer;dur=9.0".encode())), scope())
        record.ended(e)


async def written(path: Path, record: LessonRecord, max_requests: int = 100, max_age_s: float = 3600) -> Kept:
    file = LessonFile(path, max_requests, max_age_s)
    await file.load()
    file.save(record.take(time.time()).batch())
    await asyncio.to_thread(file.close)  # waits for the write
    again = LessonFile(path, max_requests, max_age_s)
    kept = await again.load()
    await asyncio.to_thread(again.close)
    return kept


async def test_what_was_written_comes_back(tmp_path: Path) -> None:
    record = LessonRecord(max_requests=100, max_age_s=3600)
    record.restore(Kept([], [], []), None, time.time())
    recorded(3, record)
    record.rename(f"{1:022d}", "민지")
    kept = await written(tmp_path / "lesson.db", record)
    assert kept.entries == [e.row() for e in record.entries]
    assert sorted(kept.students) == sorted((s.key, s.number, s.nickname) for s in record.roster.all())
    assert [m[1] for m in kept.marks] == ["start"]


@pytest.mark.parametrize(("max_requests", "ids"), [(3, [3, 4, 5]), (10, [2, 3, 4, 5])])
async def test_the_file_keeps_the_last_requests_and_none_older_than_the_bound(
    tmp_path: Path, max_requests: int, ids: list[int]
) -> None:
    record = LessonRecord(max_requests=100, max_age_s=36_000)
    recorded(5, record)
    record.entries[0].arrived -= 7200  # the first came two hours ago
    kept = await written(tmp_path / "lesson.db", record, max_requests=max_requests, max_age_s=3600)
    assert [row[0] for row in kept.entries] == ids


async def test_a_save_while_a_write_runs_waits_for_the_next_and_is_not_lost(tmp_path: Path) -> None:
    file = LessonFile(tmp_path / "lesson.db", 100, 3600)
    await file.load()
    entered, go = threading.Event(), threading.Event()
    commit = file._commit

    def slow_commit(batch: Batch, now: float) -> None:
        entered.set()
        assert go.wait(30), "the test never let the write go"
        commit(batch, now)

    file._commit = slow_commit  # type: ignore[method-assign]
    record = LessonRecord(max_requests=100, max_age_s=3600)
    recorded(1, record)
    file.save(record.take(time.time()).batch())
    assert await asyncio.to_thread(entered.wait, 30)
    recorded(1, record)
    file.save(record.take(time.time()).batch())  # returns at once: the first write still runs
    go.set()
    await asyncio.to_thread(file.close)
    again = LessonFile(tmp_path / "lesson.db", 100, 3600)
    assert [row[0] for row in (await again.load()).entries] == [1, 2]
    await asyncio.to_thread(again.close)


async def test_a_file_that_cannot_be_made_leaves_the_record_in_memory(tmp_path: Path) -> None:
    (tmp_path / "not-a-folder").write_text("x")
    settings = Settings(lesson_file=tmp_path / "not-a-folder" / "lesson.db")
    feed = await open_feed(settings)
    assert feed is not None and feed.file is None
    await feed.stop()


class View:
    """A class view's socket: keeps what it was sent; its sends block while `held` is clear."""

    def __init__(self) -> None:
        self.texts: list[dict[str, Any]] = []
        self.held = asyncio.Event()
        self.held.set()
        self.got = asyncio.Event()
        self.sending = asyncio.Event()

    async def send(self, text: str) -> None:
        self.sending.set()
        await self.held.wait()
        self.texts.append(json.loads(text))
        self.got.set()

    async def next(self) -> dict[str, Any]:
        while not self.texts:
            self.got.clear()
            await asyncio.wait_for(self.got.wait(), 30)
        return self.texts.pop(0)


async def test_a_view_gets_the_whole_record_then_each_ticks_changes() -> None:
    record = LessonRecord(max_requests=100, max_age_s=3600)
    recorded(2, record)
    feed = LessonFeed(record, None)  # ticks by hand: no task
    feed.tick()
    view = View()
    following = asyncio.create_task(feed.follow(view.send))
    whole = await view.next()
    assert whole["kind"] == "whole" and [e["id"] for e in whole["entries"]] == [1, 2]
    assert whole["entries"][1]["wait_ms"] == 1.0 and whole["students"][f"{1:022d}"]["name"] == "학생 2"
    feed.tick()  # nothing changed: nothing sent
    recorded(1, record)
    record.rename(f"{0:022d}", "민지")
    feed.tick()
    delta = await view.next()
    assert delta["kind"] == "delta" and [e["id"] for e in delta["entries"]] == [3]
    assert delta["students"] == {f"{0:022d}": {"number": 1, "name": "민지", "nickname": "민지"}}
    await feed.stop()
    await asyncio.wait_for(following, 30)  # a stopped feed ends every view


@pytest.mark.parametrize("ticks", [KEPT_TEXTS - 1, KEPT_TEXTS + 2])
async def test_a_view_behind_the_kept_texts_gets_the_whole_record_again(ticks: int) -> None:
    record = LessonRecord(max_requests=100, max_age_s=3600)
    feed = LessonFeed(record, None)
    view = View()
    following = asyncio.create_task(feed.follow(view.send))
    assert (await view.next())["kind"] == "whole"
    view.held.clear()
    view.sending.clear()
    recorded(1, record)
    feed.tick()
    await asyncio.wait_for(view.sending.wait(), 30)  # the view took the first delta and is stuck sending it
    for _ in range(ticks):
        recorded(1, record)
        feed.tick()
    view.held.set()
    first = await view.next()
    assert first["kind"] == "delta"
    second = await view.next()
    assert second["kind"] == ("delta" if ticks < KEPT_TEXTS else "whole")
    await feed.stop()
    await asyncio.wait_for(following, 30)


async def test_views_that_open_together_share_one_build_of_the_whole_record() -> None:
    record = LessonRecord(max_requests=100, max_age_s=3600)
    recorded(3, record)
    feed = LessonFeed(record, None, every_s=3600)  # one tick for the whole test
    feed.tick()
    built: list[float] = []
    whole = feed.whole

    def counted(now: float) -> dict[str, Any]:
        built.append(now)
        return whole(now)

    feed.whole = counted  # type: ignore[method-assign]
    views = [View(), View()]
    following = [asyncio.create_task(feed.follow(v.send)) for v in views]
    for v in views:
        assert [e["id"] for e in (await v.next())["entries"]] == [1, 2, 3]
    assert len(built) == 1  # after a death, the class's views reconnect at once: the box builds it once
    await feed.stop()
    await asyncio.gather(*following)


def journals(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".journal-" in p.name)


def killed(file: LessonFile) -> None:
    """The process dies: no close, no last write; its descriptors go with it."""
    file._thread.shutdown(wait=True)  # a write already handed over has run (or would have been lost with the box)
    if file._journal is not None:
        os.close(file._journal)


async def test_what_changed_after_the_last_write_comes_back_from_the_journal_after_a_kill(tmp_path: Path) -> None:
    file = LessonFile(tmp_path / "lesson.db", 100, 3600)
    await file.load()
    record = LessonRecord(max_requests=100, max_age_s=3600)
    record.journal = file.note
    record.restore(Kept([], [], []), None, time.time())
    recorded(2, record)
    file.save(record.take(time.time()).batch())  # the tick: written, its journal removed once committed
    answered = record.arrive(scope(f"{7:022d}"), "limited")  # then, before the next tick: an answer ...
    record.answer_started(answered, start(200, (b"server-timing", b"wait;dur=3.0, infer;dur=9.0")), scope())
    held = record.arrive(scope(f"{8:022d}"), "naive")  # ... and an arrival
    record.rename(f"{8:022d}", "준")
    killed(file)
    with (tmp_path / f"lesson.db.journal-{file._generation}").open("ab") as journal:
        journal.write(b'["e",[99,"x"')  # a line the kill cut short

    again = LessonFile(tmp_path / "lesson.db", 100, 3600)
    kept = await again.load()
    rows = {row[0]: dict(zip(COLUMNS, row, strict=True)) for row in kept.entries}
    assert sorted(rows) == [1, 2, answered.id, held.id]
    assert (rows[answered.id]["status"], rows[answered.id]["wait_ms"], rows[answered.id]["infer_ms"]) == (200, 3.0, 9.0)
    assert rows[held.id]["status"] is None  # the next incarnation cuts it
    assert (f"{8:022d}", 4, "준") in kept.students and [m[1] for m in kept.marks] == ["start"]
    assert journals(tmp_path) == [f"lesson.db.journal-{again._generation}"]  # replayed and removed; the next one
    await asyncio.to_thread(again.close)
    assert journals(tmp_path) == []  # closed: everything is in the file


async def test_a_write_removes_the_journal_it_commits_and_a_quiet_tick_writes_nothing(tmp_path: Path) -> None:
    file = LessonFile(tmp_path / "lesson.db", 100, 3600)
    await file.load()
    record = LessonRecord(max_requests=100, max_age_s=3600)
    record.journal = file.note
    recorded(1, record)
    first = file.journal_path(file._generation)
    assert first.read_bytes().count(b"\n") == 4  # the student, the arrival, the answer's head, its end
    file.save(record.take(time.time()).batch())
    assert file._writing is not None
    await asyncio.wrap_future(file._writing)
    assert not first.exists()
    quiet = file._generation
    file.save(record.take(time.time()).batch())
    assert file._generation == quiet and file.journal_path(quiet).read_bytes() == b""
    await asyncio.to_thread(file.close)
