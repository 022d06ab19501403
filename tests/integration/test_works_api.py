"""Work schedules over the API, at the seed's paths (FR-1, FR-2, FR-12), and works under /api/v1, on both databases."""

from datetime import datetime, timezone

from models.works.tables import WorkSchedule, WorkUsage
from tests.integration.works_helpers import (
    TEST_BASE_URL,
    Dispatcher,
    count,
    create_work,
    put_schedule,
    runs,
    schedule_row,
    scheduled_work,
    set_plan,
    usage_rows,
)

UTC = timezone.utc
# T0 is 2026-06-01 12:00 UTC, 08:00 in New York. A work never generated runs one cadence after its schedule is
# enabled; the helper's calendar schedules name 09:00, whose first slot is 13:00Z today.
FIRST_SLOT = "2026-06-01T13:00:00Z"
ONE_CADENCE_AFTER_T0 = {"hourly": "2026-06-01T13:00:00Z", "every_3_hours": "2026-06-01T15:00:00Z",
                        "every_8_hours": "2026-06-01T20:00:00Z", "every_12_hours": "2026-06-02T00:00:00Z",
                        "daily": "2026-06-02T12:00:00Z", "weekly": "2026-06-08T12:00:00Z",
                        "monthly": "2026-07-01T12:00:00Z"}
SEVEN = ["hourly", "every_3_hours", "every_8_hours", "every_12_hours", "daily", "weekly", "monthly"]


def test_fr1_get_put_delete_and_run_are_served_at_the_seeds_paths(client, world):
    work_id = create_work(client, world)
    assert client.get(f"/api/works/{work_id}/schedule", headers=world.auth("ops")).json["status"] == "disabled"
    created = put_schedule(client, world, work_id, cadence="weekly", maxFailureBeforePause=4)
    assert created.status_code == 201
    assert {key: created.json[key] for key in ("status", "cadence", "nextRunAt", "billingMode",
                                               "maxFailureBeforePause", "failureCount", "providerOverrides")} == {
        "status": "active", "cadence": "weekly", "nextRunAt": ONE_CADENCE_AFTER_T0["weekly"],
        "billingMode": "subscription", "maxFailureBeforePause": 4, "failureCount": 0, "providerOverrides": {}}
    assert client.get(f"/api/works/{work_id}/schedule", headers=world.auth("ops")).json["cadence"] == "weekly"
    ran = client.post(f"/api/works/{work_id}/schedule/run", headers=world.auth("ops"))
    assert ran.status_code == 202 and ran.json["run"]["kind"] == "manual"
    assert ran.json["schedule"]["nextRunAt"] == ONE_CADENCE_AFTER_T0["weekly"]
    deleted = client.delete(f"/api/works/{work_id}/schedule", headers=world.auth("ops"))
    assert deleted.status_code == 200 and deleted.json["status"] == "canceled"


def test_fr2_ac1_all_seven_cadence_values_are_accepted_and_a_work_never_generated_runs_one_cadence_after_enabling(
        app, client, world):
    set_plan(app, world.workspace_id, "business")
    for cadence in SEVEN:
        work_id = create_work(client, world, name=f"every {cadence}")
        answer = put_schedule(client, world, work_id, cadence=cadence)
        assert answer.status_code == 201, (cadence, answer.json)
        assert (answer.json["cadence"], answer.json["status"], answer.json["nextRunAt"]) == (
            cadence, "active", ONE_CADENCE_AFTER_T0[cadence])
        grid = answer.json["grid"]
        elapsed = cadence in SEVEN[:4]
        assert (grid["anchorAt"] is not None, grid["anchorLocal"] is not None) == (elapsed, not elapsed)
        if not elapsed:
            assert grid["anchorLocal"] == "2026-06-01T08:00"
    assert count(app, WorkSchedule) == 7


