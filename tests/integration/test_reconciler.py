"""The reconciler against real databases: every gate, each test named after the incident it prevents.

Sends are counted in the log provider's outbox, through the real tick (inline in immediate
mode). T0 is 2026-06-01T12:00Z, 08:00 in the world's zone (America/New_York).
"""

import json
import os
import subprocess
import sys
import time
from datetime import datetime, timezone

import pytest
from sqlalchemy import func, select, text

from models.actions import lifecycle
from models.accounts.tables import Workspace
from models.actions.tables import CancelKind, ActionEvent, FailureCode, ScheduledAction
from models.clock.tables import ClockRun
from models.channels.tables import Channel
from models.core.database import read_session, write_session
from models.core.moves import Actor
from models.channels.outbox import OutboxEntry
from models.posts.tables import Post, thing_id_of
from models.posts.reconciler import plan_pass, reconcile_workspaces
from tests.conftest import ROOT, TEST_SECRET, make_world
from tests.integration.clock_helpers import tick
from models.core.runtime import runtime

WORKER = Actor.job("test-worker")


def _add_channel(app, world, name):
    with app.app_context(), write_session() as session:
        session.add(Channel(workspace_id=world.workspace_id, name=name, kind="log", config={},
                            created_at=runtime().now()))


def _post(client, world, *, local_time="2026-06-01T08:30", targets=("main",), approve=True) -> int:
    answer = client.post("/api/v1/posts", headers=world.auth("marketer"),
                         json={"body": "Fresh bread", "targets": list(targets), "local_time": local_time})
    assert answer.status_code == 201, answer.json
    if approve:
        approved = client.post(f"/api/v1/posts/{answer.json['id']}/approve", headers=world.auth("marketer"))
        assert approved.status_code == 200, approved.json
    return answer.json["id"]


def _call(client, world, post_id, verb, role="marketer", **body):
    answer = client.post(f"/api/v1/posts/{post_id}/{verb}", headers=world.auth(role), json=body or None)
    assert answer.status_code == 200, answer.json
    return answer.json


def _reconcile(app) -> dict:
    from jobs.clock import reconcile_once

    with app.app_context():
        return reconcile_once()


def _rows(app, post_id) -> list[ScheduledAction]:
    with app.app_context(), read_session() as session:
        return list(session.scalars(select(ScheduledAction).where(ScheduledAction.thing_id == thing_id_of(post_id))
                                    .order_by(ScheduledAction.id)))


def _active(app, post_id):
    return [row for row in _rows(app, post_id) if row.status in ("queued", "submitted")]


def _sends(app, post_id=None) -> int:
    with app.app_context(), read_session() as session:
        query = select(func.count()).select_from(OutboxEntry).join(ScheduledAction,
                                                                   ScheduledAction.id == OutboxEntry.action_id)
        if post_id is not None:
            query = query.where(ScheduledAction.thing_id == thing_id_of(post_id))
        return session.scalar(query)


def _post_status(app, post_id) -> str:
    with app.app_context(), read_session() as session:
        return session.get(Post, post_id).status


def _sql(app, statement, **params):
    with app.app_context(), write_session() as session:
        session.execute(text(statement), params)


def _in_session(app, fn):
    with app.app_context(), write_session() as session:
        return fn(session)


def test_the_triple_publish_a_sent_target_is_never_queued_again(client, app, world, clock):
    _add_channel(app, world, "second")
    post_id = _post(client, world, targets=("main", "second"))
    clock.advance(minutes=30)
    tick(app)
    assert _sends(app, post_id) == 2
    # The post flips state while (and after) its targets publish: unapproved, moved, approved again.
    _call(client, world, post_id, "unapprove")
    client.patch(f"/api/v1/posts/{post_id}", headers=world.auth(), json={"local_time": "2026-06-01T11:00"})
    again = _call(client, world, post_id, "approve")
    assert again["status"] == "published" and again["delivery"]["label"] == "2 of 2 sent"
    for _ in range(3):
        summary = _reconcile(app)
        assert summary["inserted"] == 0
        clock.advance(hours=1)
        tick(app)
    assert [row.status for row in _rows(app, post_id)] == ["published", "published"]
    assert _sends(app, post_id) == 2


