"""``/api/v1/actions``: the contract, every bad input (invariant 8), reschedule (invariant 4) and retry."""

import pytest
from sqlalchemy import func, select

from models.actions import lifecycle
from models.actions.tables import ActionEvent, FailureCode, ScheduledAction
from models.core.database import write_session
from models.core.moves import Actor
from tests.conftest import make_world
from tests.factories import add_action

JOB = Actor.job("test")


def body(**overrides):
    base = {"action_type": "send_email", "channel": "main", "target_key": "ada@example.com",
            "payload": {"subject": "Hello"}, "publish_at": "2026-06-01T14:00:00Z"}
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not None}


def counts(app):
    with app.app_context(), write_session() as session:
        return (session.scalar(select(func.count()).select_from(ScheduledAction)),
                session.scalar(select(func.count()).select_from(ActionEvent)))


def create(client, world, role="admin", headers=None, **overrides):
    return client.post("/api/v1/actions", json=body(**overrides), headers={**world.auth(role), **(headers or {})})


def test_create_with_publish_at_answers_201_with_the_row_in_utc(client, world):
    answer = create(client, world, publish_at="2026-06-01T16:30:00+02:00")
    assert answer.status_code == 201
    row = answer.json
    assert row["publish_at"] == "2026-06-01T14:30:00Z"
    assert (row["status"], row["channel"], row["attempt_count"], row["origin"]) == ("queued", "main", 0, "person")


def test_create_with_local_time_resolves_in_the_workspace_zone(client, world):
    answer = create(client, world, publish_at=None, local_time="2026-06-02T09:00")
    assert answer.status_code == 201
    assert answer.json["publish_at"] == "2026-06-02T13:00:00Z"  # New York is UTC-4 in June
    assert "note" not in answer.json


def test_create_in_a_spring_forward_gap_says_it_moved_the_time(client, world, clock):
    clock.set(clock.now().replace(year=2027, month=3, day=1))
    answer = create(client, world, publish_at=None, local_time="2027-03-14T02:30")
    assert answer.status_code == 201
    assert answer.json["publish_at"] == "2027-03-14T07:30:00Z"
    assert "does not exist" in answer.json["note"]


BAD_INPUTS = [
    ("malformed json", dict(data="{not json", content_type="application/json"), 400, None),
    ("json that is not an object", dict(json=[1, 2]), 400, None),
    ("missing action_type", dict(json=body(action_type=None)), 422, "action_type"),
    ("action_type of the wrong type", dict(json=body(action_type=7)), 422, "action_type"),
    ("missing channel", dict(json=body(channel=None)), 422, "channel"),
    ("unknown channel", dict(json=body(channel="nope")), 422, "channel"),
    ("missing target_key", dict(json=body(target_key=None)), 422, "target_key"),
    ("empty target_key", dict(json=body(target_key="  ")), 422, "target_key"),
    ("missing payload", dict(json=body(payload=None)), 422, "payload"),
    ("payload that is not an object", dict(json=body(payload="hi")), 422, "payload"),
    ("payload over 64 KiB", dict(json=body(payload={"x": "a" * (64 * 1024)})), 413, "payload"),
    ("no time at all", dict(json=body(publish_at=None)), 422, "publish_at"),
    ("both times", dict(json=body(local_time="2026-06-02T09:00")), 422, "local_time"),
    ("publish_at without an offset", dict(json=body(publish_at="2026-06-01T14:00:00")), 422, "publish_at"),
    ("publish_at that is not a date", dict(json=body(publish_at="tomorrow")), 422, "publish_at"),
    ("publish_at on February 30th", dict(json=body(publish_at="2026-02-30T10:00:00Z")), 422, "publish_at"),
    ("publish_at as a number", dict(json=body(publish_at=1780000000)), 422, "publish_at"),
    ("publish_at more than 5 minutes ago", dict(json=body(publish_at="2026-06-01T11:54:00Z")), 422, "publish_at"),
    ("local_time that does not parse", dict(json=body(publish_at=None, local_time="9am Tuesday")), 422, "local_time"),
    ("local_time at 25:00", dict(json=body(publish_at=None, local_time="2026-06-02T25:00")), 422, "local_time"),
    ("thing_id of the wrong type", dict(json=body(thing_id=12)), 422, "thing_id"),
    ("target_key with a NUL character", dict(json=body(target_key="a\x00b")), 422, "target_key"),
    ("publish_at past year 9999 in UTC", dict(json=body(publish_at="9999-12-31T23:00:00-05:00")), 422, "publish_at"),
    ("local_time past year 9999 in UTC", dict(json=body(publish_at=None, local_time="9999-12-31T23:00")), 422,
     "local_time"),
]