def test_the_grid_survives_dst_and_month_ends_through_the_dispatcher(app, client, world, clock):
    """Monthly anchored on 31 January of a leap year: 29 February, then 31 March (the wall time kept
    across the change to summer time); daily keeps 09:00 local across the same change."""
    set_plan(app, world.workspace_id, "business")
    clock.set(datetime(2028, 1, 31, 13, 30, tzinfo=UTC))  # 08:30 EST
    monthly = scheduled_work(client, world, cadence="monthly")
    daily = scheduled_work(client, world, cadence="daily")
    assert schedule_row(app, monthly).next_run_at == datetime(2028, 1, 31, 14, 0, tzinfo=UTC)
    dispatcher = Dispatcher(app)
    seen = []
    for at in (datetime(2028, 1, 31, 14, 0, 30, tzinfo=UTC), datetime(2028, 2, 29, 14, 1, tzinfo=UTC),
               datetime(2028, 3, 31, 13, 1, tzinfo=UTC)):
        clock.set(at)
        dispatcher.pass_()
        seen.append(schedule_row(app, monthly).next_run_at)
    assert seen == [datetime(2028, 2, 29, 14, 0, tzinfo=UTC), datetime(2028, 3, 31, 13, 0, tzinfo=UTC),
                    datetime(2028, 4, 30, 13, 0, tzinfo=UTC)]
    assert [run.slot for run in runs(app, monthly)] == [datetime(2028, 1, 31, 14, 0, tzinfo=UTC),
                                                        datetime(2028, 2, 29, 14, 0, tzinfo=UTC),
                                                        datetime(2028, 3, 31, 13, 0, tzinfo=UTC)]
    # 09:00 EST is 14:00 UTC; from 12 March 2028 09:00 EDT is 13:00 UTC.
    assert schedule_row(app, daily).next_run_at == datetime(2028, 4, 1, 13, 0, tzinfo=UTC)


def test_put_creates_then_updates_and_omitted_fields_keep_their_values(client, world):
    work_id = create_work(client, world)
    put_schedule(client, world, work_id, cadence="daily", billingMode="usage", maxFailureBeforePause=5)
    answer = put_schedule(client, world, work_id, maxFailureBeforePause=2)
    assert answer.status_code == 200
    assert (answer.json["cadence"], answer.json["billingMode"], answer.json["maxFailureBeforePause"],
            answer.json["nextRunAt"]) == ("daily", "usage", 2, ONE_CADENCE_AFTER_T0["daily"])


def test_saving_an_active_schedule_without_a_new_cadence_keeps_next_run_at_and_a_new_cadence_moves_it(
        client, world, clock):
    work_id = scheduled_work(client, world, cadence="daily", billingMode="usage")
    clock.advance(minutes=75)  # 09:15 local: a new grid, never generated, starts one cadence from now
    assert put_schedule(client, world, work_id, billingMode="usage").json["nextRunAt"] == FIRST_SLOT
    moved = put_schedule(client, world, work_id, cadence="hourly")
    assert (moved.json["nextRunAt"], moved.json["grid"]["anchorAt"]) == ("2026-06-01T14:15:00Z",
                                                                        "2026-06-01T13:15:00Z")


def test_enable_false_pauses_and_re_enabling_resets_failures_and_keeps_the_grid(app, client, world, clock):
    work_id = scheduled_work(client, world, cadence="daily", settings={"fail": "no network"})
    clock.set(datetime(2026, 6, 1, 13, 0, 30, tzinfo=UTC))
    Dispatcher(app).pass_()
    assert schedule_row(app, work_id).failure_count == 1
    paused = put_schedule(client, world, work_id, enable=False)
    assert paused.json["status"] == "paused" and paused.json["failureCount"] == 1
    clock.set(datetime(2026, 6, 3, 15, 20, tzinfo=UTC))
    resumed = put_schedule(client, world, work_id, enable=True)
    # The 09:00 grid's next slot after now; the slots missed while paused are not caught up.
    assert (resumed.json["status"], resumed.json["failureCount"], resumed.json["nextRunAt"]) == (
        "active", 0, "2026-06-04T13:00:00Z")
    assert resumed.json["grid"]["anchorLocal"] == "2026-06-01T09:00"


def test_delete_cancels_keeps_the_row_and_its_runs_and_a_later_put_enable_reactivates_it(app, client, world):
    work_id = scheduled_work(client, world)
    client.post(f"/api/works/{work_id}/schedule/run", headers=world.auth("ops"))
    assert client.delete(f"/api/works/{work_id}/schedule", headers=world.auth("ops")).json["status"] == "canceled"
    assert client.delete(f"/api/works/{work_id}/schedule", headers=world.auth("ops")).status_code == 200
    assert schedule_row(app, work_id).status == "canceled" and len(runs(app, work_id)) == 1
    refused = put_schedule(client, world, work_id, enable=False)
    assert refused.status_code == 409 and refused.json["error"]["field"] == "enable"
    ran = client.post(f"/api/works/{work_id}/schedule/run", headers=world.auth("ops"))
    assert (ran.status_code, ran.json["run"]["kind"], ran.json["run"]["billing_mode"]) == (202, "manual", "usage")
    assert [row.kind for row in usage_rows(app, work_id)] == ["manual"]  # a canceled schedule's run is billed by use
    assert put_schedule(client, world, work_id, enable=True).json["status"] == "active"


