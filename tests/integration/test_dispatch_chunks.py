"""A dispatch task's chunk of rows: local deliveries commit with their rows, rows that call out go one at a time."""

import threading
from datetime import timedelta

from sqlalchemy import func, select, text

import pytest

from models.actions import lifecycle
from models.actions.tables import ActionEvent, ScheduledAction
from models.core.database import read_session, write_session
from models.clock.dispatch import DispatchContext, dispatch_actions
from models.core.moves import Actor
from models.channels.outbox import OutboxEntry
from models.channels.tables import ChannelThrottle
from tests.integration.clock_helpers import add_actions, events, make_channel, publish_a_legacy_sibling_of, row, rows
from models.core.runtime import runtime

JOB = Actor.job("test")


def dispatch(app, ids):
    with app.app_context():
        rt = runtime()
        return dispatch_actions(ids, DispatchContext.of(rt))


def outbox_ids(app) -> list[int]:
    with app.app_context(), read_session() as session:
        return list(session.scalars(select(OutboxEntry.action_id).order_by(OutboxEntry.id)))


def claims_of(app, ids) -> int:
    with app.app_context(), read_session() as session:
        return session.scalar(select(func.count()).select_from(ActionEvent).where(
            ActionEvent.action_id.in_(ids), ActionEvent.to_status == "submitted"))


# -- the lifecycle's bulk moves -------------------------------------------------------------


def test_claim_many_claims_only_the_due_queued_rows_with_attempts_left_under_one_token(app, clock):
    workspace_id = make_channel(app)
    due = add_actions(app, workspace_id, 3)
    (later,) = add_actions(app, workspace_id, 1, due_in=timedelta(minutes=5))
    (spent,) = add_actions(app, workspace_id, 1)
    with app.app_context(), write_session() as session:
        session.query(ScheduledAction).filter_by(id=spent).update({"attempt_count": 5})
    with app.app_context(), write_session() as session:
        claimed = lifecycle.claim_many(session, due + [later, spent], now=clock.now(), actor=JOB)
    assert sorted(action.id for action in claimed) == due
    assert len({action.claim_token for action in claimed}) == 1
    assert all(action.status == "submitted" and action.attempt_count == 1 for action in claimed)
    after = rows(app, due + [later, spent])
    assert [after[i].status for i in due] == ["submitted"] * 3
    assert after[later].status == "queued" and after[spent].status == "queued"
    assert [e.to_status for e in events(app, due[0])] == ["queued", "submitted"]
    assert [e.to_status for e in events(app, later)] == ["queued"]


def test_claim_many_refused_by_the_publish_guard_changes_nothing(app, clock):
    from models.actions.guard import PublishGuardViolation

    workspace_id = make_channel(app)
    ids = add_actions(app, workspace_id, 3, thing_prefix="post")
    publish_a_legacy_sibling_of(app, ids[1])
    with app.app_context(), write_session() as session:
        with pytest.raises(PublishGuardViolation):
            lifecycle.claim_many(session, ids, now=clock.now(), actor=JOB)
        assert session.scalar(select(func.count()).select_from(ScheduledAction)
                              .where(ScheduledAction.status == "submitted")) == 0
    assert claims_of(app, ids) == 0


def test_publish_many_refuses_a_row_this_transaction_did_not_claim(app, clock):
    workspace_id = make_channel(app)
    (action_id,) = add_actions(app, workspace_id, 1)
    with app.app_context(), pytest.raises(RuntimeError, match="moved 0 of 1"):
        with write_session() as session:
            lifecycle.publish_many(session, [(action_id, "not-the-token", "x")], now=clock.now(), actor=JOB)
    assert row(app, action_id).status == "queued" and len(events(app, action_id)) == 1


# -- local deliveries -----------------------------------------------------------------------


