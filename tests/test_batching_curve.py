"""③'s cost curves on the page: the committed measurement is served, complete, and each fit is its own."""

import json

import numpy as np

from app.settings import PROJECT_ROOT
from bench.batching import fit_line
from tests.conftest import LabClientFactory
from tests.fakes import GatedScorer

CURVE = PROJECT_ROOT / "static" / "batching-curve.json"


def test_committed_curves_are_both_models_over_batches_one_to_eight_with_non_negative_fits() -> None:
    data = json.loads(CURVE.read_text(encoding="utf-8"))
    assert data["measured"].startswith(data["date"]) and data["time_utc"] in data["measured"]
    assert data["host"] and data["host_ko"] and len(data["load"]["start"]) == len(data["load"]["end"]) == 3
    served = {c["model"]: c for c in data["curves"] if c["chunk_pairs"] > 0}
    assert set(served) == {"twin", "tiny"}  # the box's model, and the one where a per-call cost could show
    for curve in data["curves"]:
        points = curve["points"]
        for p in points:
            assert abs(p["per_review_s"] - p["seconds"] / p["n"]) < 1e-3
        fit = curve["fit"]
        assert fit["a_s"] >= 0 and fit["b_s"] >= 0  # a per-call cost below zero is not a cost
        assert fit == fit_line([p["n"] for p in points], [p["seconds"] for p in points])
    for curve in served.values():
        assert [p["n"] for p in curve["points"]] == list(range(1, 9))
    assert data["fit"] == served["twin"]["fit"]  # the box's model is the headline fit (peer bench's capacity)
    assert data["reference"]["seconds"] > 0  # the page scales by the box's speed over this


def test_a_negative_coefficient_is_clamped_and_the_other_refitted() -> None:
    # Padding makes a big batch cost more than linearly: plain least squares gives a < 0.
    sizes, seconds = [2, 4, 8], [2.2, 6.5, 18.6]
    assert np.polyfit(sizes, seconds, 1)[1] < 0
    fit = fit_line(sizes, seconds)
    assert fit["a_s"] == 0 and fit["b_s"] == round(float(np.dot(sizes, seconds) / np.dot(sizes, sizes)), 4)
    flat = fit_line([1, 2, 3], [1.0, 0.9, 0.8])  # cheaper per call as it grows: slope clamped to 0
    assert flat == {"a_s": 0.9, "b_s": 0.0, "r2": 0.0}
    assert fit_line([1, 2, 3], [1.0, 2.0, 3.0]) == {"a_s": 0.0, "b_s": 1.0, "r2": 1.0}


async def test_page_loads_the_curve_inside_the_batched_note(lab_client: LabClientFactory) -> None:
    async with lab_client(GatedScorer(gated=False)) as client:
        html = (await client.get("/")).text
        note = html[html.index('data-path-note="batched"') : html.index('data-path-note="tickets"')]
        assert 'id="batching-curve"' in note
        assert (await client.get("/static/js/batching.js")).status_code == 200
        served = (await client.get("/static/batching-curve.json")).json()
    assert served == json.loads(CURVE.read_text(encoding="utf-8"))