def test_the_triple_publish_while_the_post_is_still_approved(client, app, world, clock):
    post_id = _post(client, world)
    clock.advance(minutes=30)
    tick(app)
    # Between the send and the reconciler marking it, the post is approved with no active row.
    first = _reconcile(app)
    assert first["inserted"] == 0 and first["posts_published"] == 1
    for _ in range(3):
        assert _reconcile(app)["inserted"] == 0
        tick(app)
    assert _sends(app, post_id) == 1 and len(_rows(app, post_id)) == 1


def test_the_in_flight_yank_a_claimed_row_survives_unapproval(client, app, world, clock):
    post_id = _post(client, world)
    clock.advance(minutes=30)
    [row] = _rows(app, post_id)
    claimed = _in_session(app, lambda s: lifecycle.claim(s, row.id, now=clock.now(), actor=WORKER))
    assert claimed.ok
    clock.advance(seconds=5)
    _call(client, world, post_id, "unapprove")
    clock.advance(minutes=5)
    assert [r.status for r in _rows(app, post_id)] == ["submitted"]  # the unapprove's own reconcile left it
    assert _reconcile(app)["removed"] == 0
    assert [r.status for r in _rows(app, post_id)] == ["submitted"]
    published = _in_session(app, lambda s: lifecycle.publish(s, row.id, claim_token=claimed.row.claim_token,
                                                            provider_id="p-1", now=clock.now(), actor=WORKER))
    assert published.ok


def test_the_in_flight_yank_a_young_row_waits_out_the_age_gate(client, app, world, clock):
    """The age gate guards the reconciler's own removals: a target removed from an approved post."""
    _add_channel(app, world, "second")
    post_id = _post(client, world, local_time="2026-06-01T09:00", targets=("main", "second"))
    clock.advance(seconds=30)
    answer = client.patch(f"/api/v1/posts/{post_id}", headers=world.auth("marketer"), json={"targets": ["main"]})
    assert answer.status_code == 200, answer.json
    assert sorted((r.target_key, r.status) for r in _rows(app, post_id)) == [("main", "queued"), ("second", "queued")]
    clock.advance(seconds=60)
    assert _reconcile(app)["skip_young"] == 1
    clock.advance(seconds=31)  # now 2 min 1 s old
    summary = _reconcile(app)
    assert summary["removed"] == 1
    row = [r for r in _rows(app, post_id) if r.target_key == "second"][0]
    assert (row.status, row.cancel_kind) == ("cancelled", "orphaned")


def test_unapprove_cancels_the_posts_queued_rows_at_once_as_orphaned_and_approving_again_mints_them(
        client, app, world, clock):
    post_id = _post(client, world, local_time="2026-06-01T09:00")
    clock.advance(seconds=30)  # far younger than the age gate
    _call(client, world, post_id, "unapprove")
    [row] = _rows(app, post_id)
    assert (row.status, row.cancel_kind) == ("cancelled", "orphaned")
    _call(client, world, post_id, "approve")
    old, new = _rows(app, post_id)
    assert old.id == row.id and (new.status, new.origin) == ("queued", "reconciler")


def test_the_retry_that_was_deleted_an_admins_retry_on_an_archived_post_sends(client, app, world, clock):
    post_id = _post(client, world)
    clock.advance(minutes=30)
    [row] = _rows(app, post_id)
    claimed = _in_session(app, lambda s: lifecycle.claim(s, row.id, now=clock.now(), actor=WORKER))
    _in_session(app, lambda s: lifecycle.fail(s, row.id, claim_token=claimed.row.claim_token,
                                             code=FailureCode.PERMANENT, message="refused", now=clock.now(),
                                             actor=WORKER))
    _call(client, world, post_id, "archive")
    retried = client.post(f"/api/v1/actions/{row.id}/retry", headers=world.auth("admin"))
    assert retried.status_code == 200 and retried.json["status"] == "queued"
    clock.advance(minutes=5)
    summary = _reconcile(app)
    assert summary["skip_terminal_parent"] == 1 and summary["removed"] == 0 and summary["inserted"] == 0
    assert [r.status for r in _rows(app, post_id)] == ["queued"]
    tick(app)
    for _ in range(2):
        _reconcile(app)
        tick(app)
    assert [r.status for r in _rows(app, post_id)] == ["published"]
    assert _sends(app, post_id) == 1