def test_a_chunk_of_log_rows_is_claimed_delivered_and_published_together(app, clock):
    workspace_id = make_channel(app)
    ids = add_actions(app, workspace_id, 5)
    results = dispatch(app, ids)
    assert [(r.action_id, r.label) for r in results] == [(i, "published") for i in ids]
    assert outbox_ids(app) == ids
    after = rows(app, ids)
    assert all(after[i].status == "published" and after[i].provider_id.startswith("outbox:") for i in ids)
    assert [e.to_status for e in events(app, ids[0])] == ["queued", "submitted", "published"]


def test_a_local_chunk_is_delivered_and_published_by_one_move_with_the_stamps_and_events_of_a_claim_and_a_publish(
        app, clock):
    """The deliver move (queued → published at once) leaves each row as claim-then-publish would: one attempt,
    a token of its own, submitted and finished at the chunk's instant, the outbox entry numbered attempt 1 and
    named by the provider id, and the history queued → submitted → published."""
    workspace_id = make_channel(app)
    ids = add_actions(app, workspace_id, 3, thing_prefix="post")
    assert [r.label for r in dispatch(app, ids)] == ["published"] * 3
    after = rows(app, ids)
    with app.app_context(), read_session() as session:
        entries = {entry.action_id: entry for entry in session.scalars(select(OutboxEntry))}
    for action_id in ids:
        done = after[action_id]
        assert (done.status, done.attempt_count) == ("published", 1)
        assert done.submitted_at == done.finished_at == clock.now()
        assert done.provider_id == f"outbox:{entries[action_id].id}" and entries[action_id].attempt == 1
        assert [(e.from_status, e.to_status) for e in events(app, action_id)] == [
            (None, "queued"), ("queued", "submitted"), ("submitted", "published")]
        assert events(app, action_id)[-1].reason == f"provider accepted as {done.provider_id}"
    assert len({after[i].claim_token for i in ids}) == 3


def test_a_local_chunk_the_deliver_move_cannot_take_whole_leaves_no_delivery_of_its_own_behind(app, clock):
    """A row the deliver move refuses (a legacy duplicate: the published sibling its own UPDATE tests for) undoes
    the chunk's deliveries with it; the claim-then-publish way then sends the others once and misses that one."""
    workspace_id = make_channel(app)
    ids = add_actions(app, workspace_id, 3, thing_prefix="post")
    publish_a_legacy_sibling_of(app, ids[1])
    results = {r.action_id: r.label for r in dispatch(app, ids)}
    assert results == {ids[0]: "published", ids[1]: "missed:duplicate_of_published", ids[2]: "published"}
    assert outbox_ids(app) == [ids[0], ids[2]]
    assert [e.to_status for e in events(app, ids[0])] == ["queued", "submitted", "published"]


def test_a_local_chunk_whose_channel_secret_cannot_be_read_is_not_delivered_at_once(app, clock):
    """A delivery that does not succeed (the channel's sealed secret is unreadable) undoes the deliver move's
    savepoint: nothing is published or written to the outbox, and the claim-then-publish way records why."""
    from models.channels.tables import Channel

    workspace_id = make_channel(app, secret="s3cret")
    with app.app_context(), write_session() as session:
        session.execute(Channel.__table__.update().where(Channel.__table__.c.workspace_id == workspace_id)
                        .values(secret_sealed="not a sealed secret"))
    ids = add_actions(app, workspace_id, 2)
    assert {r.action_id: r.label for r in dispatch(app, ids)} == {i: "reverted:not_sent" for i in ids}
    assert outbox_ids(app) == []
    after = rows(app, ids)
    assert all((after[i].status, after[i].attempt_count) == ("queued", 1) for i in ids)
    assert all("cannot be decrypted" in after[i].last_error for i in ids)


