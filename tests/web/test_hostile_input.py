"""No page, fragment or endpoint answers 500: hostile strings in every parameter, and a workspace whose stored
zone is garbage.

The walker signs in afresh for every route (so ``POST /logout`` cannot leave it walking signed
out), checks that each request reached its view (not a redirect to sign-in, not a CSRF or
bearer-token refusal), and feeds every path parameter, query parameter and form field it
knows a corpus of hostile strings.
"""

import functools
import inspect
import json
import re
import sys
import time
import zlib
from urllib.parse import quote, quote_plus

import pytest
from sqlalchemy import update

from models.accounts.tables import Workspace
from models.core.database import write_session
from tests.web.access_world import BASE_URL, furnish
from tests.web.conftest import HX, Browser
from tests.web.walking import (
    PARAMETER, SIGNS_OUT, SignedIn, concrete, methods_of, reached_the_view, report, walked_rules,
)

GARBAGE_ZONE = "Mars/Olympus_Mons"
BANNER = "is not valid; times are shown in UTC until an admin fixes it in Settings"


MEGABYTE = "Ω" + "a" * (1024 * 1024)
HOSTILE = {
    "lone surrogates": "\ud800 and \udfff",
    "NUL": "a\x00b",
    "RTL override": "\u202eexe.txt",
    "a megabyte": MEGABYTE,
    "HTML": '<script>alert(1)</script><img src=x onerror="alert(2)">',
    "template syntax": "{{ 7*7 }}{% for x in range(3) %}{{ config }}{% endfor %}${7*7}#{7*7}",
    "path traversal": "../../../../etc/passwd",
    "format and SQL": "%s%n%x{0}' OR 1=1 --",
    "a huge number": "9" * 40,
    # str.isdigit() says yes to a superscript two, and int() then refuses it.
    "digits int() cannot read": "\u00b2\u00b3",
}
# ``form.get("date")``, ``args.getlist("targets")``, ``required_string(body, "name")``: the names a module reads.
FIELD_CALL = re.compile(r"""(?:\.get|\.getlist|\.pop|required_\w+|optional_\w+)\(\s*(?:\w+\s*,\s*)?"""
                        r""""([a-z][a-z0-9_-]{0,40})\"""")
FIELD_INDEX = re.compile(r"""\[\s*"([a-z][a-z0-9_-]{0,40})"\s*\]""")
INPUT_NAME = re.compile(r'name="([a-zA-Z][\w-]{0,40})"')


@pytest.fixture
def app_config(app_config):
    app_config.update(TICKWORK_BASE_URL=BASE_URL, TICKWORK_API_RATE_LIMIT="100000 per minute",
                      TICKWORK_SIGNIN_LIMIT_PER_ADDRESS="100000 per minute",
                      TICKWORK_SIGNIN_LIMIT_PER_ACCOUNT="100000 per minute")
    return app_config


@pytest.fixture
def furnished(app, world):
    return furnish(app, world)


def _spoil_zone(app, workspace_id: int) -> None:
    """Write a zone no validation would let through, straight into the table (as an old import might)."""
    with app.app_context(), write_session() as session:
        session.execute(update(Workspace.__table__).where(Workspace.__table__.c.id == workspace_id)
                        .values(timezone=GARBAGE_ZONE))


def _read_everything(app, furnished, admin) -> dict:
    """Every page, fragment and API read of the workspace: ``(url, htmx) -> (status, body)``."""
    answers = {}
    for rule in walked_rules(app):
        api = rule.rule.startswith("/api/")
        if "GET" not in methods_of(rule):
            continue
        url = concrete(rule, furnished.ids)
        for htmx in ((False,) if api else (False, True)):
            headers = furnished.world.auth("admin") if api else (HX if htmx else {})
            answer = admin.client.get(url, headers=headers)
            assert reached_the_view(answer, api=api) is None, (url, answer.status_code)
            answers[url, htmx] = answer.status_code, answer.get_data().decode("utf-8", "replace")  # media bytes too
    return answers


