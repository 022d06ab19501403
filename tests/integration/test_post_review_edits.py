"""An edit of an approved post while review is required: a change to what it sends (text, media, variants, thread,
first comment, targets) returns it to review and withdraws its queued rows (kind ``orphaned``), and the answer says
so; a new time alone keeps it approved and moves its rows. Whoever edits, an admin or a reviewer too.

T0 is 2026-06-01T12:00Z, 08:00 in the world's zone (America/New_York).
"""

import pytest
from sqlalchemy import select

from models.actions.tables import ScheduledAction
from models.channels.tables import Channel
from models.core.database import read_session, write_session
from models.core.runtime import runtime
from models.posts.tables import Post, PostComment, PostEvent
from tests.conftest import add_member_with_token

LATER = "2026-06-01T10:00"


@pytest.fixture
def reviewed(app, client, world):
    """A workspace that requires review, with a reviewer, and channels that take a thread and a first comment."""
    add_member_with_token(app, world, "reviewer")
    with app.app_context(), write_session() as session:
        now = runtime().now()
        session.add(Channel(workspace_id=world.workspace_id, name="second", kind="log", config={}, created_at=now))
        session.add(Channel(workspace_id=world.workspace_id, name="toots", kind="mastodon",
                            config={"url": "https://masto.example"}, created_at=now))
        session.add(Channel(workspace_id=world.workspace_id, name="pro", kind="linkedin", config={}, created_at=now))
    answer = client.patch("/api/v1/workspace", headers=world.auth("admin"), json={"review": "required"})
    assert answer.status_code == 200, answer.json
    return world


def _approved(client, world, *, targets=("main",), role="marketer", **fields) -> int:
    created = client.post("/api/v1/posts", headers=world.auth(role), json={
        "body": "Fresh bread", "targets": list(targets), "local_time": LATER, **fields})
    assert created.status_code == 201, created.json
    post_id = created.json["id"]
    assert client.post(f"/api/v1/posts/{post_id}/submit", headers=world.auth(role)).status_code == 200
    approved = client.post(f"/api/v1/posts/{post_id}/approve", headers=world.auth("reviewer"))
    assert approved.status_code == 200 and approved.json["status"] == "approved", approved.json
    return post_id


def _heads(app, post_id) -> list[tuple]:
    with app.app_context(), read_session() as session:
        return [(row.target_key, row.status, row.cancel_kind) for row in session.scalars(
            select(ScheduledAction).where(ScheduledAction.thing_id == f"post:{post_id}").order_by(ScheduledAction.id))]


def _last_event(app, post_id) -> tuple:
    with app.app_context(), read_session() as session:
        event = session.scalars(select(PostEvent).where(PostEvent.post_id == post_id)
                                .order_by(PostEvent.id.desc())).first()
        return event.from_status, event.to_status, event.actor, event.reason


CHANGES = [
    ("text", {}, {"body": "Fresh rye"}),
    ("variants", {}, {"variants": {"main": {"body": "Fresh bread, for the log"}}}),
    ("targets", {}, {"targets": ["main", "second"]}),
    ("thread", {"targets": ["toots"], "thread": [{"body": "Second"}]}, {"thread": [{"body": "Second, reworded"}]}),
    ("first comment", {"targets": ["pro"], "first_comment": "Order online"}, {"first_comment": "Order by phone"}),
]


