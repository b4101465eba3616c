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


@pytest.fixture
def user(django_user_model):
    """Whom the shared ``builder`` page fixture logs in."""
    return django_user_model.objects.create_user("dana", password="pw-dana-123")


def test_pages_log_no_console_errors_and_the_username_leads_to_the_account_page(builder, live_server):
    """Every page asked for /favicon.ico and logged its 404 as a console error; the API token lives
    on the account page, which the header's user name now links to."""
    errors = []
    builder.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    for path in ("/", "/gallery/", "/scenarios/"):
        builder.goto(live_server.url + path)
        builder.wait_for_load_state("networkidle")
    assert errors == [] and builder.js_errors == []

    builder.locator("#nav-account").click()
    assert builder.url == live_server.url + "/accounts/me/"
    assert "API token" in builder.locator("main").inner_text()


def test_a_long_run_name_stays_inside_its_gallery_card(builder, live_server, user):
    """A sweep point's run is named '<sweep> [<dotted path>=<value>]': one long word that ran past
    the card's right edge."""
    from gridweb.runs.models import Run, Status
    from gridweb.sharing import Visibility

    name = "load sweep [workload.streams.0.arrival.target_load=0.8]"
    run = Run.objects.create(owner=user, name=name, visibility=Visibility.PUBLIC,
                             spec={"name": name}, status=Status.DONE)
    builder.goto(live_server.url + "/gallery/")
    card = builder.locator(f'article.run-card[data-run="{run.pk}"]')
    title = card.locator("h3 a")
    assert title.inner_text().replace("\n", "") == name
    card_box, title_box = card.bounding_box(), title.bounding_box()
    assert title_box["x"] + title_box["width"] <= card_box["x"] + card_box["width"]
    assert card.evaluate("e => e.scrollWidth <= e.clientWidth")

