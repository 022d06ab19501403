"""Where a work schedule's slots sit (issue 22, item 1) and Run Now when the works queue cannot take the run
(item 2), time-travelled on both databases."""

from datetime import datetime, timedelta, timezone

import pytest

from tests.integration.works_helpers import (
    Dispatcher,
    create_work,
    put_schedule,
    runs,
    schedule_row,
    scheduled_work,
    set_plan,
    work_row,
)

UTC = timezone.utc


def _run_now(client, world, work_id):
    answer = client.post(f"/api/works/{work_id}/schedule/run", headers=world.auth("ops"))
    assert answer.status_code == 202, answer.json
    return answer


def test_enabling_weekly_three_days_after_a_generation_runs_four_days_later_at_the_generations_wall_time(
        app, client, world, clock):
    work_id = create_work(client, world)
    clock.set(datetime(2026, 6, 1, 13, 0, tzinfo=UTC))  # Monday 09:00 in New York
    _run_now(client, world, work_id)
    clock.set(datetime(2026, 6, 4, 12, 0, tzinfo=UTC))
    answer = put_schedule(client, world, work_id, cadence="weekly")
    assert answer.status_code == 201, answer.json
    assert answer.json["nextRunAt"] == "2026-06-08T13:00:00Z"
    assert (answer.json["grid"]["weekday"], answer.json["grid"]["time"]) == ("monday", "09:00")


def test_a_first_slot_already_past_is_due_at_the_dispatchers_next_pass_and_the_grid_keeps_its_anchor(
        app, client, world, clock):
    work_id = create_work(client, world)
    clock.set(datetime(2026, 6, 1, 13, 0, tzinfo=UTC))
    _run_now(client, world, work_id)
    clock.set(datetime(2026, 6, 11, 15, 20, 30, tzinfo=UTC))  # ten days later: a week has passed
    answer = put_schedule(client, world, work_id, cadence="weekly")
    assert answer.json["nextRunAt"] == "2026-06-11T15:21:00Z"
    dispatcher = Dispatcher(app)
    clock.set(datetime(2026, 6, 11, 15, 21, 5, tzinfo=UTC))
    assert dispatcher.pass_()["dispatched"] == 1
    # The run belongs to the Monday slot it was late for, and the Monday grid goes on.
    assert runs(app, work_id)[-1].slot == datetime(2026, 6, 8, 13, 0, tzinfo=UTC)
    assert schedule_row(app, work_id).next_run_at == datetime(2026, 6, 15, 13, 0, tzinfo=UTC)


def test_a_scheduled_generation_anchors_by_its_slot_not_its_late_start(app, client, world, clock):
    work_id = scheduled_work(client, world, cadence="daily")
    clock.set(datetime(2026, 6, 1, 13, 7, 30, tzinfo=UTC))  # the 13:00 slot, run late
    Dispatcher(app).pass_()
    client.delete(f"/api/works/{work_id}/schedule", headers=world.auth("ops"))
    clock.set(datetime(2026, 6, 1, 18, 0, tzinfo=UTC))
    answer = put_schedule(client, world, work_id, enable=True)
    assert answer.json["nextRunAt"] == "2026-06-02T13:00:00Z"


def test_pausing_on_monday_and_re_enabling_on_thursday_keeps_monday_at_the_same_wall_time_across_dst(
        app, client, world, clock):
    clock.set(datetime(2026, 10, 26, 12, 0, tzinfo=UTC))  # Monday 08:00 EDT
    work_id = scheduled_work(client, world, cadence="weekly", weekday="monday", time="09:00")
    assert schedule_row(app, work_id).next_run_at == datetime(2026, 10, 26, 13, 0, tzinfo=UTC)
    clock.set(datetime(2026, 10, 26, 13, 0, 30, tzinfo=UTC))
    Dispatcher(app).pass_()
    clock.set(datetime(2026, 10, 26, 15, 0, tzinfo=UTC))
    assert put_schedule(client, world, work_id, enable=False).json["status"] == "paused"
    clock.set(datetime(2026, 10, 29, 13, 17, tzinfo=UTC))  # Thursday; clocks fall back on Sunday 1 November
    resumed = put_schedule(client, world, work_id, enable=True)
    assert (resumed.json["status"], resumed.json["nextRunAt"]) == ("active", "2026-11-02T14:00:00Z")  # 09:00 EST
    assert (resumed.json["grid"]["weekday"], resumed.json["grid"]["time"]) == ("monday", "09:00")


