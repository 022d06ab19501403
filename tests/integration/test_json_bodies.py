"""Every JSON body goes through one strict parser: no input a client can send reaches a 500 or stores non-JSON.

Each case here answered 500 (or stored ``NaN`` on SQLite) before the parser existed.
"""

import pytest
from sqlalchemy import func, select

from models.actions.tables import ScheduledAction
from models.core.database import read_session
from models.posts.tables import Post
from tests.factories import add_action

GOOD = ('{"action_type": "send_email", "channel": "main", "target_key": "ada@example.com", '
        '"publish_at": "2026-06-01T14:00:00Z", "payload": %s}')


def _count(app, model) -> int:
    with app.app_context(), read_session() as session:
        return session.scalar(select(func.count()).select_from(model))


def _post(client, world, url, raw: str):
    return client.post(url, data=raw.encode("utf-8"), content_type="application/json", headers=world.auth("admin"))


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


CASES = [
    ("a body of 100,000 nested arrays", "/api/v1/actions", nested(100_000), 422, None),
    ("5,000 nested arrays inside payload", "/api/v1/actions", GOOD % nested(5_000), 422, None),
    ("40 nested arrays inside payload", "/api/v1/actions", GOOD % nested(40), 422, "payload"),
    ("a lone surrogate in payload", "/api/v1/actions", GOOD % '{"x": "\\ud800"}', 422, "payload"),
    ("a lone surrogate as target_key", "/api/v1/actions",
     GOOD.replace('"ada@example.com"', '"\\udc00"') % "{}", 422, "target_key"),
    ("a NUL inside payload", "/api/v1/actions", GOOD % '{"x": "a\\u0000b"}', 422, "payload"),
    ("NaN inside payload", "/api/v1/actions", GOOD % '{"x": NaN}', 400, None),
    ("-Infinity inside payload", "/api/v1/actions", GOOD % '{"x": -Infinity}', 400, None),
    ("1e999 inside payload", "/api/v1/actions", GOOD % '{"x": 1e999}', 400, None),
    ("an integer of 5,000 digits", "/api/v1/actions", GOOD % ('{"x": %s}' % ("9" * 5000)), 400, None),
    ("50,000 nested arrays as a post's body", "/api/v1/posts",
     '{"body": %s, "targets": ["main"], "local_time": "2026-06-10T09:00"}' % nested(50_000), 422, None),
    ("a lone surrogate in a post's body", "/api/v1/posts",
     '{"body": "hi \\ud800", "targets": ["main"], "local_time": "2026-06-10T09:00"}', 422, "body"),
    ("not JSON at all", "/api/v1/actions", "{oops", 400, None),
    ("a JSON array, not an object", "/api/v1/actions", "[1, 2]", 400, None),
]


# Each case is named by its description: the bodies themselves are too large to be test ids.
@pytest.mark.parametrize("case, url, raw, status, field", [pytest.param(*case, id=case[0]) for case in CASES])
def test_a_hostile_json_body_is_a_clear_4xx_and_stores_nothing(app, client, world, case, url, raw, status, field):
    before = (_count(app, ScheduledAction), _count(app, Post))
    answer = _post(client, world, url, raw)
    assert answer.status_code == status, (case, answer.status_code, answer.get_data(as_text=True)[:300])
    error = answer.json["error"]
    assert error["code"] in ("invalid_json", "too_deep", "bad_character"), case
    if field:
        assert error["field"] == field, case
    assert (_count(app, ScheduledAction), _count(app, Post)) == before


def test_a_reschedule_with_a_nested_body_is_a_4xx_and_the_row_stays_queued(app, client, world):
    action_id = add_action(app, world)
    answer = _post(client, world, f"/api/v1/actions/{action_id}/reschedule", nested(100_000))
    assert answer.status_code == 422
    with app.app_context(), read_session() as session:
        assert session.get(ScheduledAction, action_id).status == "queued"


def test_a_body_over_the_limit_is_a_413_in_json(client, world):
    answer = _post(client, world, "/api/v1/actions", GOOD % ('{"x": "%s"}' % ("a" * (2 * 1024 * 1024))))
    assert answer.status_code == 413 and answer.json["error"]["code"] == "request_entity_too_large"