def test_a_log_delivery_that_cannot_be_written_leaves_its_whole_chunk_queued_and_unsent(app, clock, backend):
    """The outbox entry and the published status commit together: a failed write undoes the claims too."""
    from models.clock.dispatch import deliver_locally
    from models.channels.tables import Channel

    workspace_id = make_channel(app)
    ids = add_actions(app, workspace_id, 3)
    _refuse_outbox_entries_for(app, backend, ids[2])
    with app.app_context():
        rt = runtime()
        context = DispatchContext.of(rt)
        with read_session() as session:
            chunk = [(session.get(ScheduledAction, i), session.get(Channel, session.get(ScheduledAction, i).channel_id))
                     for i in ids]
            session.expunge_all()
        with pytest.raises(Exception, match="disk full"):
            deliver_locally(chunk, context, JOB)
    after = rows(app, ids)
    assert [after[i].status for i in ids] == ["queued"] * 3
    assert all(after[i].attempt_count == 0 for i in ids)
    assert outbox_ids(app) == [] and claims_of(app, ids) == 0


def test_a_chunk_sorts_late_spent_duplicate_and_taken_rows_from_the_ones_it_sends(app, clock):
    workspace_id = make_channel(app)
    (late,) = add_actions(app, workspace_id, 1, action_type="send_sms", due_in=-timedelta(hours=2))
    (spent,) = add_actions(app, workspace_id, 1, thing_prefix="spent")
    (duplicate,) = add_actions(app, workspace_id, 1, thing_prefix="dup")
    (taken,) = add_actions(app, workspace_id, 1, thing_prefix="taken")
    fine = add_actions(app, workspace_id, 2, thing_prefix="fine")
    with app.app_context(), write_session() as session:
        session.query(ScheduledAction).filter_by(id=spent).update({"attempt_count": 5})
        assert lifecycle.claim(session, taken, now=clock.now(), actor=JOB).ok
    publish_a_legacy_sibling_of(app, duplicate)
    chunk = [late, spent, duplicate, taken] + fine
    results = {r.action_id: r.label for r in dispatch(app, chunk)}
    assert results == {late: "missed:missed_window", spent: "missed:attempts_exhausted",
                       duplicate: "missed:duplicate_of_published", taken: "skipped:submitted",
                       fine[0]: "published", fine[1]: "published"}
    assert outbox_ids(app) == fine
    after = rows(app, chunk)
    assert after[duplicate].failure_code == "duplicate_of_published"
    assert after[taken].status == "submitted"



def test_a_late_row_in_a_chunk_the_bulk_claim_takes_whole_is_missed_not_sent(app, clock):
    """No duplicate in the chunk, so the one claim statement takes every row it is given: the late row must
    be kept out of it beforehand (a chunk with a duplicate falls back to one-by-one claims, which judge lateness
    themselves, and would not tell)."""
    workspace_id = make_channel(app)
    (late,) = add_actions(app, workspace_id, 1, action_type="send_sms", due_in=-timedelta(hours=2))
    fine = add_actions(app, workspace_id, 2, thing_prefix="fine")
    results = {r.action_id: r.label for r in dispatch(app, [late] + fine)}
    assert results == {late: "missed:missed_window", fine[0]: "published", fine[1]: "published"}
    assert outbox_ids(app) == fine
    assert rows(app, [late])[late].failure_code == "missed_window"

# -- rows that call out ---------------------------------------------------------------------


def test_a_chunk_mixing_local_and_remote_rows_sends_each_its_own_way(app, clock, httpserver):
    httpserver.expect_request("/hook", method="POST").respond_with_json({"id": "r-1"})
    log_ws = make_channel(app)
    hook_ws = make_channel(app, "webhook", {"url": httpserver.url_for("/hook")}, workspace="Hooks")
    logged = add_actions(app, log_ws, 2)
    hooked = add_actions(app, hook_ws, 2)
    chunk = [hooked[0], logged[0], hooked[1], logged[1]]
    results = dispatch(app, chunk)
    assert [r.action_id for r in results] == chunk and {r.label for r in results} == {"published"}
    assert sorted(outbox_ids(app)) == logged
    assert len(httpserver.log) == 2


