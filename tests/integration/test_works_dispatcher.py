"""The work-schedule dispatcher and the after-run rules (FR-3 to FR-11), on both databases, the clock frozen."""

import json
import sys
import threading
import time
from datetime import datetime, timedelta, timezone

from sqlalchemy import select, text, update

from models.actions.tables import ScheduledAction
from models.clock.tables import ClockRun
from models.core.database import read_session, write_session
from models.notifications.tables import Notification
from models.works.tables import Work, WorkRun
from tests.integration.clock_helpers import tick
from tests.integration.works_helpers import (
    Dispatcher,
    count,
    create_work,
    install_plugin_distribution,
    put_schedule,
    run_now_held,
    runs,
    schedule_row,
    scheduled_work,
    work_row,
)

UTC = timezone.utc
SLOT = datetime(2026, 6, 1, 13, 0, tzinfo=UTC)  # 09:00 in New York: the first slot of every grid laid at T0
NEXT_DAY = SLOT + timedelta(days=1)


def at(clock, *, minutes=0, seconds=0, days=0):
    clock.set(SLOT + timedelta(days=days, minutes=minutes, seconds=seconds))


def due_seen(app, work_id):
    return schedule_row(app, work_id).next_run_at


def test_fr3_dispatch_works_is_a_clock_job_on_its_interval_and_one_pass_prints_its_summary(app, client, world, clock):
    from dataclasses import replace

    from jobs.periodic import CLOCK_JOBS, every_work_dispatch_interval
    from models.core.runtime import runtime

    assert "dispatch-works" in [job.name for job in CLOCK_JOBS]
    with app.app_context():
        rt = runtime()
        assert [every_work_dispatch_interval(datetime(2026, 6, 1, 12, m)) for m in (0, 1, 7)] == [True] * 3
        rt.policy = replace(rt.policy, work_dispatch_interval=timedelta(minutes=5))
        assert [every_work_dispatch_interval(datetime(2026, 6, 1, 12, m)) for m in (0, 5, 7, 55)] == [
            True, True, False, True]
    work_id = scheduled_work(client, world)
    at(clock, seconds=10)
    result = app.test_cli_runner().invoke(args=["dispatch-works"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert (summary["kind"], summary["dueCount"], summary["dispatched"], summary["skipped"], summary["failed"]) == (
        "dispatch-works", 1, 1, 0, 0)
    assert summary["entries"] == [{"scheduleId": schedule_row(app, work_id).id, "workId": work_id,
                                   "outcome": "dispatched", "reason": None, "runId": runs(app, work_id)[0].id,
                                   "overlapPolicy": "skip", "scheduledFor": "2026-06-01T13:00:00Z"}]


def test_fr4_the_first_claim_wins_and_the_loser_sees_nothing_updated_and_reports_skipped(app, client, world, clock):
    from models.core.moves import Actor
    from models.works.dispatcher import dispatch_schedule

    work_id = scheduled_work(client, world)
    at(clock, seconds=5)
    schedule = schedule_row(app, work_id)
    first, second = Dispatcher(app), Dispatcher(app)
    with app.app_context():
        won = dispatch_schedule(schedule.id, work_id, schedule.next_run_at, first.context(), Actor(label="one"))
        lost = dispatch_schedule(schedule.id, work_id, schedule.next_run_at, second.context(), Actor(label="two"))
    assert (won.outcome, lost.outcome, lost.reason) == ("dispatched", "skipped", "already_claimed")
    assert len(runs(app, work_id)) == 1 and first.handed == [won.run_id] and second.handed == []
    claimed = schedule_row(app, work_id)
    assert (claimed.next_run_at, claimed.scheduled_for, claimed.claimed_at) == (None, SLOT, clock.now())


def test_fr4_a_claim_racing_a_put_that_moves_next_run_at_loses(app, client, world, clock):
    """The PUT holds its transaction open while the claim arrives; the claim waits, then updates nothing."""
    from models.accounts.tables import Role
    from models.core.moves import Actor
    from models.works.dispatcher import dispatch_schedule
    from models.works.operations import put_schedule as put_in_domain

    work_id = scheduled_work(client, world, billingMode="usage")
    at(clock, seconds=30)
    schedule = schedule_row(app, work_id)
    holding, done = threading.Event(), {}

    def put_and_hold():
        with app.app_context(), write_session() as session:
            context = Dispatcher(app).context()
            put_in_domain(session, world.workspace_id, work_id, cadence="hourly", actor=Actor(label="racer"),
                          role=Role.OPS, now=context.clock.now(), context=context)
            holding.set()
            time.sleep(0.4)

    editor = threading.Thread(target=put_and_hold)
    editor.start()
    assert holding.wait(10)
    started = time.monotonic()
    with app.app_context():
        entry = dispatch_schedule(schedule.id, work_id, schedule.next_run_at, Dispatcher(app).context(),
                                  Actor(label="dispatcher"))
    waited = time.monotonic() - started
    editor.join()
    assert (entry.outcome, entry.reason) == ("skipped", "already_claimed")
    assert waited > 0.2, "the claim did not wait for the PUT's transaction: no race was run"
    assert runs(app, work_id) == []
    # The new hourly grid starts at the dispatcher's next pass after the PUT (13:01), its first slot an hour on.
    assert schedule_row(app, work_id).next_run_at == SLOT + timedelta(hours=1, minutes=1)


def test_fr5_ac3_drift_is_bounded_a_schedule_that_fires_90_seconds_late_stays_anchored_on_its_slot(
        app, client, world, clock):
    work_id = scheduled_work(client, world)
    dispatcher = Dispatcher(app)
    at(clock, seconds=90)
    dispatcher.pass_(run=False)
    claimed = schedule_row(app, work_id)
    assert (claimed.next_run_at, claimed.scheduled_for) == (None, SLOT)
    dispatcher.run_handed()
    settled = schedule_row(app, work_id)
    # scheduledFor keeps the slot the last claim took after the run settled.
    assert (settled.next_run_at, settled.scheduled_for, settled.failure_count) == (NEXT_DAY, SLOT, 0)
    assert [(run.slot, run.started_at) for run in runs(app, work_id)] == [(SLOT, SLOT + timedelta(seconds=90))]


def test_a_three_day_outage_runs_once_and_resumes_on_the_grid(app, client, world, clock):
    work_id = scheduled_work(client, world, cadence="every_8_hours", billingMode="usage")
    first = clock.now() + timedelta(hours=8)  # one cadence after enabling: 20:00Z, on a grid of 04:00, 12:00, 20:00
    dispatcher = Dispatcher(app)
    at(clock, days=3, minutes=10)
    assert dispatcher.pass_()["dispatched"] == 1
    assert dispatcher.pass_()["dueCount"] == 0
    assert schedule_row(app, work_id).next_run_at == first + timedelta(days=3)
    # The one run belongs to the slot that was due (its scheduledFor); the eight missed since are not replayed.
    assert [(run.slot, run.started_at) for run in runs(app, work_id)] == [(first, SLOT + timedelta(days=3, minutes=10))]


def test_a_failed_runs_retries_keep_the_slot_they_retry_and_the_grid_never_drifts(app, client, world, clock):
    work_id = scheduled_work(client, world)
    dispatcher = Dispatcher(app)
    expected_retries = []
    for failures, minutes in ((1, 0.5), (2, 15.5), (3, 45.5)):
        at(clock, seconds=int(minutes * 60))
        dispatcher.pass_(run=False)
        (run_id,) = dispatcher.handed
        dispatcher.handed.clear()
        if failures == 3:
            dispatcher.end(run_id, succeeded=True)
            break
        dispatcher.end(run_id, succeeded=False, error="the source was down")
        schedule = schedule_row(app, work_id)
        expected_retries.append(clock.now() + timedelta(minutes=15 * 2 ** (failures - 1)))
        assert (schedule.failure_count, schedule.next_run_at, schedule.status) == (
            failures, expected_retries[-1], "active")
    assert [run.slot for run in runs(app, work_id)] == [SLOT] * 3
    assert [run.status for run in runs(app, work_id)] == ["failed", "failed", "succeeded"]
    settled = schedule_row(app, work_id)
    assert (settled.failure_count, settled.next_run_at) == (0, NEXT_DAY)


def test_a_retry_never_goes_past_the_next_slot(app, client, world, clock):
    work_id = scheduled_work(client, world, cadence="hourly", billingMode="usage", maxFailureBeforePause=10)
    dispatcher = Dispatcher(app)
    retries = []
    for _ in range(4):
        clock.set(due_seen(app, work_id) + timedelta(seconds=1))
        dispatcher.pass_(run=False)
        dispatcher.end(dispatcher.handed.pop(), succeeded=False)
        retries.append(schedule_row(app, work_id).next_run_at)
    # 15 and 30 minutes fit before the next hour; the 60- and 120-minute backoffs are cut to the next slot.
    assert retries == [SLOT + timedelta(minutes=15, seconds=1), SLOT + timedelta(minutes=45, seconds=2),
                       SLOT + timedelta(hours=1), SLOT + timedelta(hours=2)]


def test_fr6_ac4_zombie_recovery_flips_stuck_schedules_to_error_after_the_configured_timeout_and_not_before(
        app, client, world, clock):
    work_id = scheduled_work(client, world)
    dispatcher = Dispatcher(app)
    at(clock, seconds=10)
    dispatcher.pass_(run=False)  # the claim's task is never run: the generation "crashed"
    at(clock, minutes=60, seconds=9)
    assert dispatcher.pass_(run=False)["recovered"] == 0
    assert work_row(app, work_id).generation_status == "generating"
    at(clock, minutes=60, seconds=10)
    summary = dispatcher.pass_(run=False)
    assert summary["recovered"] == 1
    work, (run,), schedule = work_row(app, work_id), runs(app, work_id), schedule_row(app, work_id)
    assert (work.generation_status, run.status) == ("error", "lost")
    assert "recovered as a zombie" in run.error and "no result within 60 min" in work.last_error
    assert (schedule.failure_count, schedule.next_run_at, schedule.claim_token) == (
        1, clock.now() + timedelta(minutes=15), None)


def test_a_run_declared_lost_that_later_succeeds_records_generated_and_moves_nothing(app, client, world, clock):
    work_id = scheduled_work(client, world)
    dispatcher = Dispatcher(app)
    at(clock, seconds=10)
    dispatcher.pass_(run=False)
    (run_id,) = dispatcher.handed
    at(clock, minutes=61)
    dispatcher.pass_(run=False)
    before = schedule_row(app, work_id)
    at(clock, minutes=62)
    ended = dispatcher.end(run_id, succeeded=True)
    assert ended.recorded and ended.run.status == "succeeded"
    assert work_row(app, work_id).generation_status == "generated"
    after = schedule_row(app, work_id)
    assert (after.failure_count, after.next_run_at) == (before.failure_count, before.next_run_at) == (
        1, SLOT + timedelta(minutes=76))
    assert dispatcher.run_handed() == ["skipped:succeeded"]  # the task, run late, leaves it alone


def test_fr6_a_claim_whose_task_was_lost_is_freed_after_the_timeout_and_not_before(app, client, world, clock):
    from models.works import lifecycle

    work_id = scheduled_work(client, world)
    at(clock, seconds=5)
    schedule = schedule_row(app, work_id)
    with app.app_context(), write_session() as session:
        assert lifecycle.claim(session, schedule.id, seen_next_run_at=SLOT, token="lost" * 8, now=clock.now()).ok
    dispatcher = Dispatcher(app)
    at(clock, minutes=60, seconds=4)
    assert dispatcher.pass_()["lostClaims"] == 0 and schedule_row(app, work_id).next_run_at is None
    at(clock, minutes=60, seconds=5)
    assert dispatcher.pass_()["lostClaims"] == 1
    freed = schedule_row(app, work_id)
    assert (freed.failure_count, freed.next_run_at, freed.last_run_status) == (
        1, clock.now() + timedelta(minutes=15), "error")


def test_fr7_due_schedules_are_handled_one_after_another_in_next_run_at_then_id_order_up_to_the_batch(
        app, client, world, clock):
    works = [scheduled_work(client, world) for _ in range(4)]  # all due at 13:00
    clock.advance(minutes=-30)
    works.insert(0, scheduled_work(client, world, cadence="hourly", billingMode="usage"))  # a later id, due at 12:30
    dispatcher = Dispatcher(app, work_max_batch=3)
    at(clock, seconds=20)
    first = dispatcher.pass_(run=False)
    second = dispatcher.pass_(run=False)
    ids = [works[0]] + sorted(works[1:])  # by nextRunAt, then by id
    assert (first["dueCount"], first["batchFull"], second["dueCount"], second["batchFull"]) == (3, True, 2, False)
    assert [entry["workId"] for entry in first["entries"] + second["entries"]] == ids


def test_fr8_the_dispatch_summary_is_stored_on_its_clock_run_and_shown_on_the_health_page(
        app, client, world, clock):
    from tests.web.conftest import Browser

    ran = scheduled_work(client, world)
    gone = scheduled_work(client, world)
    at(clock, seconds=30)
    with app.app_context(), write_session() as session:  # deleted behind the API's back: the dispatcher notices
        session.execute(update(Work).where(Work.id == gone).values(deleted_at=clock.now()))
    summary = Dispatcher(app).pass_()
    assert (summary["dueCount"], summary["dispatched"], summary["skipped"], summary["failed"]) == (2, 1, 1, 0)
    assert [(e["workId"], e["outcome"], e["reason"]) for e in summary["entries"]] == [
        (ran, "dispatched", None), (gone, "skipped", "work_not_found")]
    assert schedule_row(app, gone).status == "canceled"
    with app.app_context(), read_session() as session:
        stored = session.scalar(select(ClockRun).where(ClockRun.kind == "dispatch-works"))
    assert stored.summary["entries"] == summary["entries"] and stored.finished_at is not None
    page = Browser(app.test_client(), "ops", world).get("/health").get_data(as_text=True)
    assert "dispatch-works" in page and "dueCount" in page and "Work schedules by state" in page


def test_fr9_ac5_auto_pause_kicks_in_after_max_failure_before_pause_consecutive_failures_with_one_notification(
        app, client, world, clock):
    from models.core.moves import Actor
    from models.works.notify import notify, save_notification_settings

    work_id = scheduled_work(client, world, settings={"fail": "the source site is down"}, maxFailureBeforePause=3)
    with app.app_context(), write_session() as session:
        save_notification_settings(session, world.workspace_id, channel="main", recipient="ops@acme.test",
                                   now=clock.now())
    dispatcher = Dispatcher(app)
    statuses = []
    at(clock, seconds=30)
    for _ in range(3):
        clock.set(schedule_row(app, work_id).next_run_at + timedelta(seconds=30))
        dispatcher.pass_()
        schedule = schedule_row(app, work_id)
        statuses.append((schedule.failure_count, schedule.status))
    assert statuses == [(1, "active"), (2, "active"), (3, "paused")]
    assert "3 consecutive failures" in schedule_row(app, work_id).paused_reason
    assert "maxFailureBeforePause" not in schedule_row(app, work_id).paused_reason  # words, not the API's field
    with app.app_context(), read_session() as session:
        (notification,) = session.scalars(select(Notification))
        (send,) = session.scalars(select(ScheduledAction).where(ScheduledAction.origin == "system"))
    assert notification.kind == "work_auto_paused" and "the source site is down" in notification.body
    assert (send.thing_id, send.target_key, send.status, send.publish_at) == (
        f"notification:{notification.id}", "ops@acme.test", "queued", clock.now())
    moved = client.post(f"/api/v1/actions/{send.id}/reschedule", headers=world.auth("ops"),
                        json={"publish_at": "2026-06-02T09:00:00Z"})
    assert moved.status_code == 409 and moved.json["error"]["code"] == "follows_notification"
    tick(app)
    tick(app)
    assert count(app, ScheduledAction, ScheduledAction.status == "published") == 1
    clock.advance(days=2)
    assert dispatcher.pass_()["dueCount"] == 0
    with app.app_context(), write_session() as session:  # raised again for the same cause: still once
        again = notify(session, world.workspace_id, kind="work_auto_paused", title="again", body="again",
                       dedupe_key=notification.dedupe_key, now=clock.now(), actor=Actor(label="test"))
    assert not again.created and again.actions == []
    assert count(app, Notification) == 1 and count(app, ScheduledAction) == 1


def test_fr10_ac6_run_now_before_the_next_slot_preserves_the_slot_and_fr9_counts_its_failure_not_its_success(
        app, client, world, clock):
    work_id = scheduled_work(client, world)
    dispatcher = Dispatcher(app)
    at(clock, seconds=30)
    dispatcher.pass_(run=False)
    dispatcher.end(dispatcher.handed.pop(), succeeded=False)
    retry = schedule_row(app, work_id).next_run_at
    assert (schedule_row(app, work_id).failure_count, retry) == (1, SLOT + timedelta(minutes=15, seconds=30))
    at(clock, minutes=5)
    failed = run_now_held(dispatcher, world, work_id)
    dispatcher.handed.clear()
    dispatcher.end(failed, succeeded=False)
    after_failure = schedule_row(app, work_id)
    assert (after_failure.failure_count, after_failure.next_run_at, after_failure.last_run_status) == (
        2, retry, "error")
    at(clock, minutes=6)
    succeeded = run_now_held(dispatcher, world, work_id)
    dispatcher.handed.clear()
    dispatcher.end(succeeded, succeeded=True)
    after_success = schedule_row(app, work_id)
    # A successful Run Now neither resets failureCount nor moves nextRunAt: only a scheduled success resets it.
    assert (after_success.failure_count, after_success.next_run_at, after_success.last_run_status) == (
        2, retry, "generated")
    assert [(run.kind, run.slot) for run in runs(app, work_id)] == [("scheduled", SLOT), ("manual", None),
                                                                     ("manual", None)]


def test_run_now_on_a_due_slot_claims_it_so_the_slot_runs_once(app, client, world, clock):
    work_id = scheduled_work(client, world)
    dispatcher = Dispatcher(app)
    at(clock, seconds=20)
    run_id = run_now_held(dispatcher, world, work_id)
    claimed = schedule_row(app, work_id)
    assert (claimed.next_run_at, claimed.scheduled_for) == (None, SLOT)
    assert dispatcher.pass_(run=False)["dueCount"] == 0
    dispatcher.run_handed()
    assert [(run.id, run.kind, run.slot, run.status) for run in runs(app, work_id)] == [
        (run_id, "scheduled", SLOT, "succeeded")]
    assert schedule_row(app, work_id).next_run_at == NEXT_DAY


def test_a_busy_work_is_skipped_and_tried_again_15_minutes_later_without_a_failure(app, client, world, clock):
    work_id = scheduled_work(client, world)
    dispatcher = Dispatcher(app)
    at(clock, minutes=-5)
    run_now_held(dispatcher, world, work_id)
    at(clock, seconds=40)
    summary = dispatcher.pass_(run=False)
    assert [(e["outcome"], e["reason"]) for e in summary["entries"]] == [("skipped", "still_generating")]
    schedule = schedule_row(app, work_id)
    assert (schedule.next_run_at, schedule.failure_count, schedule.status) == (
        SLOT + timedelta(minutes=15, seconds=40), 0, "active")


def test_a_garbage_zone_skips_its_workspace_and_the_others_run(app, client, world, clock):
    from tests.conftest import make_world

    other = make_world(app, name="Globex")
    ours = scheduled_work(client, world)
    theirs = scheduled_work(client, other)
    with app.app_context(), write_session() as session:
        session.execute(text("UPDATE workspaces SET timezone = 'Mars/Olympus' WHERE name = 'Globex'"))
    at(clock, seconds=10)
    summary = Dispatcher(app).pass_()
    assert {e["workId"]: (e["outcome"], e["reason"]) for e in summary["entries"]} == {
        ours: ("dispatched", None), theirs: ("skipped", "bad_zone")}
    assert schedule_row(app, theirs).next_run_at == SLOT


def test_a_zone_change_moves_calendar_schedules_from_their_wall_anchor_and_leaves_elapsed_ones(app, client, world):
    daily = scheduled_work(client, world, cadence="daily")
    hourly = scheduled_work(client, world, cadence="hourly", billingMode="usage")
    result = app.test_cli_runner().invoke(args=["workspace", "set-timezone", "Acme", "Europe/Paris"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["works"] == {"schedules_moved": 1}
    # 09:00 in Paris (07:00 UTC) next day: now is 14:00 there.
    assert schedule_row(app, daily).next_run_at == datetime(2026, 6, 2, 7, 0, tzinfo=UTC)
    assert schedule_row(app, hourly).next_run_at == SLOT


def test_fr11_ac7_provider_overrides_validate_plugin_ids_against_the_registry_with_a_real_entry_point(
        app, client, world, clock, tmp_path, monkeypatch):
    site = install_plugin_distribution(tmp_path / "site")
    monkeypatch.syspath_prepend(str(site))
    listing = app.test_cli_runner().invoke(args=["plugins"]).output
    assert "acme-search" in listing and "acme_tickwork" in listing
    assert "acme-vague" in listing and "BROKEN: has no valid capability" in listing
    assert "BROKEN: fails to load: ModuleNotFoundError" in listing and "reuses the id of a built-in" in listing
    work_id = create_work(client, world)
    refusals = {
        "ai": ("acme-search", "wrong_capability"), "search": ("acme-vague", "plugin_broken"),
        "screenshot": ("acme-missing", "plugin_broken"), "contentExtractor": ("acme-nothing", "plugin_not_installed"),
    }
    for capability, (plugin, code) in refusals.items():
        answer = put_schedule(client, world, work_id, cadence="daily", providerOverrides={capability: plugin})
        assert answer.status_code == 422 and answer.json["error"]["code"] == code, answer.json
        assert answer.json["error"]["field"] == f"providerOverrides.{capability}"
    overrides = {"search": "acme-search", "ai": "acme-ai", "pipeline": "acme-pipeline"}
    accepted = put_schedule(client, world, work_id, cadence="daily", time="09:00", providerOverrides=overrides)
    assert accepted.status_code == 201 and accepted.json["providerOverrides"] == overrides
    dispatcher = Dispatcher(app)
    at(clock, seconds=10)
    dispatcher.pass_()
    (run,) = runs(app, work_id)
    assert (run.status, run.pipeline, run.providers) == ("succeeded", "acme-pipeline", overrides)
    # The distribution is uninstalled: the next run fails, in words, and nothing crashes.
    monkeypatch.setattr(sys, "path", [entry for entry in sys.path if entry != str(site)])
    clock.set(NEXT_DAY + timedelta(seconds=10))
    assert dispatcher.pass_()["dispatched"] == 1
    failed = runs(app, work_id)[-1]
    assert failed.status == "failed"
    assert failed.error == "the ai plugin 'acme-ai' chosen for this work is not installed any more"


def test_the_gauges_count_schedules_by_state_for_metrics(app, client, world, clock):
    scheduled_work(client, world)
    paused = scheduled_work(client, world)
    put_schedule(client, world, paused, enable=False)
    at(clock, seconds=1)
    text_ = app.test_client().get("/metrics").get_data(as_text=True)
    assert 'tickwork_work_schedules{state="active"} 1.0' in text_
    assert 'tickwork_work_schedules{state="paused"} 1.0' in text_ and 'tickwork_work_schedules{state="due"} 1.0' in text_
    assert 'tickwork_works{status="idle"} 2.0' in text_


def test_every_status_change_of_a_schedule_and_a_run_writes_its_event(app, client, world, clock):
    from tests.integration.works_helpers import events

    work_id = scheduled_work(client, world)
    put_schedule(client, world, work_id, enable=False)
    put_schedule(client, world, work_id, enable=True)
    at(clock, seconds=5)
    Dispatcher(app).pass_()
    client.delete(f"/api/works/{work_id}/schedule", headers=world.auth("ops"))
    assert [(e.lifecycle, e.from_status, e.to_status) for e in events(app, work_id)] == [
        ("schedule", "disabled", "active"), ("schedule", "active", "paused"), ("schedule", "paused", "active"),
        ("generation", "idle", "generating"), ("run", None, "running"), ("run", "running", "succeeded"),
        ("generation", "generating", "generated"), ("schedule", "active", "canceled")]
    assert count(app, WorkRun) == 1


def test_a_plan_change_behind_the_apis_back_pauses_at_dispatch(app, client, world, clock):
    from tests.integration.works_helpers import set_plan

    set_plan(app, world.workspace_id, "business")
    work_id = scheduled_work(client, world, cadence="hourly")
    set_plan(app, world.workspace_id, "free")  # written straight to the table: only the dispatcher can notice
    at(clock, seconds=10)
    summary = Dispatcher(app).pass_()
    assert [(e["outcome"], e["reason"]) for e in summary["entries"]] == [("skipped", "cadence_not_in_plan")]
    assert schedule_row(app, work_id).status == "paused" and runs(app, work_id) == []
