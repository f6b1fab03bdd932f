"""The Grafana dashboard: its shape, its metric names, and every query answered by a real Prometheus."""

import asyncio
import math
import os

import httpx
import pytest
from asgi_lifespan import LifespanManager
from prometheus_client.parser import text_string_to_metric_families

from app.main import create_app
from app.paths.registry import PATHS
from app.settings import Settings
from kit.dashboard import PanelQuery, all_panels, load_dashboard, panel_queries
from kit.live import live_server
from kit.prometheus import PrometheusServer, prometheus_binary, running_prometheus
from kit.traffic import BURST_SETTINGS, fire_bursts
from tests.fakes import GatedScorer

NAMES = [p.name for p in PATHS]
SIXTH_STEP_PANELS = ("처리 중", "대기", "거절", "기다린 시간", "배치 크기")


def exported_names() -> set[str]:
    """Sample names an app serves at /metrics (histograms as _bucket/_sum/_count), from its own registry."""

    async def scrape() -> str:
        app = create_app(Settings(warmup=False, job_store="memory://"), GatedScorer(gated=False))
        async with LifespanManager(app) as manager:
            transport = httpx.ASGITransport(app=manager.app)
            async with httpx.AsyncClient(transport=transport, base_url="http://lab") as client:
                return (await client.get("/metrics")).text

    text = asyncio.run(scrape())
    return {sample.name for family in text_string_to_metric_families(text) for sample in family.samples}


def test_dashboard_names_only_metrics_the_app_exports() -> None:
    queries = panel_queries()
    used = set().union(*(q.metric_names for q in queries))
    assert used, "the dashboard has no review_* queries"
    assert used - exported_names() == set()


def test_dashboard_has_the_sixth_step_row_and_variables() -> None:
    dashboard = load_dashboard()
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["path"]["includeAll"] and variables["path"]["allValue"] == ".*"
    # The paths come from Prometheus (the lab exports every registered path at 0), not a list typed here.
    assert variables["path"]["query"]["query"] == "label_values(review_requests_total, path)"
    panels = dashboard["panels"]
    rows = [i for i, p in enumerate(panels) if p["type"] == "row"]
    sixth = rows[[panels[i]["title"] for i in rows].index("6단계")]
    next_row = min((i for i in rows if i > sixth), default=len(panels))
    titles = [p["title"] for p in panels[sixth + 1 : next_row]]
    for wanted in SIXTH_STEP_PANELS:
        assert any(title.startswith(wanted) for title in titles), wanted
    for panel in all_panels(dashboard):
        if panel["type"] != "row":
            assert panel["datasource"]["uid"] == "${datasource}", panel["title"]


def test_every_query_substitutes_to_promql() -> None:
    for query in panel_queries():
        assert "$" not in query.promql, query


def require_prometheus() -> None:
    """Skipped only on a developer's machine without it; in CI a missing binary is a failure."""
    if prometheus_binary() is None:
        if os.environ.get("CI"):
            pytest.fail("prometheus is not installed; `just test` installs it via _system-deps")
        pytest.skip("prometheus is not installed (apt-get install prometheus)")


def finite_values(prom: PrometheusServer, query: PanelQuery) -> list[float]:
    return [s.value for s in prom.query(query.promql) if math.isfinite(s.value)]


# Counters that a burst on every path must have moved: each refusal reason, each close
# reason, cache hits and answers on every path, and the histograms' observations.
MUST_HAVE_MOVED = (
    'review_rejections_total{path="limited",reason="seats_full"}',
    'review_rejections_total{path="limited",reason="waited_too_long"}',
    'review_rejections_total{path="tickets",reason="job_queue_full"}',
    'review_batches_total{reason="full"}',
    'review_batches_total{reason="timer"}',
    'review_batches_total{reason="lane_free"}',
    'review_jobs{status="done"}',
    "review_batch_size_count",
    *(f'review_cache_hits_total{{path="{p}"}}' for p in NAMES),
    *(f'review_wait_seconds_count{{path="{p}"}}' for p in NAMES),
    *(f'review_inference_seconds_count{{path="{p}"}}' for p in NAMES),
    *(f'review_requests_total{{path="{p}"}}' for p in NAMES),
)


@pytest.mark.prometheus
@pytest.mark.slow
def test_every_dashboard_query_returns_data_from_a_real_prometheus() -> None:
    require_prometheus()
    with live_server(**BURST_SETTINGS) as lab, running_prometheus(lab.url.removeprefix("http://")) as prom:
        # A first scrape before any traffic: counters start from 0, so rate() counts the whole burst.
        prom.wait_until(prom.target_is_up, "the lab's /metrics scraped")
        report = asyncio.run(fire_bursts(lab.url))
        assert report.statuses["limited"][429] > 0 and report.statuses["limited"][503] > 0, report
        assert report.statuses["tickets"][429] > 0, report
        assert set(report.cache_hits) == set(NAMES), report
        assert {1, 3} <= set(report.batch_sizes), report

        prom.wait_until(
            lambda: prom.value("sum(review_requests_total)") == report.answered,
            f"all {report.answered} answers of the burst",
        )
        prom.wait_until(
            lambda: prom.value("max(review_in_flight) + max(review_waiting)") == 0,
            "every path back to 0 in flight and 0 waiting",
        )
        for series in MUST_HAVE_MOVED:
            assert prom.value(f"sum({series})") > 0, series
        # What the 경로 variable's label_values(review_requests_total, path) lists: the registry's paths.
        assert {s.labels["path"] for s in prom.query("group by (path) (review_requests_total)")} == set(NAMES)

        empty = [q for q in panel_queries() if not finite_values(prom, q)]
        assert empty == [], "dashboard queries without data:\n" + "\n".join(f"{q.panel}: {q.promql}" for q in empty)
