"""Issue 34's acceptance test on the real stack: two web processes sharing one Redis (as a group's
server behind a balancer, or several daphne workers, runs them), 200 concurrent wrong-password
logins to /api/token/ and /accounts/login/ with a random X-Forwarded-For each. The passwords the
site checked -- the ``failed login`` lines its processes log, one per password refused, and the
answers saying the password was wrong -- are no more than the username's budget; then the real
user's right password works once the documented back-off has passed."""

from __future__ import annotations

import http.cookiejar
import json
import random
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.conftest import _free_port, _wait_until, full_stack

BUDGET = 5
BACKOFF = 10
PASSWORD = "Real-Users-Pass-31"


@pytest.fixture(scope="module")
def site(test_database_url, test_redis_url, tmp_path_factory):
    from tests.conftest import E2E_REDIS_DB

    redis_url = test_redis_url.rsplit("/", 1)[0] + f"/{E2E_REDIS_DB}"
    with full_stack(test_database_url, redis_url, tmp_path_factory, name="gridweb_e2e_throttle",
                    GRIDWEB_LOGIN_FAILURES_PER_USER=str(BUDGET), GRIDWEB_LOGIN_BACKOFF_SECONDS=str(BACKOFF)) as site:
        port = _free_port()
        site.start("server2", [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"])
        site.second_url = f"http://127.0.0.1:{port}"
        _wait_until(lambda: fetch(urllib.request.build_opener(), f"{site.second_url}/healthz")[0] == 200, 120,
                    "the second web process", site)
        site.python_json("from django.contrib.auth.models import User; "
                         f"User.objects.create_user('tess', password={PASSWORD!r}); print('{{}}')")
        yield site


def fetch(opener, url: str, json_body: dict | None = None, form: dict | None = None,
          headers: dict | None = None) -> tuple[int, str, dict]:
    """(status, body, headers) of a GET, or of a POST of ``json_body`` or ``form``."""
    data, headers = None, dict(headers or {})
    if json_body is not None:
        data, headers["Content-Type"] = json.dumps(json_body).encode(), "application/json"
    elif form is not None:
        data = urllib.parse.urlencode(form).encode()
    try:
        with opener.open(urllib.request.Request(url, data=data, headers=headers), timeout=120) as answer:
            return answer.status, answer.read().decode(), dict(answer.headers)
    except urllib.error.HTTPError as answer:
        return answer.code, answer.read().decode(), dict(answer.headers)


def spoofed() -> dict[str, str]:
    return {"X-Forwarded-For": ".".join(str(random.randint(1, 254)) for _ in range(4))}


def attempt(base_url: str, i: int) -> str:
    """One wrong-password login; 'checked' when the answer says the password was wrong."""
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    if i % 2:
        code, _, _ = fetch(browser, f"{base_url}/api/token/", {"username": "tess", "password": f"guess-{i}"},
                           headers=spoofed())
        return {400: "checked", 429: "refused"}.get(code, str(code))
    _, page, _ = fetch(browser, f"{base_url}/accounts/login/", headers=spoofed())
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    code, text, _ = fetch(browser, f"{base_url}/accounts/login/", headers={**spoofed(), "Referer": f"{base_url}/"},
                          form={"username": "tess", "password": f"guess-{i}", "csrfmiddlewaretoken": csrf})
    if "too many failed logins" in text:
        return "refused"
    return "checked" if "correct username and password" in text else str(code)


def windows_opened(seconds: float) -> int:
    """How many of a username's windows can have opened in ``seconds`` of guessing: the first lasts
    BACKOFF and each used-up one doubles the next (docs/deploy.md), each allowing BUDGET passwords.
    (On a loaded machine the 200 guesses can outlast the first window.)"""
    windows, ends = 1, BACKOFF
    while ends < seconds:
        windows, ends = windows + 1, ends + BACKOFF * 2 ** windows
    return windows


def test_200_concurrent_spoofed_guesses_check_at_most_the_budget_and_the_user_then_logs_in(site):
    urls = [site.base_url, site.second_url]
    began = time.monotonic()
    with ThreadPoolExecutor(max_workers=50) as pool:
        outcomes = list(pool.map(lambda i: attempt(urls[i % 4 // 2], i), range(200)))
    windows = windows_opened(time.monotonic() - began)
    checked = outcomes.count("checked")
    assert set(outcomes) <= {"checked", "refused"}, sorted(set(outcomes))
    logged = sum(len(re.findall(r"failed login for 'tess'", site.log(name))) for name in ("server", "server2"))
    print(f"passwords checked: {checked} answers, {logged} log lines; refused unchecked: {outcomes.count('refused')}; "
          f"the guessing spanned {windows} of the username's windows")
    assert checked == logged <= BUDGET * windows

    # the real user, from wherever, after the first back-off (GRIDWEB_LOGIN_BACKOFF_SECONDS)
    plain = urllib.request.build_opener()
    code, _, headers = fetch(plain, f"{site.base_url}/api/token/", {"username": "tess", "password": PASSWORD})
    assert code == 429 and int(headers["Retry-After"]) <= BACKOFF * 2 ** (windows - 1)
    time.sleep(int(headers["Retry-After"]) + 0.5)
    code, body, _ = fetch(plain, f"{site.second_url}/api/token/", {"username": "tess", "password": PASSWORD})
    assert code == 200 and json.loads(body)["token"]