def test_rows_that_call_out_are_claimed_one_at_a_time_as_each_is_sent(app, clock, httpserver):
    """A worker that dies mid-chunk leaves only the row it was sending submitted; the rest stay queued."""
    workspace_id = make_channel(app, "webhook", {"url": httpserver.url_for("/hook")})
    ids = add_actions(app, workspace_id, 3)
    seen = []

    def answer(request):
        from werkzeug import Response

        seen.append({i: r.status for i, r in rows(app, ids).items()})
        return Response("{}", status=200, content_type="application/json")

    httpserver.expect_request("/hook").respond_with_handler(answer)
    dispatch(app, ids)
    assert seen == [
        {ids[0]: "submitted", ids[1]: "queued", ids[2]: "queued"},
        {ids[0]: "published", ids[1]: "submitted", ids[2]: "queued"},
        {ids[0]: "published", ids[1]: "published", ids[2]: "submitted"},
    ]


def test_a_late_row_that_calls_out_is_missed_not_claimed_with_its_batch(app, clock, httpserver):
    """The rows that call out are claimed in batches by one statement too: a late row must be kept out of it
    beforehand and missed, never claimed and sent."""
    httpserver.expect_request("/hook", method="POST").respond_with_json({"id": "r-1"})
    workspace_id = make_channel(app, "webhook", {"url": httpserver.url_for("/hook")})
    (late,) = add_actions(app, workspace_id, 1, action_type="send_sms", due_in=-timedelta(hours=2))
    fine = add_actions(app, workspace_id, 2, thing_prefix="fine")
    results = {r.action_id: r.label for r in dispatch(app, [late] + fine)}
    assert results == {late: "missed:missed_window", fine[0]: "published", fine[1]: "published"}
    assert len(httpserver.log) == 2 and claims_of(app, [late]) == 0
    assert rows(app, [late])[late].failure_code == "missed_window"


# -- helpers ----------------------------------------------------------------------------------


