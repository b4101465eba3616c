"""A reproduction in a real browser (headless Chromium, Django's live_server, the embedded worker):
a group member opens a paper's reproduction, sees its figures and its claims with verdicts,
starts a quick re-run and watches it to its end; an outsider cannot see a private one."""

from __future__ import annotations

import pytest
from django.test import Client

from gridweb.reproductions.execution import create_reproduction, execute_reproduction
from gridweb.reproductions.models import Reproduction
from gridweb.runs.execution import embedded_worker
from gridweb.runs.models import Status
from gridweb.sharing import Visibility
from tests.web.conftest import BROWSER_TIMEOUT_MS

pytestmark = pytest.mark.slow


@pytest.fixture
def user(transactional_db, carol):
    """The browser's user: carol, in alice's research group."""
    return carol


def test_open_a_reproduction_rerun_it_as_a_group_member_and_watch_it_finish(live_server, builder, alice, lab,
                                                                             bob, browser):
    shared = create_reproduction(alice, "koala-w50", quick=True, visibility=Visibility.GROUP, group=lab,
                                 dispatch_now=False)
    assert execute_reproduction(shared.pk) == Status.DONE
    shared.refresh_from_db()
    page = builder
    page.goto(f"{live_server.url}/reproductions/{shared.pk}/")
    assert "Mohamed's thesis" in page.locator("h1").inner_text()
    # the claims, each with its verdict, and the tally above them
    rows = page.locator("#claims tbody tr")
    assert rows.count() == len(shared.claims) > 0
    verdicts = page.locator("#claims .verdict").all_inner_texts()
    assert set(verdicts) <= {"PASS", "FAIL", "NOT REPRODUCIBLE"}
    assert page.locator("#rep-tally").inner_text().startswith(f"{verdicts.count('PASS')} of {len(verdicts)} claims pass")
    # the figures: the recipe's own Bokeh pages, drawn in their frames
    frames = page.locator(".reproduction-figure iframe")
    assert frames.count() == len(shared.figures) >= 4
    first = page.frame_locator(".reproduction-figure iframe").first
    first.locator(".bk-Figure, .bk-Column, .bk-DataTable, canvas").first.wait_for(timeout=BROWSER_TIMEOUT_MS)
    assert "python -m simengine reproduce koala-w50 --quick" in page.locator("#rep-command").inner_text()

    # carol re-runs it (quick, shared with the group) and watches it to its end
    page.select_option("#rerun-form [name=visibility]", "group")
    page.select_option("#rerun-form [name=group]", str(lab.pk))
    page.click("#rerun-button")
    page.wait_for_url(lambda url: f"/reproductions/{shared.pk}/" not in url and "/reproductions/" in url)
    rerun = Reproduction.objects.get(owner__username="carol")
    assert page.url.endswith(f"/reproductions/{rerun.pk}/")
    assert rerun.visibility == Visibility.GROUP and rerun.group == lab and rerun.quick
    page.locator("#rep-results:not([hidden]) #claims").wait_for(timeout=90_000)  # the page reloads when done
    assert page.locator("#rep-status").inner_text() == "done"
    assert page.locator("#claims tbody tr").count() == len(shared.claims)
    assert page.locator(".reproduction-figure iframe").count() == len(shared.figures)
    assert embedded_worker().wait_idle(30)
    assert page.js_errors == []

    # an outsider: alice's private reproduction is not there for bob
    private = Reproduction.objects.create(owner=alice, recipe="klein", name="private one",
                                          visibility=Visibility.PRIVATE)
    context = browser.new_context()
    try:
        client = Client()
        client.force_login(bob)
        context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value,
                              "url": live_server.url}])
        other = context.new_page()
        response = other.goto(f"{live_server.url}/reproductions/{private.pk}/")
        assert response.status == 404
        other.goto(f"{live_server.url}/reproductions/")
        assert f"/reproductions/{private.pk}/" not in other.content()
        assert f"/reproductions/{shared.pk}/" not in other.content()  # group-only: not for him either
    finally:
        context.close()