def test_slots_missed_while_paused_are_not_caught_up(app, client, world, clock):
    work_id = scheduled_work(client, world, cadence="daily")
    put_schedule(client, world, work_id, enable=False)
    clock.set(datetime(2026, 6, 4, 13, 30, tzinfo=UTC))
    assert put_schedule(client, world, work_id, enable=True).json["nextRunAt"] == "2026-06-05T13:00:00Z"
    assert Dispatcher(app).pass_()["dueCount"] == 0


def test_monthly_keeps_its_clamp_through_a_pause(app, client, world, clock):
    set_plan(app, world.workspace_id, "business")
    clock.set(datetime(2027, 1, 31, 12, 0, tzinfo=UTC))
    work_id = scheduled_work(client, world, cadence="monthly", dayOfMonth=31, time="09:00")
    dispatcher = Dispatcher(app)
    clock.set(datetime(2027, 1, 31, 14, 0, 30, tzinfo=UTC))
    dispatcher.pass_()
    clock.set(datetime(2027, 2, 10, 12, 0, tzinfo=UTC))
    put_schedule(client, world, work_id, enable=False)
    clock.set(datetime(2027, 2, 20, 12, 0, tzinfo=UTC))
    assert put_schedule(client, world, work_id, enable=True).json["nextRunAt"] == "2027-02-28T14:00:00Z"
    clock.set(datetime(2027, 2, 28, 14, 0, 30, tzinfo=UTC))
    dispatcher.pass_()
    assert schedule_row(app, work_id).next_run_at == datetime(2027, 3, 31, 13, 0, tzinfo=UTC)  # 09:00 EDT
    assert [run.slot for run in runs(app, work_id)] == [datetime(2027, 1, 31, 14, 0, tzinfo=UTC),
                                                        datetime(2027, 2, 28, 14, 0, tzinfo=UTC)]


def test_only_a_new_cadence_or_a_named_day_lays_a_new_grid(app, client, world, clock):
    work_id = scheduled_work(client, world, cadence="weekly", weekday="monday", time="09:00")
    clock.set(datetime(2026, 6, 3, 12, 0, tzinfo=UTC))
    kept = put_schedule(client, world, work_id, maxFailureBeforePause=5)
    assert kept.json["nextRunAt"] == "2026-06-01T13:00:00Z"
    moved = put_schedule(client, world, work_id, weekday="friday", time="17:30")
    assert (moved.json["nextRunAt"], moved.json["grid"]["weekday"]) == ("2026-06-05T21:30:00Z", "friday")


def test_a_dry_run_answers_the_schedule_the_put_would_leave_and_changes_nothing(app, client, world):
    work_id = scheduled_work(client, world, cadence="weekly", weekday="monday", time="09:00")
    before = schedule_row(app, work_id)
    preview = client.put(f"/api/works/{work_id}/schedule?dry_run=1", json={"weekday": "tuesday"},
                         headers=world.auth("ops"))
    assert preview.status_code == 200 and preview.json["dryRun"] is True
    assert preview.json["nextRunAt"] == "2026-06-02T13:00:00Z"
    after = schedule_row(app, work_id)
    assert (after.next_run_at, after.anchor_local, after.updated_at) == (before.next_run_at, before.anchor_local,
                                                                         before.updated_at)
    fresh = create_work(client, world, name="Fresh")
    shown = client.put(f"/api/works/{fresh}/schedule?dry_run=1", json={"cadence": "daily"}, headers=world.auth("ops"))
    assert shown.status_code == 200 and shown.json["nextRunAt"] == "2026-06-02T12:00:00Z"
    assert schedule_row(app, fresh) is None
    bad = client.put(f"/api/works/{fresh}/schedule?dry_run=yes", json={"cadence": "daily"}, headers=world.auth("ops"))
    assert bad.status_code == 422 and bad.json["error"]["field"] == "dry_run"