@pytest.mark.parametrize(("part", "made", "change"), CHANGES, ids=[part for part, _, _ in CHANGES])
def test_a_change_to_what_goes_out_returns_an_approved_post_to_review_and_withdraws_its_rows(
        app, client, reviewed, part, made, change):
    post_id = _approved(client, reviewed, **made)
    targets = made.get("targets", ["main"])
    assert [(target, status) for target, status, _ in _heads(app, post_id)] == [(t, "queued") for t in targets]
    answer = client.patch(f"/api/v1/posts/{post_id}", headers=reviewed.auth("marketer"), json=change)
    assert answer.status_code == 200, answer.json
    assert answer.json["status"] == "in_review"
    assert f"changed after it was approved ({part})" in answer.json["note"] and "back in review" in answer.json["note"]
    assert all(status == "cancelled" and kind == "orphaned" for _, status, kind in _heads(app, post_id))
    assert _last_event(app, post_id) == ("approved", "in_review", "api:marketer@acme.test",
                                         f"changed after it was approved ({part}): back to review")
    with app.app_context(), read_session() as session:
        post = session.get(Post, post_id)
        assert post.approved_at is None and post.submitted_at is not None
        step = session.scalars(select(PostComment).where(PostComment.post_id == post_id)
                               .order_by(PostComment.id.desc())).first()
        assert (step.kind, step.post_revision) == ("submit", post.revision)
    # Approved again, its rows are minted again (an orphaned cancel does not stand).
    again = client.post(f"/api/v1/posts/{post_id}/approve", headers=reviewed.auth("reviewer"))
    assert again.status_code == 200 and again.json["status"] == "approved"
    queued = [target for target, status, _ in _heads(app, post_id) if status == "queued"]
    assert sorted(queued) == sorted(change.get("targets", targets))


def test_a_new_time_alone_keeps_the_post_approved_and_moves_its_rows(app, client, reviewed):
    post_id = _approved(client, reviewed)
    answer = client.patch(f"/api/v1/posts/{post_id}", headers=reviewed.auth("marketer"),
                          json={"local_time": "2026-06-01T11:00"})
    assert answer.status_code == 200 and answer.json["status"] == "approved", answer.json
    assert "review" not in (answer.json.get("note") or "")
    assert [(status, kind) for _, status, kind in _heads(app, post_id)] == [("cancelled", "rescheduled"),
                                                                             ("queued", None)]
    # The same text sent again is no change either.
    same = client.patch(f"/api/v1/posts/{post_id}", headers=reviewed.auth("marketer"),
                        json={"body": "Fresh bread", "targets": ["main"]})
    assert same.status_code == 200 and same.json["status"] == "approved"


def test_an_approvers_own_edit_returns_it_to_review_too_and_only_someone_not_its_author_approves_it_again(
        app, client, reviewed):
    post_id = _approved(client, reviewed)  # written by the marketer
    answer = client.patch(f"/api/v1/posts/{post_id}", headers=reviewed.auth("admin"), json={"body": "Fresh rye"})
    assert answer.status_code == 200 and answer.json["status"] == "in_review"
    # The admin edited it but is not its author: they may approve the new revision.
    assert client.post(f"/api/v1/posts/{post_id}/approve", headers=reviewed.auth("admin")).json["status"] == "approved"
    own = _approved(client, reviewed, role="admin")  # the admin's own post, approved by the reviewer
    client.patch(f"/api/v1/posts/{own}", headers=reviewed.auth("admin"), json={"body": "Fresh rye"})
    refused = client.post(f"/api/v1/posts/{own}/approve", headers=reviewed.auth("admin"))
    assert refused.status_code == 403 and refused.json["error"]["code"] == "own_post"


def test_with_review_off_an_edit_keeps_the_post_approved(app, client, world):
    created = client.post("/api/v1/posts", headers=world.auth("marketer"),
                          json={"body": "Fresh bread", "targets": ["main"], "local_time": LATER})
    post_id = created.json["id"]
    assert client.post(f"/api/v1/posts/{post_id}/approve", headers=world.auth("marketer")).status_code == 200
    answer = client.patch(f"/api/v1/posts/{post_id}", headers=world.auth("marketer"), json={"body": "Fresh rye"})
    assert answer.status_code == 200 and answer.json["status"] == "approved"
    assert [status for _, status, _ in _heads(app, post_id)] == ["cancelled", "queued"]  # its row follows the text
