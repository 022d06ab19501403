"""Retention: old terminal chains go to monthly archive files, whole, verified, then pruned; the gates hold.

Retention is one day here (``TICKWORK_RETENTION_DAYS``), so the clock moves days, not months.
"""

import json
import os
import subprocess
import sys
from datetime import timedelta

import pytest
from sqlalchemy import func, insert, select
from sqlalchemy.exc import IntegrityError

from models.actions import lifecycle
from models.actions.archived_keys import ArchivedKey
from models.actions.guard import PublishGuardViolation, classify_integrity_error
from models.actions.tables import ActionEvent, CancelKind, FailureCode, ScheduledAction
from models.clock.tables import ClockRun, ConsumerHeartbeat
from models.channels.outbox import OutboxEntry
from models.channels.tables import Channel
from models.core.database import read_session, write_session
from models.core.moves import Actor
from models.core.runtime import runtime
from models.recurring.expander import expand_rule
from models.recurring.tables import RecurringSchedule
from models.retention.archiving import Batch, take_lease
from models.retention.settings import retention_from_config
from tests.conftest import ROOT, TEST_SECRET
from tests.factories import add_action
from tests.integration.clock_helpers import tick
from tests.integration.recurring_helpers import expand, make_rule, rule_rows
from tests.integration.retention_helpers import (  # noqa: F401  (fixtures)
    app_config, archive, archive_count, archive_dir, archived_files, live_ids, publish_now)

JOB = Actor.job("test")


def test_archived_published_keys_are_refused_every_way_they_could_be_sent_again(client, app, world, clock):
    # A post, sent; a recurring slot, sent; an API action with a thing, sent.
    post = client.post("/api/v1/posts", headers=world.auth("marketer"),
                       json={"body": "Fresh bread", "targets": ["main"], "local_time": "2026-06-01T08:30"}).json
    assert client.post(f"/api/v1/posts/{post['id']}/approve", headers=world.auth("marketer")).status_code == 200
    rule = make_rule(client, world, starts_local="2026-06-01T09:00")
    expand(app)
    api_row = add_action(app, world, thing_id="invoice-7", target_key="ann@example.test", publish_at=clock.now())
    clock.advance(minutes=62)  # 09:02 New York: the post's 08:30 and the rule's 09:00 are due (within its grace)
    tick(app)  # sends all three
    slot_rows = rule_rows(app, rule["id"], statuses=["published"])
    assert len(slot_rows) == 1, [(r.status, r.publish_at, r.last_error) for r in rule_rows(app, rule["id"])][:3]
    published = {row.id for row in slot_rows} | {api_row}
    with app.app_context(), read_session() as session:
        post_rows = list(session.scalars(select(ScheduledAction).where(ScheduledAction.thing_id == f"post:{post['id']}")))
    assert [row.status for row in post_rows] == ["published"]
    published.add(post_rows[0].id)

    # Two days on the rule's later slots are cancelled (paused), so only terminal rows are left, and archived.
    assert client.post(f"/api/v1/recurring/{rule['id']}/pause", headers=world.auth("marketer"),
                       json={"note": "off"}).status_code == 200
    clock.advance(days=2)
    summary = archive(app)
    assert summary["actions"] >= 3 and published.isdisjoint(live_ids(app))
    assert set(archived_files(app)) >= published

    # The reconciler: unapprove and approve the post again; its sent target is never queued again.
    assert client.post(f"/api/v1/posts/{post['id']}/unapprove", headers=world.auth("marketer")).status_code == 200
    with app.app_context(), write_session() as session:
        session.add(Channel(workspace_id=world.workspace_id, name="second", kind="log", config={},
                            created_at=clock.now()))
    assert client.patch(f"/api/v1/posts/{post['id']}", headers=world.auth("marketer"),
                        json={"local_time": "2026-06-09T09:00", "targets": ["main", "second"]}).status_code == 200
    again = client.post(f"/api/v1/posts/{post['id']}/approve", headers=world.auth("marketer"))
    # Approved again with a new target after the first one's send was archived: only the new one is queued.
    assert again.status_code == 200 and again.json["status"] == "approved", again.json
    from jobs.clock import reconcile_once
    with app.app_context():
        done = reconcile_once()
    assert done["inserted"] == 0
    assert [(row.target_key, row.status) for row in _rows_of(app, f"post:{post['id']}")] == [("second", "queued")]
    clock.advance(days=6, hours=1)  # 09:00 on the 9th: the new target goes, and the post is then all sent
    tick(app)
    with app.app_context():
        assert reconcile_once()["posts_published"] == 1  # the archived send counts as sent

    # The expander: asked to materialize again from before the archived slot, it skips it.
    with app.app_context(), write_session() as session:
        stored = session.get(RecurringSchedule, rule["id"])
        stored.status = "active"  # resumed by hand: the expander itself is what is tested
        done = expand_rule(session, stored, now=runtime().now(), policy=runtime().policy, actor=JOB,
                           since=slot_rows[0].publish_at - timedelta(minutes=1))
        assert slot_rows[0].thing_id not in {row.thing_id for row in done.new_rows}
        assert done.counts["skip_terminal"] >= 1

    # The API: the same key again is refused.
    answer = client.post("/api/v1/actions", headers=world.auth("admin"), json={
        "action_type": "send_email", "channel": "main", "target_key": "ann@example.test", "thing_id": "invoice-7",
        "payload": {"body": "again"}, "publish_at": (clock.now() + timedelta(hours=1)).isoformat()})
    assert answer.status_code == 409, answer.json

    # The guard itself: a raw insert of an active row with an archived published key.
    with app.app_context():
        with pytest.raises(IntegrityError) as caught:
            with write_session() as session:
                session.execute(insert(ScheduledAction).values(
                    workspace_id=world.workspace_id, action_type="send_email", thing_id="invoice-7",
                    target_key="ann@example.test", channel_id=1, payload={}, publish_at=clock.now(),
                    status="queued", attempt_count=0, origin="person", created_at=clock.now(),
                    updated_at=clock.now()))
        assert isinstance(classify_integrity_error(caught.value), PublishGuardViolation)
    # A key whose archived rows were never published is only gated, not guarded: a person may create it.
    with app.app_context(), read_session() as session:
        keys = {(k.thing_id, k.published) for k in session.scalars(select(ArchivedKey))}
    assert ("invoice-7", True) in keys and (f"post:{post['id']}", True) in keys