def _bad_bodies():
    big = {f"k{i}": i for i in range(30)}
    return [
        ({"cadence": "fortnightly"}, 422, "cadence", "bad_cadence"),
        ({"cadence": "Daily"}, 422, "cadence", "bad_cadence"),
        ({"cadence": None}, 422, "cadence", "bad_cadence"),
        ({"cadence": 7}, 422, "cadence", "bad_cadence"),
        ({"enable": "yes"}, 422, "enable", "wrong_type"),
        ({"enable": None}, 422, "enable", "wrong_type"),
        ({"billingMode": "free"}, 422, "billingMode", "bad_billing_mode"),
        ({"maxFailureBeforePause": 0}, 422, "maxFailureBeforePause", "out_of_range"),
        ({"maxFailureBeforePause": 11}, 422, "maxFailureBeforePause", "out_of_range"),
        ({"maxFailureBeforePause": "3"}, 422, "maxFailureBeforePause", "out_of_range"),
        ({"maxFailureBeforePause": True}, 422, "maxFailureBeforePause", "out_of_range"),
        ({"providerOverrides": ["search"]}, 422, "providerOverrides", "wrong_type"),
        ({"providerOverrides": {"video": "log"}}, 422, "providerOverrides.video", "unknown_capability"),
        ({"providerOverrides": {"search": "nope"}}, 422, "providerOverrides.search", "plugin_not_installed"),
        ({"providerOverrides": {"search": "log"}}, 422, "providerOverrides.search", "wrong_capability"),
        ({"providerOverrides": {"search": 5}}, 422, "providerOverrides.search", "wrong_type"),
        ({"providerOverrides": {"pipeline": "webhook"}}, 422, "providerOverrides.pipeline", "base_url_missing"),
        ({"cadence": "hourly"}, 422, "cadence", "cadence_not_in_plan"),
        ({"cadence": "daily", "colour": "red"}, 422, "colour", "unknown_field"),
        ({"providerOverrides": big}, 422, "providerOverrides.k0", "unknown_capability"),
    ]


def test_every_bad_body_is_a_422_naming_the_field_and_changes_nothing(app, client, world):
    work_id = scheduled_work(client, world, cadence="weekly")
    columns = WorkSchedule.__table__.c.keys()
    before = schedule_row(app, work_id)
    for body, status, field, code in _bad_bodies():
        answer = put_schedule(client, world, work_id, **body)
        assert answer.status_code == status, (body, answer.json)
        assert (answer.json["error"]["field"], answer.json["error"]["code"]) == (field, code), body
        assert answer.json["error"]["message"]
        after = schedule_row(app, work_id)
        assert {c: getattr(after, c) for c in columns} == {c: getattr(before, c) for c in columns}, body


def test_bodies_that_are_not_json_objects_and_bad_works_are_refused_with_their_field(client, world):
    work_id = create_work(client, world)
    for raw in (b"not json", b"[1, 2]", b'"daily"'):
        answer = client.put(f"/api/works/{work_id}/schedule", data=raw, headers=world.auth("ops"))
        assert answer.status_code == 400 and answer.json["error"]["code"] == "invalid_json"
    assert put_schedule(client, world, work_id, enable=True).json["error"]["field"] == "cadence"
    cases = [({"pipeline": "log"}, "name"), ({"name": "x" * 101, "pipeline": "log"}, "name"),
             ({"name": "A", "pipeline": "nope"}, "pipeline"), ({"name": "A", "pipeline": 3}, "pipeline"),
             ({"name": "A", "pipeline": "log", "settings": []}, "settings"),
             ({"name": "A", "pipeline": "log", "settings": {"seconds": -1}}, "settings.seconds"),
             ({"name": "A", "pipeline": "log", "settings": {"colour": 1}}, "settings.colour"),
             ({"name": "A", "pipeline": "webhook", "settings": {"url": "ftp://x"}}, "settings.url"),
             ({"name": "A", "pipeline": "webhook", "settings": {"url": "https://hook.test/x"}}, "pipeline"),
             ({"name": "A", "pipeline": "log", "owner": "me"}, "owner")]
    for body, field in cases:
        answer = client.post("/api/v1/works", json=body, headers=world.auth("ops"))
        assert answer.status_code == 422 and answer.json["error"]["field"] == field, (body, answer.json)
    assert client.get("/api/v1/works", headers=world.auth("ops")).json["works"][0]["id"] == work_id
    assert len(client.get("/api/v1/works", headers=world.auth("ops")).json["works"]) == 1
    for query in ("limit=0", "limit=x", "cursor=abc", "cursor=99999999999"):
        assert client.get(f"/api/v1/works?{query}", headers=world.auth("ops")).status_code == 422, query


