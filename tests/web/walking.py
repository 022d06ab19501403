"""Walking the url map: concrete URLs for every rule, and what "the request reached the view" means.

Shared by the access matrix and the hostile-input walker, so both read routes the same way
and a route added later is walked by both.
"""

import json
import os
import re
from urllib.parse import quote

from webapp.public import PUBLIC_ROUTES

STATE_CHANGING = {"POST", "PUT", "PATCH", "DELETE"}
PARAMETER = re.compile(r"<(?:[^:>]+:)?([^>]+)>")
CSRF_MESSAGE = "This form has expired or was not sent from Tickwork"


def walked_rules(app, *, api: bool | None = None):
    """Every rule but static files and the public routes (they carry checks of their own), sorted by path."""
    rules = []
    for rule in app.url_map.iter_rules():
        if rule.endpoint == "static" or rule.endpoint in PUBLIC_ROUTES:
            continue
        if api is not None and rule.rule.startswith("/api/") != api:
            continue
        rules.append(rule)
    return sorted(rules, key=lambda r: (r.rule, r.endpoint))


def methods_of(rule) -> list[str]:
    return sorted((rule.methods or set()) - {"HEAD", "OPTIONS"})


def parameters_of(rule) -> list[str]:
    return PARAMETER.findall(rule.rule)


def concrete(rule, ids: dict, **override) -> str:
    """The rule's path with each parameter filled from ``ids`` (a KeyError names an id kind nobody furnished)."""
    values = {**ids, **override}
    return PARAMETER.sub(lambda m: quote(str(values[m.group(1)]), safe=""), rule.rule)


# Their own answer is a 303 to the sign-in page, and the session they were sent with has ended for good.
SIGNS_OUT = {"pages.logout", "account.logout_everywhere"}


def reached_the_view(answer, *, api: bool, endpoint: str | None = None) -> str | None:
    """Why the answer came from before the view (sign-in, bearer token, CSRF), or None when the view answered."""
    if endpoint in SIGNS_OUT and answer.status_code == 303:
        return None
    if answer.status_code in (301, 302, 303, 307, 308) and "/login" in answer.headers.get("Location", ""):
        return "redirected to sign in"
    if answer.status_code == 401 and answer.headers.get("HX-Redirect", "").startswith("/login"):
        return "asked htmx to sign in"
    if api and answer.status_code == 401:
        return "refused the bearer token"
    if answer.status_code == 400 and CSRF_MESSAGE in answer.get_data(as_text=True):
        return "refused by CSRF"
    if answer.status_code == 429:
        return "rate limited"
    if answer.status_code == 405:
        return "method not allowed"
    return None


def report(name: str, **figures) -> None:
    """Append this run's figures to ``$TICKWORK_ACCESS_REPORT`` (JSON lines) when it is set; see docs/reliability.md."""
    path = os.environ.get("TICKWORK_ACCESS_REPORT")
    if path:
        current = os.environ.get("PYTEST_CURRENT_TEST", "")
        backend = current.split("[", 1)[1].split("]", 1)[0] if "[" in current else ""
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps({"test": name, "backend": backend, **figures}) + "\n")


class SignedIn:
    """A member's signed-in session, made once by the sign-in form and carried by every request after it.

    Each route is walked by a fresh client sending that session's cookie, whatever the route
    before it did: ``POST /logout`` clears only the cookie of the client that sent it. The
    clients keep no cookie jar: the test client's jar re-reads the whole URL twice per request,
    which costs more than the app itself when a query string carries a megabyte.
    """

    def __init__(self, app, role: str, world):
        self.app = app
        self.renew(role, world)

    def renew(self, role: str | None = None, world=None) -> "SignedIn":
        """Sign in again: after a route in ``SIGNS_OUT`` the old cookie opens nothing (sessions end server-side)."""
        from tests.web.conftest import Browser

        role, world = role or self.role, world or self.world
        app = self.app
        signed = Browser(app.test_client(), role, world)
        self.role, self.world, self.token = role, world, signed.token
        cookie = signed.client.get_cookie(app.config.get("SESSION_COOKIE_NAME", "session"))
        assert cookie is not None, "signing in set no session cookie"
        self.cookie = f"{cookie.key}={cookie.value}"
        return self

    def fresh(self) -> "SessionClient":
        return SessionClient(self.app, self.cookie, self.token)


class SessionClient:
    """Requests carrying one session cookie, run straight through the app (``client`` is itself, like a Browser's).

    The test client's own ``open`` re-reads the whole URL twice per request for its cookie jar,
    which costs more than the app does when a query string carries a megabyte; this builds the
    same WSGI environment and calls the app without it.
    """

    def __init__(self, app, cookie: str, token: str):
        self.app, self.cookie, self.token = app, cookie, token
        self.client = self

    def open(self, path, method="GET", headers=None, **kwargs):
        from flask.testing import EnvironBuilder
        from werkzeug.test import TestResponse, run_wsgi_app

        builder = EnvironBuilder(self.app, path, method=method, headers={**(headers or {}), "Cookie": self.cookie},
                                 environ_base={"REMOTE_ADDR": "127.0.0.1"}, **kwargs)
        try:
            environ, request = builder.get_environ(), builder.get_request()
        finally:
            builder.close()
        body, status, response_headers = run_wsgi_app(self.app, environ, buffered=True)
        return TestResponse(body, status, response_headers, request=request)

    def get(self, path, headers=None, **kwargs):
        return self.open(path, "GET", headers=headers, **kwargs)
