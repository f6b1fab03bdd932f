"""③'s cost curve on the page: the committed measurement is served, complete, and its fit is its own."""

import json

import numpy as np

from app.settings import PROJECT_ROOT
from tests.conftest import LabClientFactory
from tests.fakes import GatedScorer

CURVE = PROJECT_ROOT / "static" / "batching-curve.json"


def test_committed_curve_covers_batches_one_to_eight_and_fits_its_own_points() -> None:
    data = json.loads(CURVE.read_text(encoding="utf-8"))
    assert data["measured"].startswith(data["date"])
    sizes = [(c["chunk_pairs"], [p["n"] for p in c["points"]]) for c in data["curves"]]
    assert sizes[0][1] == list(range(1, 9)) and sizes[0][0] > 0  # the served shape: sorted chunks
    assert sizes[1] == (0, [2, 4, 8])  # the whole batch padded
    for curve in data["curves"]:
        points = curve["points"]
        for p in points:
            assert abs(p["per_review_s"] - p["seconds"] / p["n"]) < 1e-3
        b, a = np.polyfit([p["n"] for p in points], [p["seconds"] for p in points], 1)
        assert abs(curve["fit"]["a_s"] - a) < 1e-3 and abs(curve["fit"]["b_s"] - b) < 1e-3
    assert data["fit"] == data["curves"][0]["fit"]  # the served packing is the headline fit


async def test_page_loads_the_curve_inside_the_batched_note(lab_client: LabClientFactory) -> None:
    async with lab_client(GatedScorer(gated=False)) as client:
        html = (await client.get("/")).text
        note = html[html.index('data-path-note="batched"') : html.index('data-path-note="tickets"')]
        assert 'id="batching-curve"' in note and "/static/batching-curve.js" in note
        assert (await client.get("/static/batching-curve.js")).status_code == 200
        served = (await client.get("/static/batching-curve.json")).json()
    assert served == json.loads(CURVE.read_text(encoding="utf-8"))
