"""The post lifecycle: every status change is one guarded move with its post event; a refused
move is a typed refusal, a 409 in the API and a message in place on the dashboard.

T0 is 2026-06-01T12:00Z, 08:00 in the world's zone (America/New_York).
"""

from datetime import timedelta

from sqlalchemy import select, update

from models.core.database import read_session, write_session
from models.core.moves import Actor, Refusal
from models.posts import lifecycle as post_lifecycle
from models.posts.lifecycle import ALLOWED_POST_MOVES, PostMove
from models.posts.tables import Post, PostEvent
from tests.integration.clock_helpers import tick
from tests.integration.test_reconciler import _call, _post, _reconcile


def _events(app, post_id) -> list[tuple]:
    with app.app_context(), read_session() as session:
        return [(e.from_status, e.to_status, e.actor, e.clock_run_id is not None) for e in session.scalars(
            select(PostEvent).where(PostEvent.post_id == post_id).order_by(PostEvent.id))]


def test_the_table_of_post_moves_is_the_posts_state_machine():
    assert {move: (sorted(s.value for s in sources), target.value)
            for move, (sources, target) in ALLOWED_POST_MOVES.items()} == {
        PostMove.SUBMIT: (["draft"], "in_review"),
        PostMove.REQUEST_CHANGES: (["in_review"], "draft"),
        PostMove.APPROVE: (["draft", "in_review"], "approved"),
        PostMove.UNAPPROVE: (["approved"], "draft"),
        PostMove.RETURN_TO_REVIEW: (["approved"], "in_review"),
        PostMove.EXPIRE: (["in_review"], "expired"),
        PostMove.REDRAFT: (["expired"], "draft"),
        PostMove.PUBLISH: (["approved"], "published"),
        PostMove.ARCHIVE: (["approved", "draft", "expired", "in_review", "published"], "archived"),
    }


def test_every_status_change_of_a_post_writes_its_event_and_the_reconciler_is_the_actor_of_publish(app, client,
                                                                                                    world, clock):
    post_id = _post(client, world, local_time="2026-06-01T08:30")  # created, approved
    _call(client, world, post_id, "unapprove")
    _call(client, world, post_id, "approve")
    clock.advance(minutes=31)
    tick(app)
    _reconcile(app)
    _call(client, world, post_id, "archive")
    assert _events(app, post_id) == [
        (None, "draft", "api:marketer@acme.test", False),
        ("draft", "approved", "api:marketer@acme.test", False),
        ("approved", "draft", "api:marketer@acme.test", False),
        ("draft", "approved", "api:marketer@acme.test", False),
        ("approved", "published", "job:reconcile", True),
        ("published", "archived", "api:marketer@acme.test", False),
    ]
    with app.app_context(), read_session() as session:
        post = session.get(Post, post_id)
        assert (post.status, post.archived_at) == ("archived", clock.now())


def test_approving_an_archived_post_is_a_409_in_the_api_and_changes_nothing(app, client, world):
    post_id = _post(client, world, approve=False)
    _call(client, world, post_id, "archive")
    before = _events(app, post_id)
    for verb in ("approve", "unapprove"):
        answer = client.post(f"/api/v1/posts/{post_id}/{verb}", headers=world.auth("marketer"))
        assert answer.status_code == 409
        assert answer.json["error"]["code"] == "wrong_state" and "archived" in answer.json["error"]["message"]
    assert _events(app, post_id) == before


def test_a_move_from_a_status_the_post_no_longer_has_is_refused_not_overwritten(app, client, world, clock):
    post_id = _post(client, world, approve=False)
    with app.app_context(), write_session() as session:
        post = session.get(Post, post_id)
        assert post.status == "draft"
        # Someone else approves it after we read it; our view of it is now stale.
        session.execute(update(Post).where(Post.id == post_id).values(status="approved"))
        outcome = post_lifecycle.approve(session, post, now=clock.now(), actor=Actor(label="stale"))
        assert not outcome.ok and outcome.reason is Refusal.WRONG_STATE and outcome.status == "approved"
    assert [event[:2] for event in _events(app, post_id)] == [(None, "draft")]


def _draft_behind_its_rows(app, post_id) -> None:
    """A post that is a draft while its reconciler row is still queued: unapprove cancels the rows in
    its own transaction, so only a write outside the posts wing leaves this; the dispatch's check is
    the last line against it."""
    with app.app_context(), write_session() as session:
        session.execute(update(Post).where(Post.id == post_id).values(status="draft"))


def test_unapprove_leaves_no_queued_row_behind_whatever_its_age(app, client, world, clock):
    post_id = _post(client, world, local_time="2026-06-01T08:01")
    _call(client, world, post_id, "unapprove")  # the row is far younger than the age gate
    from tests.integration.test_reconciler import _rows
    (row,) = _rows(app, post_id)
    assert (row.status, row.cancel_kind) == ("cancelled", "orphaned")
    clock.advance(minutes=1, seconds=30)
    assert tick(app)["due"] == 0


