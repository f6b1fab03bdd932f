"""The lesson's record in memory: what one request's entry reads from its answer, the bound, the students, the marks,
and what a new incarnation makes of the record an earlier one left (requests cut by a death)."""

import time

import pytest

from app.errors import InvalidNickname
from app.knobs.board import Change
from app.lesson.entry import COLUMNS, Entry, outcome, student_of, timing
from app.lesson.keep import Kept
from app.lesson.record import LessonRecord
from app.lesson.roster import MAX_NICKNAME_CHARS, check_nickname
from app.settings import BoxState

KEY = "s" * 22


def scope(
    key: str | None = KEY, client: str = "192.0.2.7", state: dict[str, object] | None = None
) -> dict[str, object]:
    headers = [(b"content-type", b"application/json")]
    if key is not None:
        headers.append((b"cookie", f"theme=dark; lab_student={key}".encode()))
    return {"type": "http", "headers": headers, "client": (client, 5000), "state": state or {}}


def start(status: int, *headers: tuple[bytes, bytes]) -> dict[str, object]:
    return {"type": "http.response.start", "status": status, "headers": list(headers)}


def test_server_timing_is_read_as_the_page_reads_it() -> None:
    assert timing(b"wait;dur=12.5, infer;dur=980.1") == (12.5, 980.1)
    assert timing(b"wait;dur=3.0") == (3.0, None)  # a refusal has no infer
    assert timing(b"garbage, infer;dur=x") == (None, None)


def test_the_student_is_the_cookie_key_else_the_address() -> None:
    assert student_of(scope()) == KEY
    assert student_of(scope(key=None)) == "address:192.0.2.7"
    assert student_of(scope(key="short")) == "address:192.0.2.7"  # not a key the box gives: not trusted as one


def test_an_entry_reads_status_timing_hold_ticket_and_the_noted_reason() -> None:
    e = Entry(1, KEY, "limited", 100.0, 1)
    e.answer_started(
        start(200, (b"Server-Timing", b"wait;dur=5.0, infer;dur=900.0"), (b"seat-hold-result", b"seated")), scope()
    )
    assert (e.status, e.wait_ms, e.infer_ms, e.hold, outcome(e)) == (200, 5.0, 900.0, "seated", "served")

    refused = Entry(2, KEY, "limited", 100.0, 1)
    noted = scope(state={"lab_error": ("box_full", "seats_full")})
    refused.answer_started(start(429, (b"server-timing", b"wait;dur=2.0")), noted)
    assert (refused.error, refused.reason, refused.wait_ms, outcome(refused)) == (
        "box_full",
        "seats_full",
        2.0,
        "refused",
    )

    late = Entry(3, KEY, "limited", 100.0, 1)
    late.answer_started(start(503), scope(state={"lab_error": ("waited_too_long", "waited_too_long")}))
    assert outcome(late) == "late"

    ticket = Entry(4, KEY, "tickets", 100.0, 1)
    ticket.answer_started(start(202, (b"location", b"/api/queue/jobs/abc123")), scope())
    assert ticket.ticket == "abc123" and outcome(ticket) == "served"

    too_big = Entry(5, KEY, "limited", 100.0, 1)
    too_big.answer_started(start(413), scope())  # answered by the middleware itself: the status's own code
    assert (too_big.error, outcome(too_big)) == ("body_too_large", "error")


def test_a_request_the_client_left_is_gone_and_one_unanswered_is_waiting() -> None:
    record = LessonRecord(max_requests=10, max_age_s=60)
    e = record.arrive(scope(), "limited")
    assert outcome(e) == "waiting"
    record.ended(e)  # no answer went out: the client hung up first
    assert (e.status, e.error, outcome(e)) == (499, "client_gone", "gone")


def test_students_are_numbered_by_first_arrival_and_keep_a_nickname() -> None:
    record = LessonRecord(max_requests=10, max_age_s=60)
    for key in ("b" * 22, "a" * 22, "b" * 22):
        record.arrive(scope(key), "limited")
    record.arrive(scope(key=None, client="198.51.100.1"), "batched")
    names = {s.key: s.name for s in record.roster.all()}
    assert names == {"b" * 22: "학생 1", "a" * 22: "학생 2", "address:198.51.100.1": "학생 3"}
    assert record.rename("a" * 22, "  민지  ").name == "민지"
    assert record.rename("a" * 22, "").name == "학생 2"  # "" clears it


@pytest.mark.parametrize(
    "bad", ["a\x00b", "탭\t", "줄\n바꿈", "\u202e거꾸로", "x" * (MAX_NICKNAME_CHARS + 1), "\u2028"]
)
def test_a_nickname_with_a_control_or_format_character_or_too_long_is_refused(bad: str) -> None:
    with pytest.raises(InvalidNickname):
        check_nickname(bad)