SQLITE_DEDUPE = ("UNIQUE constraint failed: scheduled_actions.workspace_id, scheduled_actions.action_type, "
                 "scheduled_actions.thing_id, scheduled_actions.target_key")
PG_DEDUPE = 'duplicate key value violates unique constraint "ux_scheduled_actions_active_thing_target"'


def _refuse_inserts(app, backend, keys):
    """Make the database refuse these (thing, target) inserts exactly as the dedupe index does, standing
    in for a row another writer committed between the reconciler's read and its insert."""
    when = " OR ".join(f"(NEW.thing_id = '{thing}' AND NEW.target_key = '{target}')" for thing, target in keys)
    if backend == "sqlite":
        _sql(app, f"""CREATE TRIGGER test_refuse BEFORE INSERT ON scheduled_actions WHEN {when}
                      BEGIN SELECT RAISE(ABORT, '{SQLITE_DEDUPE}'); END""")
        return
    _sql(app, f"""CREATE FUNCTION test_refuse() RETURNS trigger AS $$ BEGIN
                    IF {when} THEN RAISE EXCEPTION '{PG_DEDUPE}' USING ERRCODE = '23505'; END IF;
                    RETURN NEW; END $$ LANGUAGE plpgsql""")
    _sql(app, "CREATE TRIGGER test_refuse BEFORE INSERT ON scheduled_actions FOR EACH ROW EXECUTE FUNCTION test_refuse()")


def test_the_batch_poisoned_by_one_row_every_other_row_is_still_inserted(client, app, world, backend):
    _add_channel(app, world, "second")
    *ids, fifth = [_post(client, world, targets=("main", "second"), approve=False) for _ in range(5)]
    _refuse_inserts(app, backend, [(thing_id_of(ids[1]), "main"), (thing_id_of(fifth), "second")])
    # Approved in one go behind the API (an import), so the periodic pass does every insert.
    _sql(app, f"UPDATE posts SET status = 'approved' WHERE id IN ({', '.join(map(str, ids))})")
    summary = _reconcile(app)
    assert summary["inserted"] == 7 and summary["skip_duplicate"] == 1 and summary["errors"] == []
    assert [len(_active(app, post_id)) for post_id in ids] == [2, 1, 2, 2]
    assert _active(app, ids[1])[0].target_key == "second"
    # The same collision on a person's approve drops only that row, too.
    approved = _call(client, world, fifth, "approve")
    assert [t["status"] for t in approved["targets"]] == ["queued", "none"]


def test_a_wall_time_change_moves_the_row_and_only_the_new_one_fires(client, app, world, clock):
    post_id = _post(client, world)
    clock.advance(seconds=20)  # younger than the age gate: a move happens whatever the age
    moved = client.patch(f"/api/v1/posts/{post_id}", headers=world.auth(), json={"local_time": "2026-06-01T09:00"})
    assert moved.status_code == 200, moved.json
    old, new = _rows(app, post_id)
    assert (old.status, old.cancel_kind) == ("cancelled", "rescheduled")
    assert (new.status, new.rescheduled_from_id, new.origin) == ("queued", old.id, "reconciler")
    assert new.publish_at == datetime(2026, 6, 1, 13, 0, tzinfo=timezone.utc)
    clock.advance(minutes=31)  # past the old time
    tick(app)
    assert _sends(app, post_id) == 0
    clock.advance(minutes=30)
    tick(app)
    assert [r.status for r in _rows(app, post_id)] == ["cancelled", "published"]
    assert _sends(app, post_id) == 1
    assert _reconcile(app)["posts_published"] == 1
    assert _post_status(app, post_id) == "published"