@pytest.mark.parametrize("body, field, code", [
    ({"cadence": "daily", "weekday": "monday"}, "weekday", "not_weekly"),
    ({"cadence": "weekly", "weekday": "Monday"}, "weekday", "bad_weekday"),
    ({"cadence": "weekly", "weekday": 1}, "weekday", "bad_weekday"),
    ({"cadence": "weekly", "dayOfMonth": 3}, "dayOfMonth", "not_monthly"),
    ({"cadence": "monthly", "dayOfMonth": 32}, "dayOfMonth", "out_of_range"),
    ({"cadence": "monthly", "dayOfMonth": True}, "dayOfMonth", "out_of_range"),
    ({"cadence": "hourly", "billingMode": "usage", "time": "09:00"}, "time", "not_calendar"),
    ({"cadence": "daily", "time": "9:00"}, "time", "bad_time"),
    ({"cadence": "daily", "time": "24:00"}, "time", "bad_time"),
    ({"cadence": "daily", "time": 900}, "time", "bad_time"),
])
def test_a_bad_day_or_wall_time_is_a_422_naming_its_field_and_changes_nothing(app, client, world, body, field, code):
    work_id = create_work(client, world)
    answer = put_schedule(client, world, work_id, **body)
    assert answer.status_code == 422 and (answer.json["error"]["field"], answer.json["error"]["code"]) == (field, code)
    assert schedule_row(app, work_id) is None


# -- Run Now when the works queue cannot take the run -------------------------------------------


@pytest.fixture
def unreachable_queue(app_config, tmp_path):
    app_config["TICKWORK_QUEUE_URL"] = f"sqlite:///{tmp_path / 'no-such-directory' / 'queue.db'}"
    yield
    from jobs.queue import configure_queues

    configure_queues("immediate")


def test_run_now_with_the_queues_storage_unreachable_answers_503_and_leaves_the_work_not_generating(
        unreachable_queue, app, client, world, clock):
    work_id = scheduled_work(client, world)
    answer = client.post(f"/api/works/{work_id}/schedule/run", headers=world.auth("ops"))
    assert answer.status_code == 503 and answer.json["error"]["code"] == "queue_unavailable"
    assert "works queue" in answer.json["error"]["message"]
    assert work_row(app, work_id).generation_status != "generating"
    (run,) = runs(app, work_id)
    assert run.status == "failed" and "could not be handed to the works queue" in run.error
    schedule = schedule_row(app, work_id)
    assert (schedule.failure_count, schedule.next_run_at) == (0, datetime(2026, 6, 1, 13, 0, tzinfo=UTC))


def test_run_now_on_a_due_slot_whose_hand_off_fails_releases_the_claim_without_counting(
        unreachable_queue, app, client, world, clock):
    work_id = scheduled_work(client, world)
    clock.set(datetime(2026, 6, 1, 13, 0, 20, tzinfo=UTC))
    answer = client.post(f"/api/works/{work_id}/schedule/run", headers=world.auth("ops"))
    assert answer.status_code == 503
    schedule = schedule_row(app, work_id)
    assert (schedule.failure_count, schedule.claim_token, schedule.next_run_at) == (
        0, None, clock.now() + timedelta(minutes=15))
    assert work_row(app, work_id).generation_status == "error"


def test_the_dashboards_run_now_with_the_queue_unreachable_says_so_with_503(
        unreachable_queue, app, client, world, clock):
    from tests.web.conftest import Browser

    work_id = scheduled_work(client, world)
    browser = Browser(app.test_client(), "ops", world)
    page = browser.post(f"/works/{work_id}/run", htmx=True)
    assert page.status_code == 503 and "works queue cannot take the generation now" in page.get_data(as_text=True)
    assert work_row(app, work_id).generation_status != "generating"


def test_a_dispatch_whose_hand_off_fails_counts_no_failure_and_is_due_again_after_the_busy_retry(
        app, client, world, clock):
    work_id = scheduled_work(client, world)
    dispatcher = Dispatcher(app)

    def refuse(_run_ids):
        raise OSError("the queue's disk is gone")

    context = dispatcher.context

    def refusing_context():
        from dataclasses import replace

        return replace(context(), hand_off=refuse)

    dispatcher.context = refusing_context
    clock.set(datetime(2026, 6, 1, 13, 0, 10, tzinfo=UTC))
    summary = dispatcher.pass_(run=False)
    assert [(e["outcome"], e["reason"]) for e in summary["entries"]] == [("failed", "hand_off_failed")]
    schedule = schedule_row(app, work_id)
    assert (schedule.failure_count, schedule.next_run_at, schedule.scheduled_for) == (
        0, clock.now() + timedelta(minutes=15), datetime(2026, 6, 1, 13, 0, tzinfo=UTC))
    assert work_row(app, work_id).generation_status == "error" and runs(app, work_id)[0].status == "failed"


