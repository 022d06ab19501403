"""``/api/v1/recurring``: bad input is a clear 4xx naming the field and changes nothing; occurrences; reading.

T0 is 2026-06-01T12:00Z, a Monday, 08:00 in the world's zone (America/New_York).
"""

import pytest
from sqlalchemy import func, select

from models.actions.tables import ScheduledAction
from models.core.database import read_session
from models.recurring.tables import RecurringSchedule
from tests.integration.recurring_helpers import call, make_rule, patch, queued, stored_rule

GOOD = {"action_type": "send_email", "channel": "main", "target_key": "list@example.test",
        "payload": {"subject": "Digest"}, "rrule": "FREQ=DAILY", "starts_local": "2026-06-01T09:00"}
# How long each check of a rule takes (about 200 ms at most, impossible rules included) is measured by
# bench/recurrence.py, beside a baseline of the same run, not asserted here: the box's speed drifts.

BAD = [
    # (what changes in a good body, status, field, code)
    ({"rrule": "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30"}, 422, "rrule", "no_occurrences"),
    ({"rrule": "FREQ=DAILY;INTERVAL=7;BYDAY=MO", "starts_local": "2026-06-02T09:00"}, 422, "rrule", "no_occurrences"),
    ({"rrule": "FREQ=MONTHLY;BYDAY=MO;BYMONTHDAY=1,2,3;BYSETPOS=5"}, 422, "rrule", "no_occurrences"),
    ({"rrule": "FREQ=MINUTELY"}, 422, "rrule", "too_frequent"),
    ({"rrule": "every tuesday at nine"}, 422, "rrule", "unparsable"),
    ({"rrule": "FREQ=HOURLY"}, 422, "rrule", "too_many_per_day"),  # 24 a day; this app allows 12
    ({"rrule": "FREQ=DAILY;COUNT=3;UNTIL=20261231"}, 422, "rrule", "count_and_until"),
    ({"rrule": "FREQ=DAILY;BYHOUR=9"}, 422, "rrule", "time_of_day_part"),
    ({"rrule": "FREQ=DAILY;" + "X" * 10_000}, 422, "rrule", "too_long"),
    ({"rrule": 42}, 422, "rrule", "wrong_type"),
    ({"rrule": "FREQ=DAILY;COUNT=3", "starts_local": "2025-01-01T09:00"}, 422, "rrule", "no_future_occurrence"),
    ({"rrule": "FREQ=DAILY;COUNT=3", "ends_local": "2026-07-01T09:00"}, 422, "ends_local", "end_given_twice"),
    ({"ends_local": "2026-05-01T09:00"}, 422, "ends_local", "ends_before_start"),
    ({"starts_local": "2026-02-30T09:00"}, 422, "starts_local", "bad_time"),
    ({"starts_local": "next Tuesday"}, 422, "starts_local", "bad_time"),
    ({"starts_local": None}, 422, "starts_local", "missing"),
    ({"exdates_local": "2026-06-02"}, 422, "exdates_local", "wrong_type"),
    ({"exdates_local": ["2 June"]}, 422, "exdates_local", "bad_date"),
    ({"misfire": "sometimes"}, 422, "misfire", "bad_misfire"),
    ({"channel": "nope"}, 422, "channel", "unknown_channel"),
    ({"action_type": 7}, 422, "action_type", "wrong_type"),
    ({"target_key": ""}, 422, "target_key", "missing"),
    ({"payload": "hello"}, 422, "payload", "wrong_type"),
    ({"payload": {"subject": "{{ occurrence.secret }}"}}, 422, "payload", "bad_placeholder"),
    ({"payload": {"subject": "{{ occurrence.local_date * 99999999 }}"}}, 422, "payload", "bad_placeholder"),
    ({"payload": {"body": "x" * 70_000}}, 413, "payload", "payload_too_large"),
    ({"every": "tuesday"}, 422, "every", "unknown_field"),
]


@pytest.fixture
def app_config(app_config):
    app_config["TICKWORK_POLICY"] = {"recurring_max_per_day": 12}
    return app_config


def _counts(app) -> tuple[int, int]:
    with app.app_context(), read_session() as session:
        return (session.scalar(select(func.count()).select_from(RecurringSchedule)),
                session.scalar(select(func.count()).select_from(ScheduledAction)))


def test_every_broken_rule_or_field_is_a_4xx_naming_the_field_and_stores_nothing(client, app, world):
    before = _counts(app)
    for change, status, field, code in BAD:
        body = {**GOOD, **change}
        answer = client.post("/api/v1/recurring", headers=world.auth(), json=body)
        assert answer.status_code == status, (change, answer.json)
        error = answer.json["error"]
        assert (error["field"], error["code"]) == (field, code), (change, error)
        assert error["message"], change
        assert _counts(app) == before, change
    not_json = client.post("/api/v1/recurring", headers=world.auth(), data="{not json",
                           content_type="application/json")
    assert not_json.status_code == 400 and not_json.json["error"]["code"] == "invalid_json"
    assert _counts(app) == before