def test_re_approval_after_unapproval_schedules_again(client, app, world, clock):
    post_id = _post(client, world, local_time="2026-06-01T10:00")
    clock.advance(minutes=3)
    _call(client, world, post_id, "unapprove")
    [row] = _rows(app, post_id)
    assert (row.status, row.cancel_kind) == ("cancelled", "orphaned")
    again = _call(client, world, post_id, "approve")
    assert [a["status"] for a in again["actions"]] == ["cancelled", "queued"]
    assert _reconcile(app)["inserted"] == 0


def test_a_persons_cancel_is_never_undone_by_the_reconciler(client, app, world, clock):
    post_id = _post(client, world, local_time="2026-06-01T10:00")
    [row] = _rows(app, post_id)
    cancelled = client.post(f"/api/v1/actions/{row.id}/cancel", headers=world.auth("marketer"))
    assert cancelled.status_code == 200
    for _ in range(3):
        clock.advance(minutes=1)
        assert _reconcile(app)["skip_terminal"] == 1
    _call(client, world, post_id, "unapprove")
    _call(client, world, post_id, "approve")
    assert [(r.status, r.cancel_kind) for r in _rows(app, post_id)] == [("cancelled", "person")]


def test_a_removed_target_is_withdrawn_after_the_age_gate(client, app, world, clock):
    _add_channel(app, world, "second")
    post_id = _post(client, world, targets=("main", "second"), local_time="2026-06-01T10:00")
    edit = client.patch(f"/api/v1/posts/{post_id}", headers=world.auth(), json={"targets": ["main"]})
    assert edit.status_code == 200 and edit.json["delivery"]["total"] == 1
    assert len(_active(app, post_id)) == 2  # the second row is young: left
    clock.advance(minutes=3)
    assert _reconcile(app)["removed"] == 1
    assert [(r.target_key, r.status) for r in _active(app, post_id)] == [("main", "queued")]


def test_the_stale_view_a_pass_that_planned_before_an_edit_does_not_undo_it(client, app, world):
    post_id = _post(client, world)
    with app.app_context(), read_session() as session:
        plan = plan_pass(session)
    moved = client.patch(f"/api/v1/posts/{post_id}", headers=world.auth(), json={"local_time": "2026-06-01T11:00"})
    assert moved.status_code == 200
    with app.app_context():
        rt = runtime()
        summary = reconcile_workspaces(plan, clock=rt.clock, policy=rt.policy, actor=Actor.job("reconcile"))
    assert summary["unchanged"] == 1 and summary["rescheduled"] == 0
    [live] = _active(app, post_id)
    assert live.publish_at == datetime(2026, 6, 1, 15, 0, tzinfo=timezone.utc)


def test_the_stale_view_a_pass_waits_for_an_edit_in_flight_and_reads_it(client, app, world):
    """The pass reads the post under its lock: an uncommitted edit makes it wait, then it sees the edit."""
    import threading

    from models.posts.operations import update_post
    from models.posts.reconciler import reconcile_post

    post_id = _post(client, world)
    outcome = {}

    def reconcile_meanwhile():
        with app.app_context(), write_session() as session:
            rt = runtime()
            outcome["counts"] = reconcile_post(session, world.workspace_id, post_id, now=rt.now(), policy=rt.policy,
                                               actor=Actor.job("reconcile")).counts

    with app.app_context():
        rt = runtime()
        with write_session() as session:
            update_post(session, world.workspace_id, post_id, wall_date=datetime(2026, 6, 1).date(),
                        wall_time=datetime(2026, 6, 1, 11, 0).time(), actor=Actor(label="user:editor"),
                        now=rt.now(), policy=rt.policy)
            racer = threading.Thread(target=reconcile_meanwhile)
            racer.start()
            racer.join(timeout=0.5)
            assert racer.is_alive()  # held off by the edit's lock
        racer.join(timeout=30)
    assert outcome["counts"] == {"unchanged": 1}
    [live] = _active(app, post_id)
    assert live.publish_at == datetime(2026, 6, 1, 15, 0, tzinfo=timezone.utc)