def test_a_clean_body_with_unicode_nesting_and_numbers_is_stored_as_sent(app, client, world):
    payload = '{"greeting": "héllo 👋 שלום", "n": [1, 2.5, -3e2], "deep": [[[[{"a": null}]]]]}'
    answer = _post(client, world, "/api/v1/actions", GOOD % payload)
    assert answer.status_code == 201, answer.json
    assert answer.json["payload"] == {"greeting": "héllo 👋 שלום", "n": [1, 2.5, -300.0], "deep": [[[[{"a": None}]]]]}


# -- the wings' routes go through the same parser -------------------------------------------------

RULE = ('{"action_type": "send_email", "channel": "main", "target_key": %s, "rrule": "FREQ=DAILY", '
        '"starts_local": "2027-01-04T08:00", "payload": %s}')
WORK = '{"name": %s, "pipeline": "log", "settings": %s}'
CAMPAIGN = '{"name": "Welcome", "channel": "main", "steps": [{"delay": "P1D", "subject": %s, "body": "Hi"}]%s}'
CONTACT = '{"email": "grace@example.com", "name": %s, "attributes": %s}'
SCHEDULE = '{"cadence": %s, "maxFailureBeforePause": %s}'
ENROLL = '{"contact_id": %s}'
ADA = '"ada@example.com"'

WING_CASES = [
    # (what, route, body, status, field)
    ("a rule: 100,000 nested arrays", "/api/v1/recurring", nested(100_000), 422, None),
    ("a rule: 5,000 nested arrays in payload", "/api/v1/recurring", RULE % (ADA, nested(5_000)), 422, None),
    ("a rule: a lone surrogate as target_key", "/api/v1/recurring", RULE % ('"\\udc00"', "{}"), 422, "target_key"),
    ("a rule: NaN in payload", "/api/v1/recurring", RULE % (ADA, '{"x": NaN}'), 400, None),
    ("a rule: 1e999 in payload", "/api/v1/recurring", RULE % (ADA, '{"x": 1e999}'), 400, None),
    ("a work: 100,000 nested arrays", "/api/v1/works", nested(100_000), 422, None),
    ("a work: settings nested 5,000 deep", "/api/v1/works", WORK % ('"Digest"', nested(5_000)), 422, None),
    ("a work: a lone surrogate in name", "/api/v1/works", WORK % ('"Dig\\ud800est"', "{}"), 422, "name"),
    ("a work: NaN seconds", "/api/v1/works", WORK % ('"Digest"', '{"seconds": NaN}'), 400, None),
    ("a work: 1e999 seconds", "/api/v1/works", WORK % ('"Digest"', '{"seconds": 1e999}'), 400, None),
    ("a schedule: 100,000 nested arrays", "/api/works/{work_id}/schedule", nested(100_000), 422, None),
    ("a schedule: a lone surrogate as cadence", "/api/works/{work_id}/schedule", SCHEDULE % ('"\\ud800"', "3"),
     422, "cadence"),
    ("a schedule: NaN failures", "/api/works/{work_id}/schedule", SCHEDULE % ('"daily"', "NaN"), 400, None),
    ("a schedule: 1e999 failures", "/api/works/{work_id}/schedule", SCHEDULE % ('"daily"', "1e999"), 400, None),
    ("a campaign: 100,000 nested arrays", "/api/v1/campaigns", nested(100_000), 422, None),
    ("a campaign: a window nested 5,000 deep", "/api/v1/campaigns",
     CAMPAIGN % ('"Hello"', ', "send_window": %s' % nested(5_000)), 422, None),
    ("a campaign: a lone surrogate in a subject", "/api/v1/campaigns", CAMPAIGN % ('"He\\udfffllo"', ""), 422, "steps"),
    ("a campaign: NaN as on_failure", "/api/v1/campaigns", CAMPAIGN % ('"Hello"', ', "on_failure": NaN'), 400, None),
    ("a campaign: 1e999 as on_failure", "/api/v1/campaigns", CAMPAIGN % ('"Hello"', ', "on_failure": 1e999'),
     400, None),
    ("a contact: 100,000 nested arrays", "/api/v1/contacts", nested(100_000), 422, None),
    ("a contact: attributes nested 5,000 deep", "/api/v1/contacts", CONTACT % ('"Grace"', nested(5_000)), 422, None),
    ("a contact: a lone surrogate in name", "/api/v1/contacts", CONTACT % ('"Gr\\ud800ace"', "{}"), 422, "name"),
    ("a contact: NaN attribute", "/api/v1/contacts", CONTACT % ('"Grace"', '{"score": NaN}'), 400, None),
    ("a contact: 1e999 attribute", "/api/v1/contacts", CONTACT % ('"Grace"', '{"score": 1e999}'), 400, None),
    ("an enrollment: 100,000 nested arrays", "/api/v1/campaigns/{campaign_id}/enrollments", nested(100_000), 422,
     None),
    ("an enrollment: NaN contact", "/api/v1/campaigns/{campaign_id}/enrollments", ENROLL % "NaN", 400, None),
    ("an enrollment: 1e999 contact", "/api/v1/campaigns/{campaign_id}/enrollments", ENROLL % "1e999", 400, None),
]


