"""Every page and fragment, for each role, allowed and refused, with and without HX-Request."""

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
        (f"/posts/{acme.post}", "marketer", 200, 200),
        ("/posts/preview-time?date=2026-06-10&time=09:00", "marketer", 302, 200),
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
                body = answer.get_data(as_text=True)
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


def test_another_workspaces_rows_are_not_found(app, acme, browser_for):
    from tests.conftest import make_world
    from tests.web.conftest import make_action

    other = make_world(app, name="Globex")
    theirs = make_action(app, other, minutes=30)
    browser = browser_for("admin")
    assert browser.get(f"/actions/{theirs}").status_code == 404
    answer = browser.post(f"/actions/{theirs}/cancel", htmx=True)
    assert answer.status_code == 404
    assert browser.get(f"/posts/{acme.post + 1000}").status_code == 404
