"""No page, fragment or endpoint answers 500: hostile strings in every parameter, and a workspace whose stored
zone is garbage.

The walker signs in afresh for every route (so ``POST /logout`` cannot leave it walking signed
out), checks that each request reached its view (not a redirect to sign-in, not a CSRF or
bearer-token refusal), and feeds every path parameter, query parameter and form field it
knows a corpus of hostile strings.
"""

import pytest
from sqlalchemy import update

from models.accounts.tables import Workspace
from models.core.database import write_session
from tests.web.access_world import BASE_URL, furnish
from tests.web.conftest import HX
from tests.web.walking import concrete, methods_of, reached_the_view, report, walked_rules

GARBAGE_ZONE = "Mars/Olympus_Mons"
BANNER = "is not valid; times are shown in UTC until an admin fixes it in Settings"


@pytest.fixture
def app_config(app_config):
    app_config.update(TICKWORK_BASE_URL=BASE_URL, TICKWORK_API_RATE_LIMIT="100000 per minute")
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
            answers[url, htmx] = answer.status_code, answer.get_data(as_text=True)
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