def test_a_lineage_chain_across_the_cutoff_waits_whole_then_goes_whole(client, app, world, clock, archive_dir):
    first = add_action(app, world, thing_id="promo", target_key="bob@example.test",
                       publish_at=clock.now() + timedelta(days=3))
    moved = client.post(f"/api/v1/actions/{first}/reschedule", headers=world.auth("ops"),
                        json={"publish_at": (clock.now() + timedelta(days=3, hours=1)).isoformat()})
    assert moved.status_code == 201, moved.json
    second = moved.json["id"]
    clock.advance(days=3)
    again = client.post(f"/api/v1/actions/{second}/reschedule", headers=world.auth("ops"),
                        json={"publish_at": (clock.now() + timedelta(minutes=30)).isoformat()})
    third = again.json["id"]
    clock.advance(minutes=31)
    tick(app)
    chain = {first, second, third}
    # The root is three days old, its descendants are not: the chain waits, whole.
    summary = archive(app)
    assert summary.get("actions", 0) == 0 and summary["waiting"] == 1
    assert chain <= live_ids(app)
    clock.advance(days=2)
    summary = archive(app)
    assert summary["actions"] == 3 and summary["chains"] == 1
    assert chain.isdisjoint(live_ids(app)) and set(archived_files(app)) == chain
    assert len(set(archived_files(app).values())) == 1  # one chain, one month's file
    assert archive_count(archive_dir, "scheduled_actions") == 3
    with app.app_context(), read_session() as session:
        assert session.scalar(select(func.count()).select_from(ActionEvent)
                              .where(ActionEvent.action_id.in_(chain))) == 0
    assert archive_count(archive_dir, "action_events", f"action_id IN ({first}, {second}, {third})") >= 6


def test_a_pass_that_dies_between_copy_and_prune_copies_again_without_duplicates(app, world, clock, archive_dir):
    ids = [add_action(app, world, thing_id=f"n-{i}", target_key="x@example.test", publish_at=clock.now())
           for i in range(3)]
    for ident in ids:
        publish_now(app, ident)
    clock.advance(days=2)

    class Died(Exception):
        pass

    def die(_batch: Batch):
        raise Died("the host went away between copy and prune")

    with pytest.raises(Died):
        archive(app, before_prune=die)
    assert set(ids) <= live_ids(app) and archived_files(app) == {}
    assert archive_count(archive_dir, "scheduled_actions") == 3
    summary = archive(app)
    assert summary["actions"] == 3 and set(ids).isdisjoint(live_ids(app))
    assert archive_count(archive_dir, "scheduled_actions") == 3
    events = archive_count(archive_dir, "action_events")
    assert events == 3 * 3  # queued, submitted, published: each once
    with app.app_context(), read_session() as session:
        runs = list(session.scalars(select(ClockRun).where(ClockRun.kind == "archive").order_by(ClockRun.id)))
    assert runs[0].error and "Died" in runs[0].error and runs[1].summary["actions"] == 3