def test_archive_cancels_and_post_now_after_archive_is_refused(client, app, world, clock):
    post_id = _post(client, world, local_time="2026-06-01T10:00")
    archived = _call(client, world, post_id, "archive")
    assert [(a["status"], a["cancel_kind"]) for a in archived["actions"]] == [("cancelled", "person")]
    assert _reconcile(app)["inserted"] == 0
    refused = client.post(f"/api/v1/posts/{post_id}/post-now", headers=world.auth("marketer"), json={"channel": "main"})
    assert refused.status_code == 409 and refused.json["error"]["code"] == "not_approved"
    for _ in range(3):
        clock.advance(minutes=3)
        summary = _reconcile(app)
        assert summary["inserted"] == 0 and summary["removed"] == 0
        tick(app)
    assert _sends(app, post_id) == 0
    assert [r.status for r in _rows(app, post_id)] == ["cancelled"]


def test_post_now_replaces_the_queued_row_and_the_reconciler_leaves_it(client, app, world, clock):
    post_id = _post(client, world, local_time="2026-06-01T10:00")
    _call(client, world, post_id, "post-now")
    old, new = _rows(app, post_id)
    assert (old.cancel_kind, new.rescheduled_from_id, new.origin) == ("rescheduled", old.id, "person")
    assert _reconcile(app)["skip_not_ours"] == 1
    tick(app)
    clock.advance(hours=3)
    summary = _reconcile(app)
    assert summary["inserted"] == 0 and summary["posts_published"] == 1
    tick(app)
    assert _sends(app, post_id) == 1


def test_a_zone_change_moves_the_rows_to_the_new_instant(client, app, world):
    post_id = _post(client, world, local_time="2026-06-02T09:00")
    [before] = _rows(app, post_id)
    assert before.publish_at == datetime(2026, 6, 2, 13, 0, tzinfo=timezone.utc)

    def to_paris(session):
        session.get(Workspace, world.workspace_id).timezone = "Europe/Paris"

    _in_session(app, to_paris)
    summary = _reconcile(app)
    assert summary["rescheduled"] == 1
    old, new = _rows(app, post_id)
    assert (old.status, old.cancel_kind, new.rescheduled_from_id) == ("cancelled", "rescheduled", old.id)
    assert new.publish_at == datetime(2026, 6, 2, 7, 0, tzinfo=timezone.utc)
    assert _reconcile(app)["rescheduled"] == 0


def test_a_garbage_zone_skips_its_workspace_and_the_others_are_reconciled(client, app, world):
    other = make_world(app, name="Other", zone="Europe/Paris")
    broken_post = _post(client, world, approve=False)
    good_post = _post(client, other, local_time="2026-06-01T18:00", approve=False)
    _sql(app, "UPDATE posts SET status = 'approved'")
    _sql(app, "UPDATE workspaces SET timezone = 'Mars/Olympus' WHERE id = :id", id=world.workspace_id)
    summary = _reconcile(app)
    assert summary["workspaces_skipped"] == 1 and summary["inserted"] == 1
    [error] = summary["errors"]
    assert error["workspace"] == "Acme" and "Mars/Olympus" in error["error"]
    assert _rows(app, broken_post) == [] and len(_rows(app, good_post)) == 1
    with app.app_context(), read_session() as session:
        run = session.get(ClockRun, summary["clock_run_id"])
        assert run.kind == "reconcile" and run.finished_at is not None and run.summary["errors"] == [error]