def _wing_counts(app) -> tuple:
    from models.drips.tables import Campaign, Contact, Enrollment, Step
    from models.recurring.tables import RecurringSchedule
    from models.works.tables import Work, WorkRun, WorkSchedule

    return tuple(_count(app, model) for model in (ScheduledAction, RecurringSchedule, Work, WorkSchedule, WorkRun,
                                                  Campaign, Step, Contact, Enrollment))


def wing_objects(app, client, world, url: str) -> dict:
    """What ``url`` names: a work without a schedule, or an active campaign (and a contact not yet enrolled)."""
    admin = world.auth("admin")
    made = {}
    if "{work_id}" in url:
        work = client.post("/api/v1/works", headers=admin, json={"name": "Digest", "pipeline": "log"})
        made["work_id"] = work.json["id"]
    if "{campaign_id}" in url:
        app.config["TICKWORK_BASE_URL"] = "https://tickwork.example"  # activating an email campaign needs it
        campaign = client.post("/api/v1/campaigns", headers=admin, json={
            "name": "Onboarding", "channel": "main", "steps": [{"delay": "P1D", "subject": "Hi", "body": "Hello"}]})
        assert client.post(f"/api/v1/campaigns/{campaign.json['id']}/activate", headers=admin).status_code == 200
        assert client.post("/api/v1/contacts", headers=admin, json={"email": "ada@example.com"}).status_code == 201
        made["campaign_id"] = campaign.json["id"]
    return made


@pytest.mark.parametrize("case, url, raw, status, field", [pytest.param(*case, id=case[0]) for case in WING_CASES])
def test_a_hostile_json_body_to_a_wing_is_a_clear_4xx_and_changes_nothing(app, client, world, case, url, raw, status,
                                                                          field):
    url = url.format(**wing_objects(app, client, world, url))
    before = _wing_counts(app)
    method = "PUT" if url.endswith("/schedule") else "POST"
    answer = client.open(url, method=method, data=raw.encode("utf-8"), content_type="application/json",
                         headers=world.auth("admin"))
    assert answer.status_code == status, (case, answer.status_code, answer.get_data(as_text=True)[:300])
    error = answer.json["error"]
    assert error["code"] in ("invalid_json", "too_deep", "bad_character") and error["message"], case
    if field:
        assert error["field"] == field or error["field"].startswith(field), case
    assert _wing_counts(app) == before, case


def test_a_hostile_body_to_the_postmark_bounce_hook_is_a_4xx_in_json(app, client, world):
    from models.channels.tables import Channel
    from models.core.database import write_session
    from models.core.runtime import runtime
    from models.drips.webhooks import postmark_url

    with app.app_context(), write_session() as session:
        channel = Channel(workspace_id=world.workspace_id, name="pm", kind="postmark",
                          config={"from": "shop@example.com"}, created_at=runtime().now())
        channel.set_secret(runtime().secret_box, "server-token")
        session.add(channel)
        session.flush()
        hook = postmark_url("https://tickwork.example", channel.id, "server-token").removeprefix(
            "https://tickwork.example")
    for raw in (nested(100_000), '{"Email": "a\\ud800@example.com", "Type": "HardBounce"}', '{"Type": NaN}'):
        answer = client.post(hook, data=raw.encode(), content_type="application/json")
        assert 400 <= answer.status_code < 500 and answer.json["error"]["code"], raw[:40]