# -- the overlap policy (item 4) ------------------------------------------------------------------


def test_buffer_one_runs_the_waiting_slot_once_when_the_long_generation_ends_and_skip_skips_it(
        app, client, world, clock):
    buffered = scheduled_work(client, world, cadence="hourly", billingMode="usage", overlapPolicy="buffer_one")
    skipping = scheduled_work(client, world, cadence="hourly", billingMode="usage")
    assert schedule_row(app, skipping).overlap_policy == "skip"
    dispatcher = Dispatcher(app)
    clock.set(datetime(2026, 6, 1, 13, 0, 10, tzinfo=UTC))
    dispatcher.pass_(run=False)
    long_runs = list(dispatcher.handed)
    dispatcher.handed.clear()
    clock.set(datetime(2026, 6, 1, 15, 30, tzinfo=UTC))  # two and a half hours later the long generations end
    for run_id in long_runs:
        dispatcher.end(run_id, succeeded=True)
    assert schedule_row(app, buffered).next_run_at == datetime(2026, 6, 1, 15, 0, tzinfo=UTC)  # one waits: 15:00
    assert schedule_row(app, skipping).next_run_at == datetime(2026, 6, 1, 16, 0, tzinfo=UTC)
    summary = dispatcher.pass_()
    assert [(e["workId"], e["outcome"], e["overlapPolicy"]) for e in summary["entries"]] == [
        (buffered, "dispatched", "buffer_one")]
    assert [run.slot.hour for run in runs(app, buffered)] == [13, 15]
    assert [run.slot.hour for run in runs(app, skipping)] == [13]
    assert schedule_row(app, buffered).next_run_at == datetime(2026, 6, 1, 16, 0, tzinfo=UTC)  # once, not again


def test_a_slot_due_during_a_run_now_is_buffered_under_buffer_one_and_skipped_under_skip(app, client, world, clock):
    from tests.integration.works_helpers import run_now_held

    buffered = scheduled_work(client, world, overlapPolicy="buffer_one")
    skipping = scheduled_work(client, world)
    dispatcher = Dispatcher(app)
    clock.set(datetime(2026, 6, 1, 12, 55, tzinfo=UTC))
    held = [run_now_held(dispatcher, world, buffered), run_now_held(dispatcher, world, skipping)]
    dispatcher.handed.clear()
    clock.set(datetime(2026, 6, 1, 13, 0, 40, tzinfo=UTC))
    summary = dispatcher.pass_(run=False)
    assert {e["workId"]: (e["outcome"], e["reason"], e["overlapPolicy"]) for e in summary["entries"]} == {
        buffered: ("skipped", "buffered", "buffer_one"), skipping: ("skipped", "still_generating", "skip")}
    assert schedule_row(app, buffered).next_run_at == datetime(2026, 6, 1, 13, 0, tzinfo=UTC)
    assert schedule_row(app, skipping).next_run_at == datetime(2026, 6, 1, 13, 15, 40, tzinfo=UTC)
    clock.set(datetime(2026, 6, 1, 13, 10, tzinfo=UTC))
    for run_id in held:
        dispatcher.end(run_id, succeeded=True)
    summary = dispatcher.pass_()
    assert [(e["workId"], e["outcome"]) for e in summary["entries"]] == [(buffered, "dispatched")]
    assert [(run.kind, run.slot) for run in runs(app, buffered)] == [
        ("manual", None), ("scheduled", datetime(2026, 6, 1, 13, 0, tzinfo=UTC))]


def test_a_bad_overlap_policy_is_a_422_naming_it(app, client, world):
    work_id = scheduled_work(client, world)
    answer = put_schedule(client, world, work_id, overlapPolicy="allow_all")
    assert answer.status_code == 422 and answer.json["error"]["field"] == "overlapPolicy"
    assert put_schedule(client, world, work_id, overlapPolicy="buffer_one").json["overlapPolicy"] == "buffer_one"