def _refuse_outbox_entries_for(app, backend: str, action_id: int) -> None:
    """A real write failure inside the database: a trigger that refuses one action's outbox entry."""
    with app.app_context(), write_session() as session:
        if backend == "sqlite":
            session.execute(text(
                "CREATE TRIGGER refuse_outbox BEFORE INSERT ON outbox_entries "
                f"WHEN NEW.action_id = {int(action_id)} BEGIN SELECT RAISE(ABORT, 'disk full'); END"))
        else:
            session.execute(text(
                "CREATE FUNCTION refuse_outbox() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                f"IF NEW.action_id = {int(action_id)} THEN RAISE EXCEPTION 'disk full'; END IF; RETURN NEW; END $$"))
            session.execute(text("CREATE TRIGGER refuse_outbox BEFORE INSERT ON outbox_entries "
                                 "FOR EACH ROW EXECUTE FUNCTION refuse_outbox()"))



@pytest.fixture
def threaded_httpserver():
    from pytest_httpserver import HTTPServer

    server = HTTPServer(host="127.0.0.1", threaded=True)
    server.start()
    yield server
    server.clear()
    server.stop()


def test_a_chunks_rows_that_call_out_wait_on_the_network_side_by_side_each_claimed_for_its_own_send(
        app, clock, threaded_httpserver):
    """Four sends in flight at once from one chunk: each receiver call waits until all four have arrived."""
    from concurrent.futures import ThreadPoolExecutor
    from werkzeug import Response

    from models.core.database import db

    httpserver = threaded_httpserver
    workspace_id = make_channel(app, "webhook", {"url": httpserver.url_for("/hook")})
    ids = add_actions(app, workspace_id, 4)
    together = threading.Barrier(4, timeout=10)
    seen = []

    def answer(request):
        together.wait()  # raises (and answers 500) unless the four are in flight together
        seen.append({i: r.status for i, r in rows(app, ids).items()})
        return Response('{"id": "ok"}', status=200, content_type="application/json")

    httpserver.expect_request("/hook").respond_with_handler(answer)
    with app.app_context(), ThreadPoolExecutor(4) as pool:
        results = dispatch_actions(ids, DispatchContext.of(runtime(), engine=db.engine, pool=pool))
    assert [r.label for r in results] == ["published"] * 4
    assert len(seen) == 4 and all(set(statuses.values()) <= {"submitted", "published"} for statuses in seen)
    assert claims_of(app, ids) == 4


def test_a_chunk_whose_database_write_fails_is_delivered_row_by_row_and_the_refused_row_stays_queued(
        app, clock, backend):
    workspace_id = make_channel(app)
    ids = add_actions(app, workspace_id, 3)
    _refuse_outbox_entries_for(app, backend, ids[1])
    results = dispatch(app, ids)
    assert [r.label for r in results] == ["published", "error:database", "published"]
    after = rows(app, ids)
    assert [after[i].status for i in ids] == ["published", "queued", "published"]
    assert outbox_ids(app) == [ids[0], ids[2]]
    assert claims_of(app, [ids[0]]) == 1 and claims_of(app, [ids[1]]) == 0 and after[ids[1]].attempt_count == 0


def _dispatch_while_another_holds(app, database_url, ids, *, held):
    """The dispatch of ``ids`` while another transaction holds row ``held`` locked; it must not wait on it."""
    import psycopg

    done = []
    with psycopg.connect(database_url.replace("postgresql+psycopg", "postgresql")) as holder:
        holder.execute("SELECT id FROM scheduled_actions WHERE id = %s FOR UPDATE", (held,))
        worker = threading.Thread(target=lambda: done.append(dispatch(app, ids)))
        worker.start()
        worker.join(timeout=30)
        assert done, "the dispatch waited on the held row"
    return done[0]


@pytest.mark.only_backend("postgresql")
def test_a_chunk_skips_rows_another_transaction_holds_instead_of_waiting_on_them(app, clock, database_url):
    """Two overlapping chunks never wait on each other in a cycle: a held row is left to its holder."""
    workspace_id = make_channel(app)
    ids = add_actions(app, workspace_id, 3)
    results = _dispatch_while_another_holds(app, database_url, ids, held=ids[1])
    assert [r.label for r in results] == ["published", "skipped:busy", "published"]
    assert row(app, ids[1]).status == "queued" and outbox_ids(app) == [ids[0], ids[2]]


@pytest.mark.only_backend("postgresql")
def test_a_batch_of_rows_that_call_out_skips_rows_another_transaction_holds_instead_of_waiting_on_them(
        app, clock, database_url, httpserver):
    """The batched claim of rows that call out locks its rows skipping the held ones, as a local chunk does."""
    httpserver.expect_request("/hook", method="POST").respond_with_json({"id": "r-1"})
    workspace_id = make_channel(app, "webhook", {"url": httpserver.url_for("/hook")})
    ids = add_actions(app, workspace_id, 3)
    results = _dispatch_while_another_holds(app, database_url, ids, held=ids[1])
    assert [r.label for r in results] == ["published", "skipped:busy", "published"]
    assert row(app, ids[1]).status == "queued" and len(httpserver.log) == 2


# -- batched claims of rows that call out -----------------------------------------------------


def _pooled(size: int, **changes):
    """The app's dispatch context with a pool of ``size`` sending threads and as many slots."""
    from concurrent.futures import ThreadPoolExecutor
    from dataclasses import replace

    from models.clock.dispatch import SendSlots
    from models.core.database import db

    pool = ThreadPoolExecutor(size)
    return pool, replace(DispatchContext.of(runtime(), engine=db.engine, pool=pool, slots=SendSlots(size)), **changes)


def test_a_batched_claim_never_claims_a_row_whose_channel_has_no_room_or_whose_check_says_stop(
        app, clock, threaded_httpserver):
    """One chunk, claimed in one batch on a pool of eight: a row a pre-send check stops is cancelled, a paused
    channel's rows and a rate-limited channel's rows beyond its next slot are held; none of them is claimed
    or sent, and the batch's other rows were claimed together before the first request arrived."""
    from models.channels.tables import Channel
    from models.core.hooks import Hooks, Stop

    httpserver = threaded_httpserver
    seen = []

    def answer(request):
        from werkzeug import Response

        seen.append({i: r.status for i, r in rows(app, plain + paused + limited).items()})
        return Response('{"id": "ok"}', status=200, content_type="application/json")

    httpserver.expect_request("/hook").respond_with_handler(answer)
    url = {"url": httpserver.url_for("/hook")}
    workspace_id = make_channel(app, "webhook", url)
    make_channel(app, "webhook", url, name="paused")
    make_channel(app, "webhook", {**url, "rate": "1/s"}, name="limited")
    plain = add_actions(app, workspace_id, 4, thing_prefix="plain")
    paused = add_actions(app, workspace_id, 2, channel="paused", thing_prefix="paused")
    limited = add_actions(app, workspace_id, 4, channel="limited", thing_prefix="limited")
    stopped = plain[1]
    with app.app_context(), write_session() as session:
        paused_id = session.scalar(select(Channel.id).where(Channel.name == "paused"))
        session.add(ChannelThrottle(channel_id=paused_id, paused_until=clock.now() + timedelta(minutes=5),
                                    pause_reason="429", updated_at=clock.now()))
    hooks = Hooks()
    hooks.add_pre_send_check("person", lambda session, batch, now: {
        row.id: Stop("not sent: the test withdrew it", cancel_kind="orphaned") for row in batch if row.id == stopped})
    with app.app_context():
        pool, context = _pooled(8, hooks=hooks, sleep=lambda seconds: None)
        with pool:
            results = {r.action_id: r.label for r in dispatch_actions(plain + paused + limited, context)}
    sent = [i for i in plain if i != stopped] + limited[:2]
    assert results == {**{i: "published" for i in sent}, stopped: "stopped:orphaned",
                       **{i: "held:paused" for i in paused}, **{i: "held:rate" for i in limited[2:]}}
    assert len(httpserver.log) == len(sent)
    assert claims_of(app, plain + paused + limited) == len(sent)
    assert claims_of(app, [stopped] + paused + limited[2:]) == 0
    after = rows(app, plain + paused + limited)
    assert after[stopped].status == "cancelled"
    assert all(after[i].status == "queued" and after[i].attempt_count == 0 for i in paused + limited[2:])
    # Batched: when the first request arrived, every row sent had been claimed already.
    assert {i for i, status in seen[0].items() if status == "submitted"} == set(sent)
    assert len({after[i].claim_token for i in sent}) == len(sent)  # each row its own token


def test_a_claimed_row_whose_request_starts_late_is_re_checked_and_not_sent_once_declared_lost(
        app, clock, threaded_httpserver):
    """A rate-limited row waits for its slot after its claim; recovery declares it lost meanwhile: its token is
    read again before the request, so it is never sent, and recovery's verdict stands."""
    from dataclasses import replace

    from models.actions.tables import FailureCode
    from models.clock.dispatch import recheck_after

    httpserver = threaded_httpserver
    httpserver.expect_request("/hook").respond_with_json({"id": "ok"})
    workspace_id = make_channel(app, "webhook", {"url": httpserver.url_for("/hook"), "rate": "1/s"})
    first, late = add_actions(app, workspace_id, 2)

    def declared_lost_while_waiting(seconds: float):  # in a sending thread: no app context, the engine given
        with write_session(engine) as session:
            assert lifecycle.fail(session, late, code=FailureCode.WORKER_LOST, message="worker lost; outcome unknown",
                                  now=clock.now(), actor=JOB, submitted_before=clock.now() + timedelta(hours=1)).ok
        import time

        time.sleep(recheck_after(policy) + 0.05)

    with app.app_context():
        from models.core.database import db

        engine = db.engine
        policy = replace(runtime().policy, provider_timeout=timedelta(seconds=0.5), task_timeout=timedelta(seconds=1),
                         recovery_timeout=timedelta(seconds=2))
        pool, context = _pooled(4, policy=policy, sleep=declared_lost_while_waiting)
        with pool:
            results = {r.action_id: r.label for r in dispatch_actions([first, late], context)}
    assert results == {first: "published", late: "skipped:claim_lost:not_sent"}
    assert len(httpserver.log) == 1 and '"id":%d' % first in httpserver.log[0][0].get_data(as_text=True)
    assert row(app, late).status == "failed" and row(app, late).failure_code == "worker_lost"