@pytest.mark.parametrize("label, request_kwargs, status, field", BAD_INPUTS, ids=[case[0] for case in BAD_INPUTS])
def test_every_bad_input_is_a_4xx_json_error_naming_the_field_and_changes_nothing(
        app, client, world, label, request_kwargs, status, field):
    before = counts(app)
    answer = client.post("/api/v1/actions", headers=world.auth(), **request_kwargs)
    assert answer.status_code == status, answer.data
    assert answer.is_json and set(answer.json) == {"error"}
    assert answer.json["error"]["code"] and answer.json["error"]["message"]
    if field:
        assert answer.json["error"]["field"] == field
    assert counts(app) == before


def test_a_publish_at_within_the_5_minute_tolerance_is_accepted(client, world):
    assert create(client, world, publish_at="2026-06-01T11:56:00Z").status_code == 201


def test_a_garbage_zone_stored_behind_the_apps_back_is_a_4xx_not_a_crash(app, client, world):
    from sqlalchemy import text

    with app.app_context(), write_session() as session:
        session.execute(text("UPDATE workspaces SET timezone = 'Not/AZone' WHERE id = :id"), {"id": world.workspace_id})
    answer = create(client, world, publish_at=None, local_time="2026-06-02T09:00")
    assert answer.status_code == 422 and answer.json["error"]["field"] == "timezone"


@pytest.mark.parametrize("headers, code", [({}, 401), ({"Authorization": "Bearer nope"}, 401),
                                           ({"Authorization": "Basic abc"}, 401)])
def test_requests_without_a_valid_token_are_401_json(client, headers, code):
    answer = client.get("/api/v1/actions", headers=headers)
    assert answer.status_code == code and answer.json["error"]["code"] == "unauthorized"


@pytest.mark.parametrize("action_id", [2**31, 10**20])
def test_an_id_past_the_integer_range_is_a_404_not_a_crash(client, world, action_id):
    assert client.get(f"/api/v1/actions/{action_id}", headers=world.auth()).status_code == 404
    assert client.post(f"/api/v1/actions/{action_id}/cancel", headers=world.auth()).status_code == 404


def test_an_unknown_api_path_is_a_json_404(client, world):
    answer = client.get("/api/v1/nothing-here", headers=world.auth())
    assert answer.status_code == 404 and answer.is_json


def test_a_second_active_row_for_the_same_thing_and_target_is_a_409_naming_it(client, world):
    first = create(client, world, thing_id="post-9")
    second = create(client, world, thing_id="post-9", publish_at="2026-06-03T10:00:00Z")
    assert second.status_code == 409
    assert second.json["error"]["code"] == "duplicate_active"
    assert second.json["error"]["existing_id"] == first.json["id"]


def test_an_active_row_beside_a_published_sibling_is_a_409_from_the_guard(app, client, world, clock):
    published = add_action(app, world, thing_id="post-9", target_key="ada@example.com", publish_at=clock.now())
    with app.app_context(), write_session() as session:
        token = lifecycle.claim(session, published, now=clock.now(), actor=JOB).row.claim_token
        lifecycle.publish(session, published, claim_token=token, provider_id="p", now=clock.now(), actor=JOB)
    answer = create(client, world, thing_id="post-9")
    assert answer.status_code == 409 and answer.json["error"]["code"] == "already_published"


def test_list_filters_from_and_to_given_with_offsets_select_the_right_rows(client, world):
    for hour in (13, 14, 15, 16):
        assert create(client, world, publish_at=f"2026-06-01T{hour}:00:00Z", target_key=f"t{hour}").status_code == 201
    # 10:00-04:00 is 14:00Z; 17:00+02:00 is 15:00Z: from inclusive, to exclusive.
    answer = client.get("/api/v1/actions", query_string={"from": "2026-06-01T10:00:00-04:00",
                                                          "to": "2026-06-01T17:00:00+02:00"}, headers=world.auth())
    assert answer.status_code == 200
    assert [row["publish_at"] for row in answer.json["actions"]] == ["2026-06-01T14:00:00Z"]