@pytest.mark.only_backend("sqlite")
def test_a_workspace_whose_stored_zone_is_garbage_gets_every_page_with_a_banner_never_a_500(app, furnished,
                                                                                           browser_for):
    admin = browser_for("admin")
    sound = _read_everything(app, furnished, admin)
    _spoil_zone(app, furnished.world.workspace_id)
    spoiled = _read_everything(app, furnished, admin)
    assert spoiled.keys() == sound.keys()
    for (url, htmx), (status, body) in spoiled.items():
        # Each page answers as it did with a sound zone: a garbage zone turns nothing into an error page. The API
        # may refuse what needs the zone, saying so (a client has no banner to read).
        if url.startswith("/api/") and status != sound[url, htmx][0]:
            assert status in (409, 422) and "time zone is not valid" in body, (url, status, body[:800])
            continue
        assert status == sound[url, htmx][0], (url, htmx, status, body[:1500])
        if not htmx and status == 200 and "<html" in body:
            assert GARBAGE_ZONE in body and BANNER in body, (url, body[:1500])
            assert BANNER not in sound[url, htmx][1]
    report("garbage_zone", requests=len(sound) + len(spoiled),
           server_errors=sum(status >= 500 for status, _ in [*sound.values(), *spoiled.values()]))
    # An admin fixes it in Settings, and the banner goes.
    settings = admin.get("/settings")
    assert settings.status_code == 200 and BANNER in settings.get_data(as_text=True)
    preview = admin.post("/settings/timezone", {"zone": "Europe/Paris", "intent": "preview"})
    assert preview.status_code == 200, preview.get_data(as_text=True)[:800]
    fixed = admin.post("/settings/timezone", {"zone": "Europe/Paris", "intent": "change"})
    assert fixed.status_code == 303, fixed.get_data(as_text=True)[:800]
    page = admin.get("/calendar").get_data(as_text=True)
    assert BANNER not in page and "Europe/Paris" in page


# -- the walker -----------------------------------------------------------------------------


def _source_fields(app, rule) -> set[str]:
    """The request fields the view's module reads (``form.get("date")``, ``body["payload"]``, ...)."""
    module = sys.modules[app.view_functions[rule.endpoint].__module__]
    source = inspect.getsource(module)
    return set(FIELD_CALL.findall(source)) | set(FIELD_INDEX.findall(source))


def _harvest_page_fields(app, furnished) -> dict[str, set[str]]:
    """Every form field the dashboard's pages render, by blueprint."""
    admin = Browser(app.test_client(), "admin", furnished.world)
    found: dict[str, set[str]] = {}
    for rule in walked_rules(app, api=False):
        if "GET" in methods_of(rule):
            page = admin.get(concrete(rule, furnished.ids)).get_data().decode("utf-8", "replace")
            found.setdefault(rule.endpoint.split(".")[0], set()).update(INPUT_NAME.findall(page))
    return found


@functools.lru_cache(maxsize=64)
def _encoded_value(value: str) -> str:
    return quote_plus(value.encode("utf-8", "surrogatepass"))


def _encoded(pairs: dict) -> str:
    """Form or query encoding that keeps lone surrogates as the bytes a hostile client would send (each value
    encoded once: quoting a megabyte is slow)."""
    return "&".join(f"{quote_plus(key)}={_encoded_value(value)}" for key, value in pairs.items())


def _path(rule, ids: dict, hostile: str | None, *, int_value: str | None = None) -> str:
    """The rule's path: text parameters carry ``hostile``; id parameters an id of ours, or ``int_value``."""
    def fill(match):
        name = match.group(0)
        key = match.group(1)
        if name.startswith("<int:"):
            return int_value if int_value is not None else str(ids[key])
        value = hostile if hostile is not None else str(ids[key])
        return quote(value.encode("utf-8", "surrogatepass"), safe="")

    return PARAMETER.sub(fill, rule.rule)


class Walk:
    """Counts what the walker tried and saw, for the figures in docs/reliability.md."""

    def __init__(self):
        self.requests = 0
        self.routes = set()
        self.refused_as_too_large = 0
        self.by_status: dict[int, int] = {}
        self.slowest: list[tuple] = []

    def saw(self, rule, answer):
        self.requests += 1
        self.routes.add((rule.rule, rule.endpoint))
        self.by_status[answer.status_code] = self.by_status.get(answer.status_code, 0) + 1


def _send(app, furnished, browser, rule, method, path, fields, hostile, *, htmx):
    api = rule.rule.startswith("/api/")
    names = sorted(fields)
    if hostile is MEGABYTE and names:
        # A megabyte in one field per request, a different one for each route: in every field at once it would
        # only measure how slowly the test client quotes URLs.
        names = [names[zlib.crc32(rule.rule.encode()) % len(names)]]
    values = {field: hostile for field in names}
    if api:
        headers = furnished.world.auth("admin")
        if method in ("GET", "DELETE"):
            return browser.client.open(path, method=method, query_string=_encoded(values), headers=headers)
        return browser.client.open(path, method=method, headers=headers, data=json.dumps(values),
                                   content_type="application/json")
    if method == "GET":
        return browser.client.get(path, query_string=_encoded(values), headers=HX if htmx else {})
    headers = {**HX, "X-CSRFToken": browser.token} if htmx else {}
    form = values if htmx else {**values, "csrf_token": browser.token}
    return browser.client.open(path, method=method, data=_encoded(form), headers=headers,
                               content_type="application/x-www-form-urlencoded")


