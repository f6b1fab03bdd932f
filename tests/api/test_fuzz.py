"""Fuzz every operation from the lab's own OpenAPI document: never a 500, and the lane survives.

Bounded (a few dozen examples per operation) and against a fake scorer, so it runs in CI; `just fuzz`
(tools/fuzz_live.py) is the long form: 1,000 examples per operation over real HTTP on every store.
Cases it found are kept as ordinary tests in test_bad_input.py (the blank and overlong text and
the queue-time bounds it first caught as "schema-valid but refused" are documented now).

Not checked, on purpose: (1) whether every schema-valid request is accepted: some refusals
depend on the box, not the schema (a webhook URL when the operator set no LAB_WEBHOOK_SECRET,
or one that is not a public address), and they are clear 422s. A 405's `Allow` lists every
method of a path (app/contract/error_handlers.py unites the routes), so that check runs too.
"""

import tempfile
from typing import Any

import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis import Case
from schemathesis.specs.openapi.checks import positive_data_acceptance

from app.lab import Lab
from app.main import create_app
from app.paths.ticket_roles import Tickets
from app.settings import Settings
from tests.fakes import GatedScorer

# Tickets go to the default store kind (sqlite) in a folder removed when the run ends.
_data = tempfile.TemporaryDirectory(prefix="lab-fuzz-")
app = create_app(
    Settings(warmup=False, batch_window_s=0.001, job_store=f"sqlite:///{_data.name}/jobs.db"), GatedScorer(gated=False)
)
schema = schemathesis.openapi.from_asgi("/api/openapi.json", app)


@schema.parametrize()
# Derandomized: the same examples on every run, so CI is reproducible; no example database on disk.
@settings(max_examples=40, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
def test_api_never_answers_500_and_the_lane_lives(case: Case[Any]) -> None:
    response = case.call()
    assert response.status_code < 500 or response.status_code == 503, (response.status_code, response.text)
    case.validate_response(response, excluded_checks=[positive_data_acceptance])
    lab: Lab = app.state.lab
    assert lab.lane.alive and lab.path("tickets", Tickets).worker.alive