def test_one_host_archives_at_a_time(app, world, clock):
    ident = add_action(app, world, publish_at=clock.now())
    publish_now(app, ident)
    clock.advance(days=2)
    with app.app_context():
        assert take_lease("other-host:1:x", now=clock.now(), settings=retention_from_config(app.config)) is None
    assert "another host" in archive(app)["skipped"] and ident in live_ids(app)
    clock.advance(minutes=16)  # the other host's lease lapsed
    assert archive(app)["actions"] == 1


def test_clock_runs_outbox_and_heartbeats_have_their_own_retention(app, world, clock):
    ident = add_action(app, world, publish_at=clock.now() + timedelta(days=60))  # queued: stays, and so its runs
    tick(app)  # a clock run naming no row
    with app.app_context(), write_session() as session:
        session.add(ConsumerHeartbeat(name="old:1", host="old", pid=1, started_at=clock.now(), beat_at=clock.now()))
        session.execute(insert(OutboxEntry).values(workspace_id=world.workspace_id, channel_id=1, action_id=None,
                                                   attempt=1, body={}, created_at=clock.now()))
    with app.app_context(), read_session() as session:
        runs_before = session.scalar(select(func.count()).select_from(ClockRun))
    clock.advance(days=31)
    summary = archive(app)
    assert summary["clock_runs"] == runs_before and summary["outbox_entries_expired"] == 1
    assert summary["heartbeats"] == 1 and ident in live_ids(app)


