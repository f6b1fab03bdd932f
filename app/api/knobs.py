"""The instructor's knobs: everyone may read them, only the bearer of the box's instructor token may turn one."""

from typing import Annotated, Any

from fastapi import APIRouter, Header, Request
from pydantic import BaseModel, ConfigDict, Field, StrictFloat

from app.api.deps import get_lab
from app.contract.openapi import INPUT_ERRORS, answer, answers
from app.knobs.board import Change
from app.lab import Lab
from app.paths.registry import knob_names

router = APIRouter(prefix="/api", tags=["knobs"])


class KnobIn(BaseModel):
    """A knob's new value, within the bounds and on the step GET /api/knobs lists."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"value": 8}]})

    # Strict: "8", "8e0" and true are refused, not coerced; -0 is 0 (refused where 0 is out of bounds).
    value: StrictFloat = Field(
        allow_inf_nan=False,
        description="A JSON number (never a string or boolean): low, low + step, … up to high, as GET /api/knobs lists",
    )


def knobs_body(lab: Lab) -> dict[str, Any]:
    """The turnable knobs, each with its Korean name from the registry (the instructor's page shows it)."""
    board = lab.knobs
    names = knob_names(lab.specs)
    snap = board.snapshot()
    knobs = [
        {
            "setting": name,
            "name": names.get(name, name),
            "value": snap.values[name],
            "low": spec.low,
            "high": spec.high,
            "unit": spec.unit,
            "step": spec.step,  # values are low + a whole number of steps (bytes: 1 MiB)
            "changes": snap.changes[name],
        }
        for name, spec in board.specs.items()
    ]
    return {"version": snap.last.version if snap.last else 0, "last": change_body(snap.last), "knobs": knobs}


def change_body(change: Change | None) -> dict[str, Any] | None:
    if change is None:
        return None
    return {"version": change.version, "setting": change.setting, "old": change.old, "new": change.new, "at": change.at}


def bearer(authorization: str | None) -> str | None:
    scheme, _, token = (authorization or "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else None


@router.get("/knobs", summary="The knobs an instructor may turn, their live values and bounds")
async def knobs(request: Request) -> dict[str, Any]:
    return knobs_body(get_lab(request))


@router.put(
    "/knobs/{setting}",
    summary="Turn one knob (instructor only: Authorization: Bearer <the token the box printed>)",
    responses=answers(
        INPUT_ERRORS,
        answer(403, "No instructor token, or the wrong one: nothing changed"),
        answer(
            422,
            "No such knob here, or a value outside its bounds or between its steps (a memory cap: or under "
            "what the box uses)",
        ),
    ),
)
async def turn(
    setting: str,
    knob: KnobIn,
    request: Request,
    authorization: Annotated[str | None, Header(max_length=200)] = None,
) -> dict[str, Any]:
    """Applies at once to the path that owns it, is announced on every open page and kept across restarts."""
    lab = get_lab(request)
    lab.knobs.allowed(bearer(authorization))
    lab.knobs.turn(setting, knob.value)
    request.app.openapi_schema = None  # route summaries quote the live values ({seats}, …)
    return knobs_body(lab)