def test_the_webhook_pipeline_needs_the_public_address_and_then_activates(app_config, world):
    """Without TICKWORK_BASE_URL the webhook pipeline refuses to activate (422); with it, it does."""
    from models.core.database import db
    from webapp import create_app

    based = create_app({**app_config, "TICKWORK_BASE_URL": TEST_BASE_URL})
    client = based.test_client()
    work_id = create_work(client, world, pipeline="webhook", settings={"url": "https://hook.test/generate"})
    assert put_schedule(client, world, work_id, cadence="daily").status_code == 201
    with based.app_context():
        db.engine.dispose()


def test_edit_rights_are_ops_and_admins_on_all_four_schedule_endpoints_and_a_marketer_may_read_the_work(client, world):
    work_id = scheduled_work(client, world)
    marketer = world.auth("marketer")
    refusals = [client.get(f"/api/works/{work_id}/schedule", headers=marketer),
                client.put(f"/api/works/{work_id}/schedule", json={"enable": False}, headers=marketer),
                client.put(f"/api/works/{work_id}/schedule?dry_run=1", json={"enable": False}, headers=marketer),
                client.delete(f"/api/works/{work_id}/schedule", headers=marketer),
                client.post(f"/api/works/{work_id}/schedule/run", headers=marketer),
                client.post("/api/v1/works", json={"name": "M", "pipeline": "log"}, headers=marketer),
                client.delete(f"/api/v1/works/{work_id}", headers=marketer)]
    assert [(r.status_code, r.json["error"]["code"]) for r in refusals] == [(403, "forbidden")] * 7
    assert schedule_row(client.application, work_id).status == "active"
    assert client.get(f"/api/v1/works/{work_id}", headers=marketer).status_code == 200
    assert put_schedule(client, world, work_id, role="admin", enable=False).json["status"] == "paused"


def test_another_workspaces_work_is_not_found(app, client, world):
    from tests.conftest import make_world

    other = make_world(app, name="Globex")
    theirs = create_work(client, other)
    for answer in (client.get(f"/api/works/{theirs}/schedule", headers=world.auth()),
                   put_schedule(client, world, theirs, cadence="daily"),
                   client.post(f"/api/works/{theirs}/schedule/run", headers=world.auth()),
                   client.get(f"/api/v1/works/{theirs}", headers=world.auth()),
                   client.get("/api/works/2147483648/schedule", headers=world.auth())):
        assert answer.status_code == 404


def test_a_work_is_created_listed_shown_with_its_runs_and_deleted_softly(app, client, world):
    created = client.post("/api/v1/works", json={"name": " Weekly digest ", "pipeline": "log",
                                                 "settings": {"seconds": 0}}, headers=world.auth("ops"))
    assert created.status_code == 201 and created.json["name"] == "Weekly digest" and created.json["secret"]
    work_id = created.json["id"]
    put_schedule(client, world, work_id, cadence="weekly")
    client.post(f"/api/works/{work_id}/schedule/run", headers=world.auth("ops"))
    shown = client.get(f"/api/v1/works/{work_id}", headers=world.auth("marketer")).json
    assert shown["schedule"]["cadence"] == "weekly" and shown["generation_status"] == "generated"
    assert [run["status"] for run in shown["runs"]] == ["succeeded"] and "secret" not in shown
    listed = client.get("/api/v1/works?limit=1", headers=world.auth("marketer")).json
    assert [w["id"] for w in listed["works"]] == [work_id] and listed["next_cursor"] is None
    deleted = client.delete(f"/api/v1/works/{work_id}", headers=world.auth("ops"))
    assert deleted.status_code == 200 and deleted.json["deleted_at"] and deleted.json["schedule"]["status"] == "canceled"
    assert client.get(f"/api/v1/works/{work_id}", headers=world.auth("ops")).status_code == 404
    assert client.get("/api/v1/works", headers=world.auth("ops")).json["works"] == []
    assert len(runs(app, work_id)) == 1


