"""The same requests give the same statuses, headers and bodies as on 908157e (before the path
contract, the per-app collector and the error table), except the differences listed here on purpose."""

import json
from pathlib import Path
from typing import Any

from tests.api.replay import record

RECORDING = Path(__file__).with_name("replay_908157e.json")

# Issue 10: FastAPI's and Starlette's own error bodies became the one shape {"error", "detail"};
# a validation error's list moved under "fields", without echoing the input back (issue 13 #3).
NOW_IN_THE_ONE_SHAPE = {
    "missing text": "invalid_request",
    "extra field": "invalid_request",
    "text not a string": "invalid_request",
    "broken json": "invalid_request",
    "many events no id": "invalid_request",
    "not utf-8": "bad_request",
    "no such route": "not_found",
    "wrong method": "method_not_allowed",
    "wrong method on a ticket": "method_not_allowed",
}
# Starlette's bare phrases ("Not Found", "Method Not Allowed") became sentences naming the URL.
REWORDED = {"no such route", "wrong method", "wrong method on a ticket"}
# Issue 13 #10: a 405 on a ticket URL names every method the URL has, not the first route's.
ALLOW_NOW = {"wrong method on a ticket": "GET, DELETE"}
# Issue 14: series born at 0 for every reason and path, and the lane's busy seconds as a counter.
METRICS_ADDED = {
    'review_client_gone_total{path="batched"}',
    'review_client_gone_total{path="limited"}',
    'review_client_gone_total{path="naive"}',
    'review_client_gone_total{path="tickets"}',
    "review_lane_busy_seconds_total",
    'review_rejections_total{path="batched",reason="queue_too_long"}',
    'review_rejections_total{path="naive",reason="memory_would_not_fit"}',
    # Issue 11: ③'s batches also go when the lane frees.
    'review_batches_total{reason="lane_free"}',
    # Issue 9: the box's incarnation, uptime and deaths (a bare server is incarnation 1, no deaths).
    "review_box_incarnation",
    "review_box_uptime_seconds",
    'review_box_deaths{cause="memory_cap"}',
    'review_box_deaths{cause="other"}',
}
# /api/stats only gains keys: the busy seconds, and every refusal reason at 0.
STATS_ADDED = {("lane", "busy_s"), ("rejections", "batched"), ("rejections", "naive"), ("store", "problem")}
# Issue 9: /api/stats gains the box's section (incarnation, uptime, deaths).
STATS_ADDED |= {("box", k) for k in ("boxed", "incarnation", "uptime_s", "deaths", "memory_deaths", "last_death")}
# Issue 19: the box's speed loop (None outside the box).
STATS_ADDED |= {("box", "speed")}
# Issue 19: the memory the kernel counts against the cap (the cgroup's, else RSS), in MiB and % of the cap.
STATS_ADDED |= {("memory", k) for k in ("bytes", "source", "cap_bytes", "pct_of_cap")}
# Issue 19: what the box's one CPU runs (the lane's inference and every ① beside it).
STATS_ADDED |= {("cpu", k) for k in ("inferences", "lane", "naive")}
# Issue 12: the live stats socket's address, documented with the 426 a plain GET gets.
OPENAPI_ADDED = {"GET /api/stats/live"}
# Issue 10: a done ticket's result is {"topics": [...]}, as the handout shows, not the bare list.


# Issue 13 #7: the 409 for a reused Idempotency-Key no longer names the job that holds the key.
KEY_HOLDER_HIDDEN = {"keyed other body"}


def intended(name: str, body: Any) -> Any:
    """The old body with the intended changes above applied (each event of a stream too)."""
    if isinstance(body, list):
        return [intended(name, item) for item in body]
    if name == "model":  # issue 9: the sleeping knob is gone; the box reports how it holds the server
        body = {k: v for k, v in body.items() if k != "simulated_seconds_per_review"}
    if isinstance(body, dict) and isinstance(body.get("result"), list):
        body = body | {"result": {"topics": body["result"]}}
    if name in KEY_HOLDER_HIDDEN:
        body = body | {"detail": body["detail"].replace(" (job <id>);", ";")}
    return body


def leaves(body: Any, prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], Any]:
    if not isinstance(body, dict):
        return {prefix: body}
    flat: dict[tuple[str, ...], Any] = {}
    for key, value in body.items():
        flat |= leaves(value, (*prefix, key))
    return flat


def expected_error_body(before: dict[str, Any], code: str) -> dict[str, Any]:
    """The old body in the new shape: a string detail is kept; a list becomes `fields`."""
    detail = before["detail"]
    if isinstance(detail, str):
        return {"error": code, "detail": detail}
    return {"error": code, "fields": [{k: e[k] for k in ("loc", "msg", "type")} for e in detail]}


async def test_every_route_answers_as_it_did_on_908157e(tmp_path: Path) -> None:
    before: dict[str, Any] = json.loads(RECORDING.read_text(encoding="utf-8"))
    after = json.loads(json.dumps(await record(tmp_path)))
    assert sorted(after) == sorted(before)
    for name, old in before.items():
        new = after[name]
        assert new["status"] == old["status"], name
        assert new["headers"] == old["headers"] | ({"allow": ALLOW_NOW[name]} if name in ALLOW_NOW else {}), name
        if name in NOW_IN_THE_ONE_SHAPE:
            expected = expected_error_body(old["body"], NOW_IN_THE_ONE_SHAPE[name])
            assert {k: new["body"][k] for k in expected if k != "detail"} == {
                k: v for k, v in expected.items() if k != "detail"
            }, name
            assert isinstance(new["body"]["detail"], str) and new["body"]["detail"], name
            if "detail" in expected and name not in REWORDED:
                assert new["body"]["detail"] == expected["detail"], name
        elif name == "metrics":
            assert set(new["body"]) - set(old["body"]) == METRICS_ADDED
            assert set(old["body"]) <= set(new["body"])
        elif name == "openapi":
            assert sorted(set(new["body"]) - OPENAPI_ADDED) == old["body"]
        elif name == "stats":
            old_leaves, new_leaves = leaves(old["body"]), leaves(new["body"])
            assert {k: new_leaves.get(k) for k in old_leaves} == old_leaves
            assert {k[:2] for k in set(new_leaves) - set(old_leaves)} == STATS_ADDED
        elif name == "model":
            assert {k: v for k, v in new["body"].items() if k != "box"} == intended(name, old["body"])
            assert new["body"]["box"]["boxed"] is False and new["body"]["box"]["calibration"] is None
        else:
            assert new["body"] == intended(name, old["body"]), name