def test_a_row_whose_post_went_back_to_draft_is_stopped_at_claim_time_not_sent(app, client, world, clock):
    """Should a draft's row still be queued, the dispatch's pre-send check withdraws it."""
    post_id = _post(client, world, local_time="2026-06-01T08:01")
    _draft_behind_its_rows(app, post_id)
    clock.advance(minutes=1, seconds=30)
    summary = tick(app)
    assert summary["outcomes"] == {"stopped:orphaned": 1}
    from tests.integration.test_reconciler import _rows, _sends
    (row,) = _rows(app, post_id)
    assert (row.status, row.cancel_kind, row.attempt_count) == ("cancelled", "orphaned", 0)
    assert _sends(app, post_id) == 0
    clock.advance(minutes=5)
    assert tick(app)["due"] == 0


def test_a_zone_change_moves_queued_rows_keeps_sent_ones_and_a_preview_changes_nothing(app, client, world, clock):
    from models.accounts.workspaces import change_workspace_zone, preview_zone_change
    from models.core.runtime import runtime
    from tests.integration.test_reconciler import _rows

    sent = _post(client, world, local_time="2026-06-01T08:01")
    clock.advance(minutes=2)
    tick(app)
    waiting = _post(client, world, local_time="2026-06-05T09:00")
    (before,) = _rows(app, waiting)
    with app.app_context():
        rt = runtime()
        kwargs = dict(hooks=rt.hooks, now=rt.now(), actor=Actor(label="test"), policy=rt.policy)
        with write_session() as session:
            preview = preview_zone_change(session, world.workspace_id, "Europe/London", **kwargs)
        # Other wings report their own parts beside the posts'.
        assert {key: preview[key] for key in ("from", "to", "posts")} == {
            "from": "America/New_York", "to": "Europe/London", "posts": {"posts_moved": 1, "posts_inserted": 0}}
        assert [row.id for row in _rows(app, waiting)] == [before.id]  # nothing moved
        with write_session() as session:
            moved = change_workspace_zone(session, world.workspace_id, "Europe/London", **kwargs)
        assert moved["posts"] == {"posts_moved": 1, "posts_inserted": 0}
    old, new = _rows(app, waiting)
    assert (old.status, old.cancel_kind) == ("cancelled", "rescheduled")
    assert new.rescheduled_from_id == old.id and new.publish_at == before.publish_at - timedelta(hours=5)
    (kept,) = _rows(app, sent)
    assert kept.status == "published"


def test_set_timezone_on_the_command_line_refuses_a_garbage_zone_and_moves_nothing(app, client, world):
    from tests.integration.test_reconciler import _rows

    post_id = _post(client, world, local_time="2026-06-05T09:00")
    runner = app.test_cli_runner()
    refused = runner.invoke(args=["workspace", "set-timezone", "Acme", "Mars/Olympus"])
    assert refused.exit_code == 1 and "not an IANA time zone" in refused.output
    assert len(_rows(app, post_id)) == 1
    done = runner.invoke(args=["workspace", "set-timezone", "Acme", "Europe/London"])
    assert done.exit_code == 0, done.output
    assert '"posts_moved": 1' in done.output and len(_rows(app, post_id)) == 2


def test_the_pre_send_check_also_stops_a_row_that_calls_out_before_it_reaches_the_provider(app, client, world, clock,
                                                                                            httpserver):
    from models.channels.operations import save_channel
    from models.core.runtime import runtime
    from tests.integration.test_reconciler import _rows

    httpserver.expect_request("/hook", method="POST").respond_with_json({"id": "sent"})
    with app.app_context(), write_session() as session:
        save_channel(session, world.workspace_id, name="hook", kind="webhook", config={"url": httpserver.url_for("/hook")},
                     secret="shh", box=runtime().secret_box, now=runtime().now())
    post_id = _post(client, world, local_time="2026-06-01T08:01", targets=("hook",))
    _draft_behind_its_rows(app, post_id)
    clock.advance(minutes=1, seconds=30)
    assert tick(app)["outcomes"] == {"stopped:orphaned": 1}
    assert httpserver.log == []
    (row,) = _rows(app, post_id)
    assert (row.status, row.cancel_kind) == ("cancelled", "orphaned")


def test_a_pre_send_check_may_fail_a_row_as_missed_instead_of_cancelling_it(app, world, clock):
    """The hook is generic: any origin's check may stop a row as a miss (the recurring misfire policy's case)."""
    from models.core.hooks import Stop
    from models.core.runtime import runtime
    from tests.integration.clock_helpers import add_actions, row

    (action_id,) = add_actions(app, world.workspace_id, 1)
    with app.app_context():
        runtime().hooks.add_pre_send_check("person", lambda session, rows, now: {
            r.id: Stop("missed: a newer occurrence went instead", failure_code="missed_window") for r in rows})
    assert tick(app)["outcomes"] == {"missed:missed_window": 1}
    found = row(app, action_id)
    assert (found.status, found.failure_code, found.attempt_count) == ("failed", "missed_window", 0)
    assert found.last_error == "missed: a newer occurrence went instead"
