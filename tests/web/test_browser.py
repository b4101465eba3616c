"""The home page in a real browser (headless Debian Chromium driven by Playwright)."""

import pytest

pytestmark = pytest.mark.slow


def test_home_page_renders_with_its_stylesheet(live_server, page):
    response = page.goto(live_server.url + "/")

    assert response is not None and response.status == 200
    assert page.title().startswith("GridWeb")
    assert page.locator("h1").inner_text() == "GridWeb"
    assert page.locator("#runtime-mode").inner_text() == "embedded"
    # site.css was served and applied: the header has its dark background.
    header_background = page.locator(".site-header").evaluate("e => getComputedStyle(e).backgroundColor")
    assert header_background == "rgb(29, 36, 48)"


def test_health_link_leads_to_a_healthy_report(live_server, page, transactional_db):
    page.goto(live_server.url + "/")
    page.get_by_role("link", name="health").click()

    assert page.url == live_server.url + "/healthz"
    assert '"status": "ok"' in page.locator("body").inner_text()
