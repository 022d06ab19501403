"""Every page and fragment, for each role, allowed and refused, with and without HX-Request."""

import html
import re

import pytest

from tests.web.conftest import make_action

ROLES = ("marketer", "ops", "admin")
RANK = {"marketer": 0, "ops": 1, "admin": 2}


def pages(acme):
    """(url, least role, answer when allowed without htmx, answer when allowed with htmx)."""
    return [
        ("/calendar", "marketer", 200, 200),
        ("/calendar?view=week&date=2026-06-10", "marketer", 200, 200),
        ("/queue", "marketer", 200, 200),
        ("/queue?status=submitted&type=send_email&channel=main&from=2026-06-01&to=2026-06-30&q=x", "marketer",
         200, 200),
        ("/failures", "marketer", 200, 200),
        ("/outbox", "marketer", 200, 200),
        ("/history", "marketer", 200, 200),
        ("/history?q=bread+%22oven", "marketer", 200, 200),
        ("/posts/new?date=2026-06-10", "marketer", 200, 200),
        ("/posts/import", "marketer", 200, 200),
        ("/posts", "marketer", 200, 200),
        ("/posts?q=bread&channel=main&author=1&status=approved&state=published&from=2026-06-01&to=2026-06-30",
         "marketer", 200, 200),
        (f"/posts/{acme.post}", "marketer", 200, 200),
        ("/posts/preview-time?date=2026-06-10&time=09:00", "marketer", 302, 200),
        ("/posts/tailoring?targets=main&variant_body:main=Hi", "marketer", 302, 200),
        ("/posts/previews?body=Hi&targets=main", "marketer", 302, 200),
        ("/posts/follow-ups?targets=main&thread_body=Hi", "marketer", 302, 200),
        ("/posts/follow-up-counts?targets=main&thread_body=Hi", "marketer", 302, 200),
        (f"/calendar/move?post={acme.post}", "marketer", 200, 200),
        (f"/calendar/move-preview?post={acme.post}&date=2026-06-12&time=09:00", "marketer", 302, 200),
        (f"/actions/{acme.queued}", "marketer", 200, 200),
        (f"/actions/{acme.queued}/row", "marketer", 302, 200),
        (f"/actions/{acme.queued}/reschedule", "ops", 200, 200),
        ("/queue/bulk-cancel", "ops", 200, 200),
        ("/queue/bulk-reschedule?shift=%2B1h", "ops", 200, 200),
        ("/health", "ops", 200, 200),
        ("/failures/bulk-retry", "admin", 200, 200),
        ("/channels", "admin", 200, 200),
        ("/members", "admin", 200, 200),
        (f"/channels/{acme.channel_id}", "admin", 200, 200),
    ]


def test_every_page_and_fragment_for_every_role(acme, browser_for):
    for role in ROLES:
        browser = browser_for(role)
        for url, least, plain, htmx in pages(acme):
            allowed = RANK[role] >= RANK[least]
            for as_htmx in (False, True):
                answer = browser.get(url, htmx=as_htmx)
                body = answer.get_data().decode("utf-8", "replace")  # a media file's bytes are not text
                expected = (htmx if as_htmx else plain) if allowed else 403
                assert answer.status_code == expected, (role, url, as_htmx, body[:300])
                if as_htmx and answer.status_code == 200:
                    assert "<html" not in body, (role, url, "a fragment, not a page")
                if not as_htmx and answer.status_code == 200:
                    assert "<html" in body, (role, url)
                if not allowed:
                    assert "You need the" in body and least in body, (role, url, body[:300])
                    if as_htmx and "reschedule" not in url:
                        # Not a row: the refusal goes to the message area, not into the target.
                        assert answer.headers["HX-Retarget"] == "#messages"


def test_signed_out_is_sent_to_sign_in(acme, browser_for):
    browser = browser_for(None)
    for url, *_ in pages(acme):
        answer = browser.get(url)
        assert answer.status_code == 302 and "/login" in answer.headers["Location"], url
        answer = browser.get(url, htmx=True)
        assert answer.status_code == 401 and answer.headers["HX-Redirect"].startswith("/login"), url


def test_navigation_shows_what_each_role_may_open(acme, browser_for):
    marketer = browser_for("marketer").get("/calendar").get_data(as_text=True)
    assert 'href="/health"' not in marketer and 'href="/channels"' not in marketer
    ops = browser_for("ops").get("/queue").get_data(as_text=True)
    assert 'href="/health"' in ops and 'href="/channels"' not in ops
    admin = browser_for("admin").get("/queue").get_data(as_text=True)
    assert 'href="/health"' in admin and 'href="/channels"' in admin


def test_home_sends_marketers_to_the_calendar_and_ops_to_the_queue(acme, browser_for):
    assert browser_for("marketer").get("/").headers["Location"].endswith("/calendar")
    assert browser_for("ops").get("/").headers["Location"].endswith("/queue")


# -- redirect targets -----------------------------------------------------------------------

OPEN_REDIRECTS = ["//evil.test", "/\\evil.test", "https://evil.test/", "javascript:alert(1)", "%2F%2Fevil.test",
                  "/%2F/evil.test", "/%5Cevil.test", "https%3A%2F%2Fevil.test", "javascript%3Aalert(1)",
                  "/%252F%252Fevil.test", "/\t/evil.test"]


@pytest.mark.only_backend("sqlite")
def test_sign_in_goes_back_only_to_a_path_on_this_site(app, world, browser_for):
    from tests.web.conftest import PASSWORD, TOKEN

    for target, expected in [(t, "/") for t in OPEN_REDIRECTS] + [("/queue?status=failed", "/queue?status=failed")]:
        client = app.test_client()
        page = client.get("/login", query_string={"next": target}).get_data(as_text=True)
        kept = re.search(r'name="next" value="([^"]*)"', page).group(1)
        assert kept == ("" if expected == "/" else html.escape(target)), (target, kept)
        token = TOKEN.search(page).group(1)
        answer = client.post("/login", data={"email": "ops@acme.test", "password": PASSWORD, "csrf_token": token,
                                             "next": target})
        assert answer.status_code == 303 and answer.headers["Location"] == expected, (target, answer.headers)
    # Sent to sign in from a page, a person comes back to it.
    client = app.test_client()
    sent = client.get("/queue?status=failed")
    assert sent.status_code == 302 and sent.headers["Location"] == "/login?next=/queue?status%3Dfailed"


@pytest.mark.only_backend("sqlite")
def test_a_row_change_goes_back_only_to_a_path_on_this_site(app, acme, browser_for):
    ops = browser_for("ops")
    for target in OPEN_REDIRECTS:
        row = make_action(app, acme.world, minutes=90)
        answer = ops.post(f"/actions/{row}/cancel", {"next": target})
        assert answer.status_code == 303 and answer.headers["Location"] == f"/actions/{row}", target
    row = make_action(app, acme.world, minutes=90)
    answer = ops.post(f"/actions/{row}/cancel", {"next": "/queue?status=queued"})
    assert answer.headers["Location"] == "/queue?status=queued"