def test_the_record_keeps_the_last_requests_and_none_older_than_the_bound() -> None:
    record = LessonRecord(max_requests=3, max_age_s=60)
    made = [record.arrive(scope(), "limited") for _ in range(5)]
    assert [e.id for e in record.entries] == [3, 4, 5]
    made[-1].arrived -= 120  # as if it came two minutes ago
    record.take(now=made[0].arrived + 1)
    assert [e.id for e in record.entries] == [3, 4, 5]  # only the oldest end is trimmed by age...
    record.entries[0].arrived -= 120
    record.take(now=made[0].arrived + 1)
    assert [e.id for e in record.entries] == [4, 5]


def test_each_change_is_taken_once_with_its_version() -> None:
    record = LessonRecord(max_requests=10, max_age_s=60)
    e = record.arrive(scope(), "limited")
    e.answer_started(start(200), scope())
    record.ended(e)
    taken = record.take(now=e.arrived)
    assert taken.entries == [e] and e.version == record.version == 2
    assert [s.key for s in taken.students] == [KEY]
    assert record.take(now=e.arrived).entries == []


def test_a_knob_turn_and_a_ticket_end_are_recorded() -> None:
    record = LessonRecord(max_requests=10, max_age_s=60)
    record.knob_turned(Change(1, "limited_seats", 4, 8, 123.0))
    assert [m.body() for m in record.marks] == [
        {"id": 1, "kind": "knob", "at": 123.0, "setting": "limited_seats", "old": 4, "new": 8}
    ]
    e = record.arrive(scope(), "tickets")
    e.answer_started(start(202, (b"location", b"/api/queue/jobs/j1")), scope())
    record.ended(e)
    record.ticket_done("j1", finished_at=e.arrived + 3, waited_ms=1500.0, infer_ms=900.0)
    assert (e.ticket_status, e.ticket_end, e.wait_ms, e.infer_ms) == ("done", e.arrived + 3, 1500.0, 900.0)


def test_a_new_incarnation_marks_the_death_and_cuts_what_the_dead_one_held() -> None:
    before = LessonRecord(max_requests=10, max_age_s=3600, incarnation=1)
    began = time.time()
    before.restore(Kept([], [], []), None, now=began)
    answered = before.arrive(scope(), "limited")
    answered.answer_started(start(200), scope())
    before.ended(answered)
    held = before.arrive(scope("c" * 22), "naive")  # in the box when it died
    before.rename("c" * 22, "준")
    kept = before.take(now=held.arrived).batch()
    marks = [m.row() for m in before.marks]

    died_at = held.arrived + 2
    state = BoxState(incarnation=2, deaths=1, last_death_cause="memory_cap", last_death_at=died_at)
    after = LessonRecord(max_requests=10, max_age_s=3600, incarnation=2)
    after.restore(Kept(kept.entries, kept.students, marks), state, now=died_at + 5)
    by_id = {e.id: e for e in after.entries}
    assert outcome(by_id[answered.id]) == "served"
    assert (outcome(by_id[held.id]), by_id[held.id].answered) == ("cut", died_at)
    assert [(m.kind, m.at) for m in after.marks] == [("start", began), ("death", died_at), ("start", died_at + 5)]
    assert after.marks[1].detail["cause"] == "memory_cap" and after.marks[2].detail["incarnation"] == 2
    assert after.roster.get("c" * 22) is not None and after.roster.get("c" * 22).name == "준"  # type: ignore[union-attr]
    assert after.arrive(scope("d" * 22), "limited").id == held.id + 1  # ids go on
    assert after.roster.get("d" * 22).number == 3  # type: ignore[union-attr]


def test_each_change_is_noted_as_it_happens_the_answer_before_its_head_goes_out() -> None:
    record = LessonRecord(max_requests=10, max_age_s=60)
    noted: list[tuple[str, tuple[object, ...]]] = []
    record.journal = lambda kind, row: noted.append((kind, row))
    e = record.arrive(scope(), "limited")
    assert noted == [("s", (KEY, 1, "")), ("e", e.row())] and e.status is None  # a new student, then the arrival
    record.answer_started(e, start(200, (b"server-timing", b"wait;dur=5.0, infer;dur=900.0")), scope())
    kind, row = noted[-1]
    assert kind == "e" and dict(zip(COLUMNS, row, strict=True))["status"] == 200  # what the student is about to see
    assert dict(zip(COLUMNS, row, strict=True))["answered"] is not None
    record.ended(e)
    record.rename(KEY, "민지")
    record.knob_turned(Change(1, "limited_seats", 4, 8, 123.0))
    assert [k for k, _ in noted] == ["s", "e", "e", "e", "s", "m"]
    assert noted[-2] == ("s", (KEY, 1, "민지")) and noted[-1][1][:3] == (1, "knob", 123.0)


def test_a_nickname_in_a_tick_with_no_request_is_a_new_version_for_the_live_views() -> None:
    """The feed sends a tick's changes only when the version moved: a student naming themselves before their first
    request was taken and dropped, and the class view showed their key for the rest of the lesson."""
    record = LessonRecord(max_requests=10, max_age_s=60)
    record.take(time.time())
    before = record.version
    record.rename("a" * 22, "민지")
    changes = record.take(time.time())
    assert [s.name for s in changes.students] == ["민지"] and record.version == before + 1
    assert record.take(time.time()).students == [] and record.version == before + 1  # nothing new: no version