def test_list_pages_through_every_row_in_publish_at_then_id_order(client, world):
    made = [create(client, world, publish_at=f"2026-06-0{2 + i % 3}T10:00:00Z", target_key=f"t{i}").json["id"]
            for i in range(7)]
    seen, cursor = [], None
    while True:
        query = {"limit": 3, **({"cursor": cursor} if cursor else {})}
        page = client.get("/api/v1/actions", query_string=query, headers=world.auth()).json
        seen.extend((row["publish_at"], row["id"]) for row in page["actions"])
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert seen == sorted(seen) and sorted(i for _, i in seen) == sorted(made)


@pytest.mark.parametrize("query, field", [({"status": "nope"}, "status"), ({"from": "yesterday"}, "from"),
                                          ({"limit": "0"}, "limit"), ({"limit": "x"}, "limit"),
                                          ({"cursor": "!!!"}, "cursor"),
                                          ({"from": "0001-01-01T00:00:00+05:00"}, "from"),
                                          # "9999-12-31T23:00:00-05:00|99999999999999999999", which overflows
                                          ({"cursor": "OTk5OS0xMi0zMVQyMzowMDowMC0wNTowMHw5OTk5OTk5OTk5OTk5OTk5OTk5OTk5"},
                                           "cursor"),
                                          ({"from": "2026-06-02T00:00:00Z", "to": "2026-06-01T00:00:00Z"}, "to")])
def test_bad_list_filters_are_4xx_naming_the_field(client, world, query, field):
    answer = client.get("/api/v1/actions", query_string=query, headers=world.auth())
    assert 400 <= answer.status_code < 500 and answer.json["error"]["field"] == field


def test_list_filters_by_status(client, world):
    keep = create(client, world, target_key="a").json["id"]
    gone = create(client, world, target_key="b").json["id"]
    client.post(f"/api/v1/actions/{gone}/cancel", headers=world.auth())
    answer = client.get("/api/v1/actions?status=queued", headers=world.auth())
    assert [row["id"] for row in answer.json["actions"]] == [keep]


def test_get_shows_the_row_with_its_events(client, world):
    made = create(client, world).json
    client.post(f"/api/v1/actions/{made['id']}/cancel", headers=world.auth())
    shown = client.get(f"/api/v1/actions/{made['id']}", headers=world.auth()).json
    assert [(e["from"], e["to"]) for e in shown["events"]] == [(None, "queued"), ("queued", "cancelled")]
    assert shown["events"][1]["actor"] == "api:admin@acme.test"


def test_another_workspaces_row_is_a_404_for_every_verb(app, client, world):
    other = make_world(app, name="Globex", zone="Europe/Paris")
    theirs = create(client, other).json["id"]
    for method, path in [("get", ""), ("post", "/cancel"), ("post", "/retry")]:
        answer = getattr(client, method)(f"/api/v1/actions/{theirs}{path}", headers=world.auth())
        assert answer.status_code == 404, path
    answer = client.post(f"/api/v1/actions/{theirs}/reschedule", json={"publish_at": "2026-06-05T10:00:00Z"},
                         headers=world.auth())
    assert answer.status_code == 404
    assert client.get("/api/v1/actions", headers=world.auth()).json["actions"] == []


def test_cancel_twice_is_200_then_200(client, world):
    made = create(client, world).json["id"]
    first = client.post(f"/api/v1/actions/{made}/cancel", headers=world.auth())
    second = client.post(f"/api/v1/actions/{made}/cancel", headers=world.auth())
    assert (first.status_code, second.status_code) == (200, 200)
    assert second.json["status"] == "cancelled" and second.json["cancel_kind"] == "person"


def test_cancel_past_queued_is_409(app, client, world, clock):
    made = add_action(app, world, publish_at=clock.now())
    with app.app_context(), write_session() as session:
        lifecycle.claim(session, made, now=clock.now(), actor=JOB)
    answer = client.post(f"/api/v1/actions/{made}/cancel", headers=world.auth())
    assert answer.status_code == 409 and answer.json["error"]["code"] == "wrong_state"


