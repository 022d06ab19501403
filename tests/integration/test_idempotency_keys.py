"""Idempotency-Key as the IETF draft has it: a create runs once per key; a key reused for another
request is a 422; a key whose first request is still in flight is a 409; keys expire."""

import json

import pytest
from sqlalchemy import func, select

from models.accounts import idempotency
from models.accounts.idempotency import IdempotencyKey
from models.accounts.tables import ApiToken
from models.actions.tables import ScheduledAction
from models.core.database import read_session, write_session
from models.core.runtime import runtime
from models.posts.tables import Post
from tests.integration.test_actions_api import body


def _rows(app, model=ScheduledAction) -> int:
    with app.app_context(), read_session() as session:
        return session.scalar(select(func.count()).select_from(model))


def _create(client, world, key, role="admin", **overrides):
    return client.post("/api/v1/actions", json=body(**overrides), headers={**world.auth(role), "Idempotency-Key": key})


def test_the_same_key_and_request_creates_once_and_replays_the_first_answer(app, client, world):
    first = _create(client, world, "welcome-ada")
    again = _create(client, world, "welcome-ada")
    assert (first.status_code, again.status_code) == (201, 201)
    assert again.json == first.json and again.headers["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first.headers
    assert _rows(app) == 1


def test_the_same_key_with_another_request_is_a_422_and_creates_nothing(app, client, world):
    assert _create(client, world, "k-1").status_code == 201
    reused = _create(client, world, "k-1", target_key="someone-else@example.com")
    assert reused.status_code == 422
    assert (reused.json["error"]["code"], reused.json["error"]["field"]) == ("idempotency_key_reused",
                                                                           "Idempotency-Key")
    on_another_route = client.post("/api/v1/posts", json=body(), headers={**world.auth(), "Idempotency-Key": "k-1"})
    assert on_another_route.status_code == 422
    assert _rows(app) == 1


def test_a_key_whose_first_request_is_in_flight_is_a_409_until_the_in_flight_timeout(app, client, world, clock):
    raw = client.application.json.dumps(body()).encode()
    with app.app_context(), write_session() as session:
        token_id = session.scalar(select(ApiToken.id).where(ApiToken.user_id == world.users["admin"]))
        idempotency.begin(session, workspace_id=world.workspace_id, token_id=token_id, key="slow-1",
                          print_=idempotency.fingerprint("POST", "/api/v1/actions", raw), now=clock.now(),
                          policy=runtime().policy)
    busy = client.post("/api/v1/actions", data=raw, content_type="application/json",
                       headers={**world.auth(), "Idempotency-Key": "slow-1"})
    assert busy.status_code == 409 and busy.json["error"]["code"] == "idempotency_key_in_flight"
    assert _rows(app) == 0
    clock.advance(minutes=6)  # the first request's process died: its key is released
    assert client.post("/api/v1/actions", data=raw, content_type="application/json",
                       headers={**world.auth(), "Idempotency-Key": "slow-1"}).status_code == 201


def test_a_failed_first_request_releases_its_key(app, client, world):
    refused = _create(client, world, "fix-me", channel="nowhere")
    assert refused.status_code == 422
    assert _create(client, world, "fix-me").status_code == 201
    assert _rows(app) == 1


def test_keys_belong_to_their_token_and_expire(app, client, world, clock):
    assert _create(client, world, "shared", role="admin").status_code == 201
    assert _create(client, world, "shared", role="ops", thing_id="other").status_code == 201  # another token
    clock.advance(hours=25)
    later = _create(client, world, "shared", role="admin", publish_at="2026-06-02T14:00:00Z")
    assert later.status_code == 201 and "Idempotent-Replayed" not in later.headers
    assert _rows(app) == 3


def test_forget_keys_deletes_the_records_older_than_a_day(app, client, world, clock):
    from jobs.clock import forget_keys_once

    _create(client, world, "old")
    clock.advance(hours=23)
    _create(client, world, "young", publish_at="2026-06-02T14:00:00Z")
    clock.advance(hours=2)
    with app.app_context():
        assert forget_keys_once()["forgotten"] == 1
    with app.app_context(), read_session() as session:
        assert list(session.scalars(select(IdempotencyKey.key))) == ["young"]


def test_post_creation_honours_the_key_too(app, client, world):
    post = {"body": "Fresh bread", "targets": ["main"], "local_time": "2026-06-10T09:00"}
    headers = {**world.auth("marketer"), "Idempotency-Key": "post-1"}
    first, again = (client.post("/api/v1/posts", json=post, headers=headers) for _ in range(2))
    assert (first.status_code, again.status_code, again.headers.get("Idempotent-Replayed")) == (201, 201, "true")
    assert _rows(app, Post) == 1


# -- every create of the wings honours the key -------------------------------------------------

@pytest.fixture
def app_config(app_config):
    app_config["TICKWORK_BASE_URL"] = "https://tickwork.example"  # activating an email campaign needs it
    return app_config


def _id(response) -> int:
    assert response.status_code == 201, response.json
    return response.json["id"]


@pytest.fixture
def wing(app, client, world):
    """One of each object the wings' creates start from, made through the API."""
    admin = world.auth("admin")
    rule = _id(client.post("/api/v1/recurring", headers=admin, json={
        "action_type": "send_email", "channel": "main", "target_key": "ops@example.com", "payload": {},
        "rrule": "FREQ=DAILY", "starts_local": "2027-01-04T08:00"}))
    work = _id(client.post("/api/v1/works", headers=admin, json={"name": "Digest", "pipeline": "log"}))
    campaign = _id(client.post("/api/v1/campaigns", headers=admin, json={
        "name": "Onboarding", "channel": "main", "steps": [{"delay": "P1D", "subject": "Hi", "body": "Hello"}]}))
    assert client.post(f"/api/v1/campaigns/{campaign}/activate", headers=admin).status_code == 200
    contacts = [_id(client.post("/api/v1/contacts", headers=admin, json={"email": f"c{n}@example.com"}))
                for n in range(2)]
    dry = client.post(f"/api/v1/campaigns/{campaign}/enrollments.csv?dry_run=1", headers=admin,
                      data=b"email\nfrom-file@example.com\n", content_type="text/csv")
    assert dry.status_code == 200, dry.json
    return {"rule_id": rule, "work_id": work, "campaign_id": campaign, "contacts": contacts,
            "import_id": dry.json["import_id"]}


def _json(value) -> tuple[bytes, str]:
    return json.dumps(value).encode(), "application/json"


def _csv(text: str) -> tuple[bytes, str]:
    return text.encode(), "text/csv"


# (route, the request, another request, the table a create adds to)
WING_CREATES = {
    "a recurring rule": ("/api/v1/recurring", lambda w: _json({
        "action_type": "send_email", "channel": "main", "target_key": "team@example.com", "payload": {},
        "rrule": "FREQ=WEEKLY;BYDAY=MO", "starts_local": "2027-01-04T09:00"}),
        lambda w: _json({"action_type": "send_email", "channel": "main", "target_key": "other@example.com",
                         "payload": {}, "rrule": "FREQ=WEEKLY;BYDAY=MO", "starts_local": "2027-01-04T09:00"}),
        "RecurringSchedule"),
    "a rule's Run Now": ("/api/v1/recurring/{rule_id}/run", lambda w: (b"", "application/json"),
                         lambda w: _json({}), "ScheduledAction"),
    "a work": ("/api/v1/works", lambda w: _json({"name": "Weekly", "pipeline": "log"}),
               lambda w: _json({"name": "Monthly", "pipeline": "log"}), "Work"),
    "a work's Run Now": ("/api/works/{work_id}/schedule/run", lambda w: (b"", "application/json"),
                         lambda w: _json({}), "WorkRun"),
    "a campaign": ("/api/v1/campaigns", lambda w: _json({
        "name": "Welcome", "channel": "main", "steps": [{"delay": "PT0S", "subject": "Hi", "body": "Hello"}]}),
        lambda w: _json({"name": "Farewell", "channel": "main",
                         "steps": [{"delay": "PT0S", "subject": "Bye", "body": "Bye"}]}), "Campaign"),
    "a contact": ("/api/v1/contacts", lambda w: _json({"email": "grace@example.com"}),
                  lambda w: _json({"email": "alan@example.com"}), "Contact"),
    "an enrollment": ("/api/v1/campaigns/{campaign_id}/enrollments",
                      lambda w: _json({"contact_id": w["contacts"][0]}),
                      lambda w: _json({"contact_id": w["contacts"][1]}), "Enrollment"),
    "enrollments from a CSV file": ("/api/v1/campaigns/{campaign_id}/enrollments.csv",
                                    lambda w: _csv("email\nx@example.com\n"),
                                    lambda w: _csv("email\ny@example.com\n"), "Enrollment"),
    "a CSV import's commit": ("/api/v1/campaigns/{campaign_id}/imports/{import_id}/commit",
                              lambda w: (b"", "application/json"), lambda w: _json({}), "Enrollment"),
}


def _model(name: str):
    from models.drips.tables import Campaign, Contact, Enrollment
    from models.recurring.tables import RecurringSchedule
    from models.works.tables import Work, WorkRun

    return {"RecurringSchedule": RecurringSchedule, "ScheduledAction": ScheduledAction, "Work": Work,
            "WorkRun": WorkRun, "Campaign": Campaign, "Contact": Contact, "Enrollment": Enrollment}[name]


@pytest.mark.parametrize("what", list(WING_CREATES))
def test_each_wing_create_runs_once_per_key_refuses_the_key_for_another_request_and_while_in_flight(
        app, client, world, wing, what):
    route, request, other, table = WING_CREATES[what]
    url = route.format(**wing)
    model = _model(table)

    def send(key, made):
        data, content_type = made(wing)
        return client.post(url, data=data, content_type=content_type,
                           headers={**world.auth("admin"), "Idempotency-Key": key})

    before = _rows(app, model)
    first = send("wing-1", request)
    assert first.status_code in (200, 201, 202), first.json
    made = _rows(app, model)
    assert made > before
    again = send("wing-1", request)
    assert (again.status_code, again.json, again.headers.get("Idempotent-Replayed")) == (
        first.status_code, first.json, "true")
    reused = send("wing-1", other)
    assert (reused.status_code, reused.json["error"]["code"]) == (422, "idempotency_key_reused")
    assert _rows(app, model) == made

    data, _ = request(wing)
    with app.app_context(), write_session() as session:
        token_id = session.scalar(select(ApiToken.id).where(ApiToken.user_id == world.users["admin"]))
        idempotency.begin(session, workspace_id=world.workspace_id, token_id=token_id, key="wing-2",
                          print_=idempotency.fingerprint("POST", url, data), now=runtime().now(),
                          policy=runtime().policy)
    busy = send("wing-2", request)
    assert (busy.status_code, busy.json["error"]["code"]) == (409, "idempotency_key_in_flight")
    assert _rows(app, model) == made


def test_a_replayed_work_shows_its_secret_again_yet_the_kept_answer_holds_it_sealed(app, client, world):
    headers = {**world.auth("admin"), "Idempotency-Key": "work-1"}
    first = client.post("/api/v1/works", json={"name": "Site", "pipeline": "log"}, headers=headers)
    again = client.post("/api/v1/works", json={"name": "Site", "pipeline": "log"}, headers=headers)
    assert first.status_code == 201 and again.json["secret"] == first.json["secret"]
    with app.app_context(), read_session() as session:
        kept = session.scalar(select(IdempotencyKey.response_body).where(IdempotencyKey.key == "work-1"))
    assert kept["id"] == first.json["id"] and first.json["secret"] not in json.dumps(kept)


def test_a_dry_run_and_its_real_run_are_different_requests_for_a_key(app, client, world, wing):
    headers = {**world.auth("admin"), "Idempotency-Key": "csv-1"}
    url = f"/api/v1/campaigns/{wing['campaign_id']}/enrollments.csv"
    assert client.post(url + "?dry_run=1", data=b"email\nz@example.com\n", content_type="text/csv",
                       headers=headers).status_code == 200
    real = client.post(url, data=b"email\nz@example.com\n", content_type="text/csv", headers=headers)
    assert (real.status_code, real.json["error"]["code"]) == (422, "idempotency_key_reused")
