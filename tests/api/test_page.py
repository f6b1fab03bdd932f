"""The burst page's HTML, its static files and the sample reviews it fires, served in-process."""

import json
import re
from pathlib import Path

from app.api.measured import naive_bursts
from app.api.page import STATIC_DIR, page_paths
from app.api.records_ko import host_ko, record_ko
from app.inside.stand_in import measured_figure
from app.paths.registry import PATHS
from app.settings import BoxState, Settings
from tests.conftest import LabClientFactory
from tests.fakes import GatedScorer


async def test_page_links_its_assets_and_the_api(lab_client: LabClientFactory) -> None:
    async with lab_client(GatedScorer(gated=False)) as client:
        page = await client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    html = page.text
    for needed in ("/static/burst.css", "/api/docs", "/api/stats", "/metrics"):
        assert needed in html
    # The page's JS is one module script; its modules import each other, no globals between them.
    assert re.findall(r"<script[^>]*\bsrc=\"/static/js/[^\"]+\"", html) == [
        '<script type="module" src="/static/js/app.js"'
    ]
    assert "발사" in html and "브라우저 대기" in html
    # Students copy this line from the page; it must name the box they are looking at.
    assert "curl -O http://lab/static/burst.py && python3 burst.py http://lab 50" in html


async def test_static_assets_are_served_without_a_build_step(lab_client: LabClientFactory) -> None:
    modules = sorted(STATIC_DIR.glob("js/*.js"))
    async with lab_client(GatedScorer(gated=False)) as client:
        scripts = {path.name: await client.get(f"/static/js/{path.name}") for path in modules}
        cli = await client.get("/static/burst.py")
        missing = await client.get("/static/nothing-here.js")
    assert "app.js" in scripts and "function followTicket" in scripts["tickets.js"].text
    for name, script in scripts.items():
        # Browsers refuse to run a module script served with any other type.
        assert script.status_code == 200 and script.headers["content-type"].startswith("text/javascript"), name
        imported = re.findall(r'^import .* from "\./([\w.]+)";$', script.text, flags=re.MULTILINE)
        assert set(imported) <= set(scripts), (name, imported)  # every import is a module that is served
        assert re.findall(r"\bwindow\.(?!addEventListener\b)\w+", script.text) == [], name  # no globals between them
    assert cli.status_code == 200 and "def fire_burst" in cli.text
    assert missing.status_code == 404


async def test_the_page_lists_its_paths_once_in_a_json_block(lab_client: LabClientFactory) -> None:
    async with lab_client(GatedScorer(gated=False)) as client:
        html = (await client.get("/")).text
        openapi = (await client.get("/api/openapi.json")).json()
    routes = {route for route, operations in openapi["paths"].items() if "post" in operations}
    block = re.search(r'<script type="application/json" id="lab-paths">(.*?)</script>', html, flags=re.DOTALL)
    assert block is not None
    listed = json.loads(block.group(1))
    assert listed == page_paths(PATHS, Settings())
    assert [p["name"] for p in listed] == [p.name for p in PATHS]
    assert [p["label"] for p in listed] == [p.label for p in PATHS]
    assert {p["route"] for p in listed} <= routes  # every route the page fires at is one the app serves
    assert [p["name"] for p in listed if p["answer"] == "ticket"] == ["tickets"]
    assert [p["blurb"] for p in listed][1] == "1개 + 대기석 4"  # filled from the settings


def test_no_script_but_the_block_names_the_paths() -> None:
    for path in STATIC_DIR.glob("js/*.js"):
        code = path.read_text(encoding="utf-8")
        named = {p.name for p in PATHS if re.search(rf"[\"'`]{p.name}[\"'`]", code)}
        assert named == set(), f"{path.name} names {named}: read them from paths.js (the #lab-paths block)"


async def test_samples_are_the_shipped_reviews(lab_client: LabClientFactory) -> None:
    shipped = json.loads(Settings().samples_file.read_text(encoding="utf-8"))
    async with lab_client(GatedScorer(gated=False)) as client:
        samples = (await client.get("/api/samples")).json()
    assert samples == shipped
    assert len({s["text"] for s in samples}) == len(samples)


async def test_the_naive_note_quotes_the_committed_bursts_with_date_and_host(lab_client: LabClientFactory) -> None:
    measured = naive_bursts()
    assert measured is not None, "docs/bench/bursts.json is committed and has ①'s bursts of 12 and 50"
    async with lab_client(GatedScorer(gated=False)) as client:
        html = (await client.get("/")).text
    note = html[html.index('data-path-note="naive"') : html.index('data-path-note="limited"')]
    died = (f"커널이 상자를 죽였고({measured.deaths}번)", f"{measured.served}개만") if measured.deaths else ()
    lived = () if measured.deaths else (f"{measured.fastest_s}초", f"{measured.peak_of_cap_pct} %")
    quoted = (measured.when, host_ko(measured.host), *died, *lived)
    for value in quoted:
        assert value in note, value
    assert measured.host not in note  # the English record stays in docs/bench/bursts.json


# Four Latin words or more in a row: an English sentence (a name such as "AMD EPYC", "UTC" or "box.stand_in" is fewer).
LATIN_SENTENCE = re.compile(r"[A-Za-z][\w.-]*(?:[\s,/()-]+[A-Za-z][\w.-]*){3,}")


def words(html: str) -> str:
    """What a reader sees of some HTML: its text without tags."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


async def test_the_naive_note_says_the_stand_ins_record_in_korean(lab_client: LabClientFactory) -> None:
    state = BoxState(memory_cap_bytes=1200 * 2**20, memory_mode="cgroup", stand_in_bytes=289 * 2**20)
    async with lab_client(GatedScorer(gated=False), box_state=state) as client:
        html = (await client.get("/")).text
        model = (await client.get("/api/model")).json()
    note = words(html[html.index('data-path-note="naive"') : html.index('data-path-note="limited"')])
    record = measured_figure().measured
    assert model["box"]["stand_in"]["measured"] == record  # the English record stays on /api/model
    assert "289 MiB" in note and f"{record_ko(record)}에서 잰 값" in note and "box.stand_in" in note
    assert "UTC" in note and "AMD EPYC" in note
    assert LATIN_SENTENCE.findall(note) == [], note


async def test_the_title_names_five_paths_the_handouts_four_and_the_fifth_beyond_it(
    lab_client: LabClientFactory,
) -> None:
    async with lab_client(GatedScorer(gated=False)) as client:
        html = (await client.get("/")).text
    title = words(html[html.index("<h1>") : html.index("</h1>")])
    assert "다섯 가지 방법" in title and "네 가지" in title and "⑤" in title, title


def test_no_benchmark_data_means_no_quoted_numbers(tmp_path: Path) -> None:
    assert naive_bursts(tmp_path / "missing.json") is None
    (tmp_path / "odd.json").write_text('{"header": "no stamp", "results": []}', encoding="utf-8")
    assert naive_bursts(tmp_path / "odd.json") is None