def test_reschedule_leaves_the_old_row_cancelled_and_the_new_one_pointing_to_it(client, world):
    old = create(client, world).json["id"]
    answer = client.post(f"/api/v1/actions/{old}/reschedule", json={"local_time": "2026-06-03T08:15"},
                         headers=world.auth("ops"))
    assert answer.status_code == 201
    new = answer.json
    assert new["rescheduled_from"] == old and new["publish_at"] == "2026-06-03T12:15:00Z" and new["id"] != old
    old_row = client.get(f"/api/v1/actions/{old}", headers=world.auth()).json
    assert (old_row["status"], old_row["cancel_kind"], old_row["publish_at"]) == (
        "cancelled", "rescheduled", "2026-06-01T14:00:00Z")


def test_a_double_reschedule_mints_one_new_row(app, client, world):
    old = create(client, world).json["id"]
    first = client.post(f"/api/v1/actions/{old}/reschedule", json={"publish_at": "2026-06-05T10:00:00Z"},
                        headers=world.auth())
    second = client.post(f"/api/v1/actions/{old}/reschedule", json={"publish_at": "2026-06-06T10:00:00Z"},
                         headers=world.auth())
    assert (first.status_code, second.status_code) == (201, 409)
    assert counts(app)[0] == 2


def test_reschedule_with_a_bad_time_changes_nothing(app, client, world):
    old = create(client, world).json["id"]
    before = counts(app)
    for bad in ({}, {"publish_at": "soon"}, {"publish_at": "2020-01-01T00:00:00Z"}):
        answer = client.post(f"/api/v1/actions/{old}/reschedule", json=bad, headers=world.auth())
        assert 400 <= answer.status_code < 500
    assert counts(app) == before


def test_reschedule_needs_the_ops_role(client, world):
    old = create(client, world).json["id"]
    answer = client.post(f"/api/v1/actions/{old}/reschedule", json={"publish_at": "2026-06-05T10:00:00Z"},
                         headers=world.auth("marketer"))
    assert answer.status_code == 403


def _failed_via_api(app, client, world, clock):
    made = create(client, world, publish_at="2026-06-01T12:00:00Z").json["id"]
    with app.app_context(), write_session() as session:
        token = lifecycle.claim(session, made, now=clock.now(), actor=JOB).row.claim_token
        lifecycle.fail(session, made, claim_token=token, code=FailureCode.PERMANENT, message="bad recipient",
                       now=clock.now(), actor=JOB)
    return made


@pytest.mark.parametrize("role", ["ops", "marketer"])
def test_retry_as_a_non_admin_is_403_and_changes_nothing(app, client, world, clock, role):
    made = _failed_via_api(app, client, world, clock)
    answer = client.post(f"/api/v1/actions/{made}/retry", headers=world.auth(role))
    assert answer.status_code == 403 and answer.json["error"]["code"] == "forbidden"
    assert client.get(f"/api/v1/actions/{made}", headers=world.auth()).json["status"] == "failed"


def test_retry_as_admin_requeues_the_same_row_due_now(app, client, world, clock):
    made = _failed_via_api(app, client, world, clock)
    answer = client.post(f"/api/v1/actions/{made}/retry", headers=world.auth("admin"))
    assert answer.status_code == 200
    assert (answer.json["id"], answer.json["status"], answer.json["last_error"]) == (made, "queued", None)
    assert answer.json["next_attempt_at"] == "2026-06-01T12:00:00Z"


def test_retry_of_a_row_that_is_not_failed_is_409(client, world):
    made = create(client, world).json["id"]
    assert client.post(f"/api/v1/actions/{made}/retry", headers=world.auth()).status_code == 409


def test_retry_beside_another_active_row_for_the_same_key_is_409_not_a_crash(app, client, world, clock):
    failed = _failed_via_api(app, client, world, clock)
    with app.app_context(), write_session() as session:
        session.execute(ScheduledAction.__table__.update().where(ScheduledAction.id == failed)
                        .values(thing_id="post-7"))
    assert create(client, world, thing_id="post-7").status_code == 201
    answer = client.post(f"/api/v1/actions/{failed}/retry", headers=world.auth())
    assert answer.status_code == 409 and answer.json["error"]["code"] == "duplicate_active"
    assert client.get(f"/api/v1/actions/{failed}", headers=world.auth()).json["status"] == "failed"
