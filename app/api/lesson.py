"""The class on one screen: the instructor's view of every student's requests (/class), its record as JSON or CSV,
its one live socket, and the nickname a student gives on their page (docs/classroom.md, "The class view")."""

import asyncio
import contextlib
import time
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Header, Query, Request, WebSocket
from fastapi.responses import HTMLResponse, Response
from pydantic import BaseModel, ConfigDict, Field, StrictStr
from starlette.exceptions import HTTPException

from app.api.deps import get_lab
from app.api.knobs import bearer
from app.api.page import PRIVATE_PAGE, page_knobs, page_paths, templates
from app.contract import student
from app.contract.openapi import INPUT_ERRORS, answer, answers
from app.door.connections import TRY_AGAIN_LATER, ConnectionGuard
from app.errors import NoStudentKey, NotInstructor
from app.lab import Lab
from app.lesson.export import Copy, Wanted, csv_text, lesson_body
from app.lesson.feed import LessonFeed
from app.lesson.roster import MAX_NICKNAME_CHARS

router = APIRouter(tags=["class"])

GOING_AWAY = 1001  # the box is stopping: the view reconnects to the next incarnation
POLICY = 1008  # before the handshake is accepted: the client sees 403
OUTCOMES = Literal["served", "refused", "late", "gone", "error", "cut", "waiting"]


def feed_of(lab: Lab) -> LessonFeed:
    if lab.lesson is None:
        raise HTTPException(404, "The class view is off on this box (LAB_LESSON_RECORD=false).")
    return lab.lesson


def allowed(lab: Lab, token: str | None) -> bool:
    """The knobs' check (app/knobs/board.py): the lesson's instructor token, compared in constant time."""
    try:
        lab.knobs.allowed(token)
    except NotInstructor:
        return False
    return True


def instructor_only(lab: Lab, token: str | None) -> None:
    if not allowed(lab, token):
        raise NotInstructor("Only the instructor sees the class: send the token the box printed at start-up.")


class NicknameIn(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"name": "민지"}]})

    name: StrictStr = Field(
        max_length=200,  # the schema's own bound; the rule below says the nickname's
        description=f'At most {MAX_NICKNAME_CHARS} characters, no control or format characters; "" clears it',
    )


class NicknameOut(BaseModel):
    number: int | None = Field(description="학생 N: this student's place in order of first arrival (None: not yet)")
    name: str | None = Field(description="What the class view shows: the nickname, else 학생 N")
    nickname: str


def key_of(request: Request) -> str:
    key = request.cookies.get(student.COOKIE)
    if not student.valid(key):
        raise NoStudentKey("No `lab_student` cookie: open the page (/) first; it gives each student a key.")
    return str(key)


@router.get(
    "/api/class/me",
    summary="A student's own name on the class view (the page's cookie says who)",
    responses=answers(answer(400, "No lab_student cookie")),
)
async def my_name(request: Request) -> NicknameOut:
    found = feed_of(get_lab(request)).record.roster.get(key_of(request))
    if found is None:
        return NicknameOut(number=None, name=None, nickname="")
    return NicknameOut(number=found.number, name=found.name, nickname=found.nickname)


@router.put(
    "/api/class/me",
    summary="Give yourself a nickname on the class view (the page's cookie says who)",
    responses=answers(
        INPUT_ERRORS, answer(400, "No lab_student cookie"), answer(422, "Too long, or a control or format character")
    ),
)
async def rename(body: NicknameIn, request: Request) -> NicknameOut:
    renamed = feed_of(get_lab(request)).record.rename(key_of(request), body.name)
    return NicknameOut(number=renamed.number, name=renamed.name, nickname=renamed.nickname)


@router.get(
    "/api/class/requests",
    summary="Every request of the lesson (instructor only): JSON, or CSV with ?format=csv",
    responses=answers(answer(403, "No instructor token, or the wrong one"), answer(422, "A filter out of its bounds")),
)
async def lesson_requests(
    request: Request,
    format: Literal["json", "csv"] = "json",
    token: Annotated[str | None, Query(max_length=200, description="The instructor's token (or Authorization)")] = None,
    student: Annotated[str | None, Query(max_length=80, description="One student's key (or address:IP)")] = None,
    path: Annotated[str | None, Query(max_length=40, description="One path's name")] = None,
    outcome: OUTCOMES | None = None,
    since: Annotated[float | None, Query(allow_inf_nan=False, description="Arrived at or after (epoch s)")] = None,
    until: Annotated[float | None, Query(allow_inf_nan=False, description="Arrived before (epoch s)")] = None,
    authorization: Annotated[str | None, Header(max_length=200)] = None,
) -> Any:
    """One record per request: the student (`student`, its key, and `name`), path, status, outcome, error code and
    reason, arrival and answer (epoch s), Server-Timing's wait and infer (ms), ②'s held seat, ④'s ticket and its end."""
    lab = get_lab(request)
    instructor_only(lab, bearer(authorization) or token)
    feed = feed_of(lab)
    copy = Copy.of(feed.record)  # taken on the loop, written out on a thread
    wanted = Wanted(student, path, outcome, since, until)
    if format == "csv":
        text = await asyncio.to_thread(csv_text, copy, wanted)
        stamp = time.strftime("%Y%m%d-%H%M", time.localtime())
        disposition = f'attachment; filename="class-{stamp}.csv"'
        return Response(text, media_type="text/csv; charset=utf-8", headers={"Content-Disposition": disposition})
    cpu_s = feed.record.cpu_s + (feed.file.cpu_s if feed.file is not None else 0.0)
    return await asyncio.to_thread(lesson_body, copy, wanted, cpu_s)


@router.get("/class", response_class=HTMLResponse, include_in_schema=False)
async def class_page(request: Request, token: str | None = None) -> HTMLResponse:
    """The projector's view; only with the instructor's token (else 403, nothing shown)."""
    lab = get_lab(request)
    instructor_only(lab, token)
    feed_of(lab)
    specs = [path.spec for path in lab.paths.values()]
    context = {"lab_paths": page_paths(specs, lab.settings), "lab_knobs": page_knobs(specs)}
    return templates.TemplateResponse(request=request, name="class.html", context=context, headers=PRIVATE_PAGE)


@router.websocket("/api/class/live")
async def class_live(websocket: WebSocket, token: str | None = None) -> None:
    """The view's one live connection: the whole record, then each half second's changes. Takes a live seat."""
    lab: Lab | None = getattr(websocket.app.state, "lab", None)
    if lab is None or lab.lesson is None or not allowed(lab, token):
        await websocket.close(code=POLICY)
        return
    guard: ConnectionGuard = websocket.app.state.connections
    seat = guard.live_seat()
    await websocket.accept()
    if seat is None:
        await websocket.close(code=TRY_AGAIN_LATER, reason="too_many_connections")
        return
    follower = asyncio.create_task(follow(websocket, lab.lesson), name="class-live")
    try:
        while (await websocket.receive())["type"] != "websocket.disconnect":
            pass
    finally:
        seat.release()
        follower.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await follower


async def follow(websocket: WebSocket, feed: LessonFeed) -> None:
    with contextlib.suppress(Exception):  # the view left between two sends, or the server is closing it
        await feed.follow(websocket.send_text)
        await websocket.close(code=GOING_AWAY)