def test_a_bad_edit_or_note_changes_nothing(client, app, world):
    rule = make_rule(client, world)["id"]
    before = ([(r.id, r.status) for r in queued(app, rule)], stored_rule(app, rule).revision)
    for body, field in (({"rrule": "FREQ=SECONDLY"}, "rrule"), ({"starts_local": "2026-06-01 09:00"}, "starts_local"),
                        ({"payload": ["a"]}, "payload"), ({"revision": "one", "misfire": "skip"}, "revision"),
                        ({"status": "ended"}, "status")):
        answer = client.patch(f"/api/v1/recurring/{rule}", headers=world.auth(), json=body)
        assert answer.status_code == 422 and answer.json["error"]["field"] == field, (body, answer.json)
    assert client.patch(f"/api/v1/recurring/{rule}", headers=world.auth(), json={}).status_code == 422
    long_note = client.post(f"/api/v1/recurring/{rule}/pause", headers=world.auth(), json={"note": "x" * 501})
    assert long_note.status_code == 422 and long_note.json["error"]["field"] == "note"
    assert ([(r.id, r.status) for r in queued(app, rule)], stored_rule(app, rule).revision) == before
    assert client.get("/api/v1/recurring/999999", headers=world.auth()).status_code == 404
    assert client.post("/api/v1/recurring/999999/pause", headers=world.auth()).status_code == 404


def test_occurrences_come_with_their_instant_wall_time_and_dst_note(client, app, world, clock):
    from datetime import datetime, timezone

    clock.set(datetime(2026, 10, 25, 12, 0, tzinfo=timezone.utc))
    rule = make_rule(client, world, starts_local="2026-10-25T01:30")
    assert len(rule["next_occurrences"]) == 10
    listed = client.get(f"/api/v1/recurring/{rule['id']}/occurrences?count=8", headers=world.auth()).json
    assert listed["occurrences"][6] == {"at": "2026-11-01T05:30:00Z", "local": "2026-11-01T01:30:00-04:00",
                                        "note": "first_of_repeated_hour"}
    assert listed["occurrences"][7] == {"at": "2026-11-02T06:30:00Z", "local": "2026-11-02T01:30:00-05:00",
                                        "note": None}
    half_two = make_rule(client, world, starts_local="2026-10-25T02:30", target_key="b@example.test")["id"]
    spring = client.get(f"/api/v1/recurring/{half_two}/occurrences?count=2&after=2027-03-13T12:00:00Z",
                        headers=world.auth()).json["occurrences"]
    assert spring[0] == {"at": "2027-03-14T07:30:00Z", "local": "2027-03-14T03:30:00-04:00",
                         "note": "shifted_by_dst_gap"}
    many = client.get(f"/api/v1/recurring/{rule['id']}/occurrences?count=500", headers=world.auth()).json
    assert len(many["occurrences"]) == 500
    for query, field in (("count=0", "count"), ("count=501", "count"), ("count=ten", "count"),
                         ("after=yesterday", "after"), ("after=2026-13-01T00:00:00Z", "after")):
        answer = client.get(f"/api/v1/recurring/{rule['id']}/occurrences?{query}", headers=world.auth())
        assert answer.status_code == 422 and answer.json["error"]["field"] == field, query


def test_a_rule_reads_back_with_its_rows_last_runs_and_history(client, app, world, clock):
    from tests.integration.clock_helpers import tick

    created = make_rule(client, world, exdates_local=["2026-06-03", "2026-06-04T09:00"],
                        payload={"subject": "On {{occurrence.local_date}} at {{ occurrence.local_time }}"})
    assert created["status"] == "active" and created["description"] == "every day at 09:00"
    assert created["exdates_local"] == ["2026-06-03", "2026-06-04T09:00"]
    assert [o["at"][:10] for o in created["next_occurrences"][:4]] == [
        "2026-06-01", "2026-06-02", "2026-06-05", "2026-06-06"]
    clock.advance(days=1, hours=1, seconds=5)
    tick(app)
    shown = client.get(f"/api/v1/recurring/{created['id']}", headers=world.auth()).json
    assert [(run["at"], run["action"]["status"]) for run in shown["last_runs"]] == [
        ("2026-06-02T13:00:00Z", "published"), ("2026-06-01T13:00:00Z", "failed")]  # a day late: skipped
    assert shown["last_runs"][0]["action"]["payload"] == {"subject": "On 2026-06-02 at 09:00"}
    assert {a["status"] for a in shown["actions"]} == {"queued"} and len(shown["actions"]) == 10
    assert shown["events"][0]["reason"] == "created"
    listed = client.get("/api/v1/recurring?status=active&limit=1", headers=world.auth()).json
    assert [r["id"] for r in listed["rules"]] == [created["id"]] and listed["next_cursor"] is None
    second = make_rule(client, world, target_key="b@example.test")
    page = client.get("/api/v1/recurring?limit=1", headers=world.auth()).json
    assert page["next_cursor"] == str(created["id"])
    rest = client.get(f"/api/v1/recurring?limit=1&cursor={page['next_cursor']}", headers=world.auth()).json
    assert [r["id"] for r in rest["rules"]] == [second["id"]]
    for query in ("status=zzz", "cursor=abc", "limit=0"):
        assert client.get(f"/api/v1/recurring?{query}", headers=world.auth()).status_code == 422, query


def test_another_workspaces_rules_are_not_found(client, app, world):
    from tests.conftest import make_world

    other = make_world(app, name="Globex")
    theirs = make_rule(client, other)["id"]
    assert client.get(f"/api/v1/recurring/{theirs}", headers=world.auth()).status_code == 404
    for verb in ("pause", "resume", "end", "run"):
        assert client.post(f"/api/v1/recurring/{theirs}/{verb}", headers=world.auth()).status_code == 404
    assert client.patch(f"/api/v1/recurring/{theirs}", headers=world.auth(), json={"misfire": "skip"}).status_code == 404
    assert call(client, other, theirs, "pause")["status"] == "paused"
    assert patch(client, other, theirs, misfire="fire_once")["misfire"] == "fire_once"
