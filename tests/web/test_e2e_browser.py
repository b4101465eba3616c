"""The whole product in a real browser against the full stack (issue 5's acceptance walk-through).

A live server in full-stack mode (PostgreSQL, Redis, two Celery worker processes, the ASGI
server) and headless Chromium: a group member logs in through the login page, builds a
2-cluster scenario in the builder, runs it, sees Gantt rectangles on the page *before* the run
has finished, finds the finished run in the gallery; a colleague of the same research group
opens it from a second browser context; an outsider is refused. Screenshots of the builder, the
live run and the gallery are kept in artifacts/screenshots/ as test artifacts.
"""

from __future__ import annotations

import json
import secrets

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow

SCREENSHOTS = ROOT / "artifacts" / "screenshots"
TIMEOUT_MS = 30_000


def screenshot(page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / name), full_page=True)


@pytest.fixture(scope="module")
def people(full_stack_site) -> dict[str, str]:
    """alice and bob in research group 'lab-e2e', eve in another group; name -> password.

    Made with the site's own admin command, as a group's administrator would."""
    suffix = secrets.token_hex(3)
    # Not containing the name: Django's similarity validator refused 'pw-eve-…' for 'eve-…' now and then.
    passwords = {name: f"Gantt-{secrets.token_hex(8)}" for name in ("alice", "bob", "eve")}
    users = {name: f"{name}-{suffix}" for name in passwords}
    full_stack_site.manage("gridweb_group", "create", f"lab-e2e-{suffix}")
    full_stack_site.manage("gridweb_group", "create", f"elsewhere-{suffix}")
    for name, group in (("alice", "lab-e2e"), ("bob", "lab-e2e"), ("eve", "elsewhere")):
        full_stack_site.manage("gridweb_group", "invite", f"{group}-{suffix}", users[name],
                               "--email", f"{name}@example.org", "--password", passwords[name])
    return {"users": users, "passwords": passwords}


def log_in(browser, site, people, name: str):
    """A new browser context logged in through the login page as ``name``."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.js_errors = errors
    page.goto(f"{site.base_url}/accounts/login/")
    page.fill("#login-form [name=username]", people["users"][name])
    page.fill("#login-form [name=password]", people["passwords"][name])
    page.click("#login-form button[type=submit]")
    page.wait_for_url(lambda url: "/accounts/login/" not in url)
    assert people["users"][name] in page.locator(".whoami").inner_text()
    return context, page


def field(page, path: str):
    return page.locator(f'[data-path="{path}"]')


def run_state(site, run_id: int) -> dict:
    return site.python_json(
        "import json\nfrom gridweb.runs.models import Run\n"
        f"run = Run.objects.get(pk={run_id})\n"
        "print(json.dumps({'status': run.status, 'segments': run.segments_count, 'error': run.error,"
        " 'visibility': run.visibility, 'owner': run.owner.username}))\n")


def test_build_run_watch_live_share_with_the_group_and_refuse_an_outsider(full_stack_site, browser, people):
    site = full_stack_site
    context, page = log_in(browser, site, people, "alice")
    try:
        # --- Build a 2-cluster scenario in the builder --------------------------------------
        page.goto(f"{site.base_url}/scenarios/new/")
        page.wait_for_selector('#builder[data-ready="1"]')
        page.click("#btn-add-cluster")
        page.click("#btn-add-cluster")
        field(page, "name").fill("e2e two clusters")
        field(page, "platform.clusters.0.processors").fill("32")
        field(page, "platform.clusters.1.processors").fill("64")
        field(page, "platform.clusters.1.scheduler.name").select_option("easy")
        page.click("#btn-add-stream")
        field(page, "workload.streams.0.target").select_option("c1")
        field(page, "workload.streams.0.arrival.target_load").fill("0.8")
        field(page, "workload.streams.0.size.kind").select_option("rsd")
        field(page, "workload.streams.0.size.high").fill("32")
        page.click("#btn-add-stream")
        field(page, "workload.streams.1.target").select_option("c2")
        field(page, "workload.streams.1.arrival.target_load").fill("0.8")
        # Enough replications after replication 0 (whose Gantt streams first) that the run is
        # still going while the page draws it.
        field(page, "run.replications").fill("60")
        field(page, "run.stop.completions").fill("20000")
        field(page, "meta.visibility").select_option("group")
        page.wait_for_function(
            "() => { const b = document.getElementById('builder');"
            " return !b.dataset.validating && b.dataset.validated && b.dataset.errorCount === '0'; }")
        screenshot(page, "e2e-builder.png")

        # --- Run it and see rectangles before it finishes ------------------------------------
        page.click("#btn-run")
        page.wait_for_url("**/runs/*/")
        run_id = int(page.locator("#run").get_attribute("data-run"))
        page.wait_for_function("() => window.gridwebGantt && gridwebGantt.segmentsCount() > 0", timeout=120_000)
        status_when_drawn = page.locator("#run").get_attribute("data-status")
        state_when_drawn = run_state(site, run_id)
        assert status_when_drawn in ("queued", "running"), status_when_drawn
        assert state_when_drawn["status"] == "running", state_when_drawn
        screenshot(page, "e2e-live-run.png")
        # When the run ends the page reloads itself (static/runs/run.js): the fresh page has the
        # done run's metrics, and its Gantt from segments.json.
        page.wait_for_selector("#metrics-table", timeout=240_000)
        page.wait_for_function("() => window.gridwebGantt && gridwebGantt.ready")
        assert page.locator("#run").get_attribute("data-status") == "done"
        final = run_state(site, run_id)
        assert final["status"] == "done", final["error"]
        assert final == {**final, "visibility": "group", "owner": people["users"]["alice"]}
        assert page.evaluate("gridwebGantt.segmentsCount()") == final["segments"]

        # --- The finished run is in the gallery -------------------------------------------------
        page.goto(f"{site.base_url}/gallery/")
        card = page.locator(f'#runs a[href="/runs/{run_id}/"]')
        assert card.count() >= 1
        assert "e2e two clusters" in page.locator("#runs").inner_text()
        screenshot(page, "e2e-gallery.png")
        assert page.js_errors == []
    finally:
        context.close()

    # --- A colleague in the same group opens it from a second browser context ---------------------
    context, page = log_in(browser, site, people, "bob")
    try:
        response = page.goto(f"{site.base_url}/runs/{run_id}/")
        assert response.status == 200
        page.wait_for_function("() => window.gridwebGantt && gridwebGantt.ready")
        page.wait_for_function(f"() => gridwebGantt.segmentsCount() === {final['segments']}")
        page.goto(f"{site.base_url}/gallery/")
        assert page.locator(f'#runs a[href="/runs/{run_id}/"]').count() >= 1
    finally:
        context.close()

    # --- An outsider is refused: no page, not in the gallery, no stream ---------------------------
    context, page = log_in(browser, site, people, "eve")
    try:
        response = page.goto(f"{site.base_url}/runs/{run_id}/")
        assert response.status == 404
        page.goto(f"{site.base_url}/gallery/")
        assert page.locator(f'a[href="/runs/{run_id}/"]').count() == 0
        closed = page.evaluate(
            """url => new Promise(resolve => {
                   const ws = new WebSocket(url);
                   ws.onmessage = () => resolve({message: true});
                   ws.onclose = event => resolve({code: event.code});
               })""",
            f"{site.ws_url}/ws/runs/{run_id}/")
        assert closed == {"code": 4404}, json.dumps(closed)  # as for a run that does not exist
    finally:
        context.close()
