"""Every state-changing route refuses a request without a CSRF token; the bearer-token API is exempt.

The routes are read from the app's url map, so a route added later cannot slip past.
"""

import re

from tests.web.conftest import HX
from webapp.public import PUBLIC_ROUTES

STATE_CHANGING = {"POST", "PUT", "PATCH", "DELETE"}
CSRF_MESSAGE = "This form has expired or was not sent from Tickwork"


def _url(rule) -> str:
    """A concrete URL for ``rule``: every variable part becomes 1."""
    return re.sub(r"<(?:[^:>]+:)?[^>]+>", "1", rule.rule)


def state_changing_rules(app):
    return [(rule, method) for rule in app.url_map.iter_rules()
            for method in sorted((rule.methods or set()) & STATE_CHANGING)]


def test_every_dashboard_post_without_a_token_is_refused(app, acme, browser_for):
    browser = browser_for("admin")
    checked = []
    for rule, method in state_changing_rules(app):
        if rule.rule.startswith("/api/") or rule.endpoint in PUBLIC_ROUTES:
            continue
        url = _url(rule)
        for headers in ({}, HX):
            answer = browser.client.open(url, method=method, data={"anything": "x"}, headers=headers)
            assert answer.status_code == 400, (method, url, answer.status_code)
            assert CSRF_MESSAGE in answer.get_data(as_text=True), (method, url)
            if headers:
                assert answer.headers["HX-Retarget"] == "#messages"
        # A wrong token is refused too.
        answer = browser.client.open(url, method=method, data={"csrf_token": "forged"})
        assert answer.status_code == 400, (method, url)
        checked.append(rule.endpoint)
    # The dashboard's state-changing routes are all in the list (a guard against an empty map).
    for endpoint in ("pages.login", "pages.logout", "pages.switch_workspace", "actions.cancel", "actions.reschedule",
                     "actions.retry", "actions.post_now", "calendar.move", "queue.bulk_cancel", "queue.bulk_retry", "queue.bulk_reschedule", "posts.create",
                     "posts.update", "posts.approve", "posts.unapprove", "posts.archive", "posts.send_now",
                     "channels.create", "channels.update", "channels.test_send", "members.add", "members.role",
                     "members.remove", "feeds.make_feed", "feeds.revoke_feed", "posts.import_upload",
                     "posts.import_commit", "channels.save_posting_times"):
        assert endpoint in checked, endpoint


def test_api_routes_are_bearer_token_and_exempt(app, acme):
    client = app.test_client()
    api_rules = [(rule, method) for rule, method in state_changing_rules(app)
                 if rule.rule.startswith("/api/") and rule.endpoint not in PUBLIC_ROUTES]
    assert api_rules, "the API has state-changing routes"
    for rule, method in api_rules:
        answer = client.open(_url(rule), method=method, json={})
        # Not a CSRF refusal: the API asks for its bearer token instead.
        assert answer.status_code == 401, (method, rule.rule, answer.status_code)
        assert answer.json["error"]["code"] == "unauthorized"
    # And with a token the same request gets through to the view.
    answer = client.post(f"/api/v1/actions/{acme.queued}/cancel", headers=acme.world.auth("ops"))
    assert answer.status_code == 200 and answer.json["status"] == "cancelled"


def test_the_public_routes_are_exactly_the_views_that_answer_without_a_session_or_a_token(app):
    client = app.test_client()
    open_endpoints = set()
    for rule in app.url_map.iter_rules():
        if rule.endpoint in ("static", "pages.login"):
            continue
        if rule.rule.startswith("/api/") and rule.endpoint not in PUBLIC_ROUTES:
            continue  # the bearer-token API: test_api_routes_are_bearer_token_and_exempt
        method = "GET" if "GET" in rule.methods else sorted(rule.methods & STATE_CHANGING)[0]
        answer = client.open(_url(rule), method=method)
        # Asking for a session (a redirect, htmx's 401), a bearer token (401 "unauthorized") or a CSRF
        # token is not open; a public route answers with its own check (a signature's 401 is its own).
        asks_for_a_session_or_token = answer.status_code == 302 or (
            answer.status_code == 401 and not (answer.is_json and answer.json["error"]["code"] != "unauthorized"))
        if not asks_for_a_session_or_token and not (
                answer.status_code == 400 and CSRF_MESSAGE in answer.get_data(as_text=True)):
            open_endpoints.add(rule.endpoint)
    assert open_endpoints == set(PUBLIC_ROUTES)


def test_htmx_requests_carry_the_token_in_a_header(acme, browser_for):
    browser = browser_for("ops")
    page = browser.get("/queue").get_data(as_text=True)
    # htmx 4 applies a header set on <body> to requests below it only with :inherited.
    found = re.search(r"<body hx-headers:inherited='\{\"X-CSRFToken\": \"([^\"]+)\"\}'>", page)
    assert found, page[:1500]
    assert found.group(1) == re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
    answer = browser.post(f"/actions/{acme.queued}/cancel", htmx=True)
    assert answer.status_code == 200 and "cancelled" in answer.get_data(as_text=True)