def test_fr12_ac8_usage_billing_allows_cadences_outside_plan_limits_and_writes_the_ledger(app, client, world, clock):
    """The free plan has no hourly cadence: subscription refuses it, usage runs it and bills each generation."""
    work_id = create_work(client, world)
    refused = put_schedule(client, world, work_id, cadence="hourly")
    assert refused.status_code == 422 and refused.json["error"]["code"] == "cadence_not_in_plan"
    assert "free plan" in refused.json["error"]["message"] and schedule_row(app, work_id) is None
    accepted = put_schedule(client, world, work_id, cadence="hourly", billingMode="usage")
    assert accepted.status_code == 201 and accepted.json["billingMode"] == "usage"
    dispatcher = Dispatcher(app)
    for hour in range(3):
        clock.set(datetime(2026, 6, 1, 13 + hour, 0, 20, tzinfo=UTC))
        dispatcher.pass_()
    client.post(f"/api/works/{work_id}/schedule/run", headers=world.auth("ops"))
    assert [(row.kind, row.cadence, row.month) for row in usage_rows(app, work_id)] == [
        ("scheduled", "hourly", "2026-06")] * 3 + [("manual", "hourly", "2026-06")]
    assert client.get("/api/v1/works/usage", headers=world.auth("marketer")).json["months"] == [
        {"month": "2026-06", "generations": 4, "scheduled": 3, "manual": 1}]
    back = put_schedule(client, world, work_id, billingMode="subscription")
    assert back.status_code == 422 and back.json["error"]["code"] == "cadence_not_in_plan"


def test_subscription_runs_write_no_ledger_and_a_run_without_a_schedule_is_billed_by_use(app, client, world, clock):
    subscribed = scheduled_work(client, world, cadence="daily")
    loose = create_work(client, world, name="No schedule")
    clock.set(datetime(2026, 6, 1, 13, 0, 5, tzinfo=UTC))
    Dispatcher(app).pass_()
    client.post(f"/api/works/{loose}/schedule/run", headers=world.auth("ops"))
    assert [run.billing_mode for run in runs(app, subscribed)] == ["subscription"]
    assert usage_rows(app, subscribed) == []
    assert [(row.kind, row.cadence) for row in usage_rows(app, loose)] == [("manual", None)]


def test_a_plan_downgrade_pauses_the_subscription_schedules_it_no_longer_allows_and_notifies(app, client, world):
    from models.notifications.tables import Notification

    set_plan(app, world.workspace_id, "pro")
    eight = scheduled_work(client, world, cadence="every_8_hours")
    daily = scheduled_work(client, world, cadence="daily")
    billed = scheduled_work(client, world, cadence="every_12_hours", billingMode="usage")
    runner = app.test_cli_runner()
    bad = runner.invoke(args=["workspace", "set-plan", "Acme", "platinum"])
    assert bad.exit_code == 1 and "unknown plan 'platinum'" in bad.output
    done = runner.invoke(args=["workspace", "set-plan", "Acme", "free"])
    assert done.exit_code == 0, done.output
    assert [schedule_row(app, w).status for w in (eight, daily, billed)] == ["paused", "active", "active"]
    assert "not in the free plan" in schedule_row(app, eight).paused_reason
    assert count(app, Notification, Notification.kind == "work_plan_paused") == 1
    assert count(app, WorkUsage) == 0


def test_the_cli_lists_the_plugin_registry(app):
    result = app.test_cli_runner().invoke(args=["plugins"])
    assert result.exit_code == 0
    assert [line.split()[:3] for line in result.output.splitlines()] == [
        ["log", "pipeline", "built-in"], ["webhook", "pipeline", "built-in"]]


def test_run_now_answers_409_while_a_generation_runs_and_404_for_a_deleted_work(app, client, world):
    from models.core.database import write_session
    from models.core.moves import Actor
    from models.works.runs import start_run
    from models.works.tables import RunKind, Work

    work_id = create_work(client, world)
    with app.app_context(), write_session() as session:
        start_run(session, session.get(Work, work_id), None, kind=RunKind.MANUAL, token="t" * 32, slot=None,
                  now=datetime(2026, 6, 1, 12, tzinfo=UTC), actor=Actor(label="test"), reason="test")
    busy = client.post(f"/api/works/{work_id}/schedule/run", headers=world.auth("ops"))
    assert busy.status_code == 409 and busy.json["error"]["code"] == "already_generating"
    client.delete(f"/api/v1/works/{work_id}", headers=world.auth("ops"))
    assert client.post(f"/api/works/{work_id}/schedule/run", headers=world.auth("ops")).status_code == 404