def test_tickwork_reconcile_runs_one_pass_and_prints_its_summary(client, app, world):
    post_id = _post(client, world, approve=False)
    _sql(app, "UPDATE posts SET status = 'approved'")
    result = app.test_cli_runner().invoke(args=["reconcile"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["inserted"] == 1 and summary["kind"] == "reconcile"
    assert len(_rows(app, post_id)) == 1


def test_every_target_sent_marks_the_post_published_with_its_delivery(client, app, world, clock):
    _add_channel(app, world, "second")
    _add_channel(app, world, "third")
    post_id = _post(client, world, targets=("main", "second", "third"))
    [_, second, _] = _rows(app, post_id)
    _in_session(app, lambda s: lifecycle.cancel(s, second.id, kind=CancelKind.PERSON, now=clock.now(),
                                                actor=WORKER, workspace_id=world.workspace_id))
    clock.advance(minutes=30)
    tick(app)
    _reconcile(app)
    shown = client.get(f"/api/v1/posts/{post_id}", headers=world.auth()).json
    assert shown["status"] == "approved" and shown["delivery"]["label"] == "2 of 3 sent"
    assert [t["status"] for t in shown["targets"]] == ["published", "cancelled", "published"]
    _call(client, world, post_id, "post-now", channel="second")
    tick(app)
    assert _reconcile(app)["posts_published"] == 1
    assert _post_status(app, post_id) == "published"


RACER = """
import json, sys
from datetime import datetime
from models.timing.clock import FrozenClock
from webapp import create_app
app = create_app({"TICKWORK_CLOCK": FrozenClock(datetime.fromisoformat(sys.argv[1]))})
role, rounds, start = sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
import time
from jobs.clock import reconcile_once, tick_once
while time.time() < start:
    time.sleep(0.01)
began = time.time()  # on a loaded box building the app can take longer than the head start
out = []
with app.app_context():
    if role == "reconcile":
        for _ in range(rounds):
            out.append(reconcile_once()["inserted"])
    else:  # tick until the due half has been dispatched (or a deadline), racing the reconcilers
        while sum(out) < rounds and time.time() < began + 60:
            out.append(tick_once(inline=True)["dispatched"])
print(json.dumps(out))
"""


@pytest.mark.slow
def test_concurrent_reconcilers_and_a_tick_never_duplicate_or_double_send(client, app, world, clock, database_url):
    _add_channel(app, world, "second")
    ids = [_post(client, world, targets=("main", "second"), approve=False,
                 local_time="2026-06-01T08:00" if n % 2 else "2026-06-01T09:00") for n in range(20)]
    _sql(app, "UPDATE posts SET status = 'approved'")  # every insert is left to the racing passes
    env = dict(os.environ, TICKWORK_DATABASE_URL=database_url, TICKWORK_SECRET_KEY=TEST_SECRET,
               TICKWORK_QUEUE_URL="immediate")
    start = time.time() + 2.5
    procs = [subprocess.Popen([sys.executable, "-c", RACER, clock.now().isoformat(), role, rounds, str(start)],
                              cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for role, rounds in (("reconcile", "6"), ("reconcile", "6"), ("tick", "20"))]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    with app.app_context(), read_session() as session:
        per_key = session.execute(
            select(ScheduledAction.thing_id, ScheduledAction.target_key, func.count())
            .where(ScheduledAction.status.in_(["queued", "submitted", "published"]))
            .group_by(ScheduledAction.thing_id, ScheduledAction.target_key)).all()
        assert len(per_key) == 40 and {count for *_, count in per_key} == {1}
        inserted = session.scalar(select(func.count()).select_from(ActionEvent)
                                  .where(ActionEvent.from_status.is_(None)))
    assert inserted == 40  # each (post, target) minted once, by one of the two passes
    tick(app)  # a pass after the race: the racing ticker stops at its deadline, which a loaded box can reach first
    assert _sends(app) == 20  # the due half went out, once each
    clock.advance(hours=1)
    _reconcile(app)
    tick(app)
    assert _sends(app) == 40
    _reconcile(app)
    assert {_post_status(app, post_id) for post_id in ids} == {"published"}