def test_the_command_prints_a_json_summary_and_a_dry_run_writes_nothing(app, world, clock, database_url, archive_dir):
    ident = add_action(app, world, publish_at=clock.now() - timedelta(days=5) + timedelta(minutes=1),
                       created_at=clock.now() - timedelta(days=5))
    with app.app_context(), write_session() as session:
        lifecycle.cancel(session, ident, kind=CancelKind.PERSON, now=clock.now() - timedelta(days=4), actor=JOB,
                         workspace_id=world.workspace_id)
    env = dict(os.environ, TICKWORK_DATABASE_URL=database_url, TICKWORK_SECRET_KEY=TEST_SECRET,
               TICKWORK_QUEUE_URL="immediate", TICKWORK_RETENTION_DAYS="1", TICKWORK_ARCHIVE_DIR=str(archive_dir))

    def run(*args):
        done = subprocess.run([sys.executable, "-m", "flask", "--app", "wsgi", "archive", *args], cwd=ROOT, env=env,
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    dry = run("--dry-run")
    assert dry["dry_run"] is True and dry["actions"] == 1 and ident in live_ids(app)
    assert run()["actions"] == 1 and ident not in live_ids(app)
    bad = subprocess.run([sys.executable, "-m", "flask", "--app", "wsgi", "archive"], cwd=ROOT,
                         env=dict(env, TICKWORK_RETENTION_DAYS="soon"), capture_output=True, text=True)
    assert bad.returncode != 0 and "TICKWORK_RETENTION_DAYS" in bad.stderr


def test_archived_person_cancelled_keys_still_gate_the_reconciler_and_the_expander(client, app, world, clock):
    """The guard only refuses beside published history; a person's cancel stands through the gates alone."""
    post = client.post("/api/v1/posts", headers=world.auth("marketer"),
                       json={"body": "Rye", "targets": ["main"], "local_time": "2026-06-09T09:00"}).json
    assert client.post(f"/api/v1/posts/{post['id']}/approve", headers=world.auth("marketer")).status_code == 200
    rule = make_rule(client, world, starts_local="2026-06-02T09:00")
    expand(app)
    post_row = next(row for row in _rows_of(app, f"post:{post['id']}"))
    slot_row = rule_rows(app, rule["id"])[0]
    for ident in (post_row.id, slot_row.id):
        assert client.post(f"/api/v1/actions/{ident}/cancel", headers=world.auth("ops")).status_code == 200
    clock.advance(days=2)
    summary = archive(app)
    assert {post_row.id, slot_row.id}.isdisjoint(live_ids(app)), summary
    from jobs.clock import reconcile_once
    with app.app_context():
        assert reconcile_once()["inserted"] == 0
    assert _rows_of(app, f"post:{post['id']}") == []
    with app.app_context(), write_session() as session:
        stored = session.get(RecurringSchedule, rule["id"])
        done = expand_rule(session, stored, now=runtime().now(), policy=runtime().policy, actor=JOB,
                           since=slot_row.publish_at - timedelta(minutes=1))
        assert slot_row.thing_id not in {row.thing_id for row in done.new_rows}


def _rows_of(app, thing_id) -> list[ScheduledAction]:
    with app.app_context(), read_session() as session:
        return list(session.scalars(select(ScheduledAction).where(ScheduledAction.thing_id == thing_id)))


def test_settled_work_runs_are_archived_with_their_events_and_billed_runs_stay_with_the_ledger(
        client, app, world, clock, archive_dir):
    from models.works.tables import WorkEvent, WorkRun, WorkUsage
    from tests.integration.works_helpers import Dispatcher, put_schedule, run_now_held, scheduled_work

    dispatcher = Dispatcher(app)
    work = scheduled_work(client, world, cadence="daily")
    clock.advance(days=1, minutes=1)
    dispatcher.pass_()  # the scheduled run: the plan's subscription covers it
    clock.advance(minutes=5)
    assert put_schedule(client, world, work, billingMode="usage").status_code == 200
    billed = run_now_held(dispatcher, world, work)  # billed by use: the ledger names it
    dispatcher.run_handed()
    with app.app_context(), read_session() as session:
        ledger = {u.run_id for u in session.scalars(select(WorkUsage))}
        statuses = {r.id: r.status for r in session.scalars(select(WorkRun))}
    assert len(statuses) == 2 and set(statuses.values()) == {"succeeded"}, statuses
    assert ledger == {billed}
    clock.advance(days=2)
    summary = archive(app)
    with app.app_context(), read_session() as session:
        left = set(session.scalars(select(WorkRun.id)))
        run_events = set(session.scalars(select(WorkEvent.subject_id).where(WorkEvent.lifecycle == "run")))
        assert {u.run_id for u in session.scalars(select(WorkUsage))} == ledger
    assert left == ledger and summary["work_runs"] == 2 - len(ledger)
    assert run_events <= ledger
    assert archive_count(archive_dir, "work_runs") == 2 - len(ledger)
    assert archive_count(archive_dir, "work_events") >= 1


def test_a_key_archived_failed_then_published_is_kept_as_published(app, world, clock):
    first = add_action(app, world, thing_id="offer-9", target_key="dan@example.test", publish_at=clock.now())
    with app.app_context(), write_session() as session:
        claimed = lifecycle.claim(session, first, now=clock.now(), actor=JOB)
        assert lifecycle.fail(session, first, claim_token=claimed.row.claim_token, code=FailureCode.PERMANENT,
                              message="mailbox unavailable (550)", now=clock.now(), actor=JOB).ok
    clock.advance(days=3)
    archive(app)  # the failed row goes: its key gates, but the guard does not refuse it
    second = add_action(app, world, thing_id="offer-9", target_key="dan@example.test", publish_at=clock.now())
    publish_now(app, second)
    with app.app_context(), read_session() as session:
        assert [k.published for k in session.scalars(select(ArchivedKey))] == [False]
    clock.advance(days=3)
    archive(app)
    with app.app_context(), read_session() as session:
        assert [k.published for k in session.scalars(select(ArchivedKey))] == [True]
    with pytest.raises(PublishGuardViolation):
        add_action(app, world, thing_id="offer-9", target_key="dan@example.test", publish_at=clock.now())


def test_a_row_that_appears_between_copy_and_prune_is_never_pruned_unarchived(app, world, clock, archive_dir):
    ident = add_action(app, world, thing_id="note-1", target_key="eve@example.test", publish_at=clock.now())
    publish_now(app, ident)
    clock.advance(days=2)

    def late_event(_batch: Batch):
        # Something writes about the row after the copy (here, by hand, an event no lifecycle would add).
        with app.app_context(), write_session() as session:
            session.execute(insert(ActionEvent).values(action_id=ident, from_status="published",
                                                       to_status="published", at=clock.now(), actor="late writer"))

    with pytest.raises(IntegrityError):
        archive(app, before_prune=late_event)
    assert ident in live_ids(app)
    with app.app_context(), read_session() as session:
        assert session.scalar(select(func.count()).select_from(ActionEvent).where(ActionEvent.action_id == ident)) == 4
    assert archive(app)["actions"] == 1 and ident not in live_ids(app)
    assert archive_count(archive_dir, "action_events", f"action_id = {ident}") == 4