@pytest.mark.only_backend("sqlite")
def test_no_hostile_string_in_any_parameter_reaches_a_500(app, furnished):
    harvested = _harvest_page_fields(app, furnished)
    walk = Walk()
    failures = []
    session = SignedIn(app, "admin", furnished.world)
    for number, rule in enumerate(walked_rules(app)):
        api = rule.rule.startswith("/api/")
        fields = (_source_fields(app, rule) | harvested.get(rule.endpoint.split(".")[0], set())) - {"csrf_token"}
        text_parameters = [p for p in PARAMETER.finditer(rule.rule) if not p.group(0).startswith("<int:")]
        for method in methods_of(rule):
            tries = [(name, value, _path(rule, furnished.ids, value if text_parameters else None))
                     for name, value in HOSTILE.items()]
            # Signed in afresh for every route, and for every request to one that signs out: no route can leave
            # the rest of the walk signed out.
            browser = session.fresh()
            for attempt, (name, value, path) in enumerate(tries):
                if attempt and rule.endpoint in SIGNS_OUT:
                    browser = session.fresh()
                htmx = (number + attempt) % 2 == 1
                started = time.perf_counter()
                answer = _send(app, furnished, browser, rule, method, path, fields, value, htmx=htmx)
                walk.slowest.append((time.perf_counter() - started, method, rule.rule, name))
                walk.saw(rule, answer)
                body = answer.get_data().decode("utf-8", "replace")  # a media file's bytes are not text
                if answer.status_code >= 500:
                    failures.append((method, rule.rule, name, answer.status_code, body[:300]))
                    continue
                if value is MEGABYTE and method != "GET" and answer.status_code == 413:
                    walk.refused_as_too_large += 1  # the body limit, said in words: a clear refusal
                    assert "That request is too large" in body, (rule.rule, body[:300])
                    continue
                why = reached_the_view(answer, api=api, endpoint=rule.endpoint)
                if why:
                    failures.append((method, rule.rule, name, answer.status_code, why))
    report("hostile_walk", routes=len(walk.routes), hostile_strings=len(HOSTILE),
           requests=walk.requests, server_errors=sum(n for status, n in walk.by_status.items() if status >= 500),
           refused_as_too_large=walk.refused_as_too_large, by_status=walk.by_status,
           slowest=[(round(t, 3), *rest) for t, *rest in sorted(walk.slowest, reverse=True)[:10]])
    assert not failures, "\n".join(map(str, failures))
    # Every route that is not public was walked, each of its methods at least with every hostile string.
    assert {r.endpoint for r in walked_rules(app)} == {endpoint for _, endpoint in walk.routes}


@pytest.mark.only_backend("sqlite")
def test_a_body_past_the_limit_is_refused_in_words_on_a_page_and_in_json(app, world):
    session = SignedIn(app, "marketer", world)
    browser = session.fresh()
    three_megabytes = "a" * (3 * 1024 * 1024)
    for htmx in (False, True):
        headers = {**HX, "X-CSRFToken": browser.token} if htmx else {}
        answer = browser.open("/posts", "POST", headers=headers, data={"body": three_megabytes,
                                                                       "csrf_token": browser.token})
        assert answer.status_code == 413 and "That request is too large" in answer.get_data(as_text=True)
        if htmx:
            assert answer.headers["HX-Retarget"] == "#messages"
    api = app.test_client().post("/api/v1/posts", headers=world.auth("marketer"), data=three_megabytes,
                                 content_type="application/json")
    assert api.status_code == 413 and api.json["error"]["message"].startswith("That request is too large")


def test_a_nul_character_in_a_query_or_a_form_is_refused_naming_its_field_on_both_databases(app, world):
    """PostgreSQL cannot compare a NUL: a search for one used to answer 500 there (found by bench/fuzz.py)."""
    api = app.test_client().get("/api/v1/contacts?q=a%00b", headers=world.auth("marketer"))
    assert api.status_code == 422 and api.json["error"] == {
        "code": "bad_character", "message": "q must not contain NUL characters", "field": "q"}
    browser = SignedIn(app, "marketer", world).fresh()
    page = browser.open("/contacts?q=a%00b", "GET")
    assert page.status_code == 422 and "q must not contain NUL characters" in page.get_data(as_text=True)
    posted = browser.open("/posts", "POST", data={"body": "a\x00b", "csrf_token": browser.token})
    assert posted.status_code == 422 and "body must not contain NUL characters" in posted.get_data(as_text=True)
    assert app.test_client().get("/api/v1/contacts?q=ab", headers=world.auth("marketer")).status_code == 200
