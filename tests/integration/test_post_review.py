"""The review step: submit, approve by someone else, request changes with a comment, expiry and its
notification, and review links for outside approvers, on both databases.

T0 is 2026-06-01T12:00Z, 08:00 in the world's zone (America/New_York).
"""

import pytest
from sqlalchemy import select

from models.channels.tables import Channel
from models.core.database import read_session, write_session
from models.core.runtime import runtime
from models.notifications.tables import Notification
from models.posts.tables import Post, PostComment, PostEvent, PostReviewLink
from tests.conftest import add_member_with_token

BASE_URL = "https://tickwork.example"


@pytest.fixture
def app_config(app_config):
    app_config.update(TICKWORK_BASE_URL=BASE_URL)
    return app_config


@pytest.fixture
def reviewed(app, client, world):
    """A workspace that requires review, with a reviewer."""
    add_member_with_token(app, world, "reviewer")
    answer = client.patch("/api/v1/workspace", headers=world.auth("admin"), json={"review": "required"})
    assert answer.status_code == 200 and answer.json["review"] == "required", answer.json
    return world


def _draft(client, world, *, role="marketer", local_time="2026-06-01T09:00") -> int:
    answer = client.post("/api/v1/posts", headers=world.auth(role),
                         json={"body": "Fresh bread", "targets": ["main"], "local_time": local_time})
    assert answer.status_code == 201, answer.json
    return answer.json["id"]


def _submitted(client, world, **kwargs) -> int:
    post_id = _draft(client, world, **kwargs)
    answer = client.post(f"/api/v1/posts/{post_id}/submit", headers=world.auth(kwargs.get("role", "marketer")))
    assert answer.status_code == 200, answer.json
    assert answer.json["status"] == "in_review"
    return post_id


def _post(app, post_id) -> Post:
    with app.app_context(), read_session() as session:
        return session.get(Post, post_id)


def _events(app, post_id) -> list[tuple]:
    with app.app_context(), read_session() as session:
        return [(e.from_status, e.to_status, e.actor, e.reason) for e in session.scalars(
            select(PostEvent).where(PostEvent.post_id == post_id).order_by(PostEvent.id))]


def test_only_admins_may_change_the_review_settings(client, world):
    answer = client.patch("/api/v1/workspace", headers=world.auth("ops"), json={"review": "required"})
    assert answer.status_code == 403
    assert client.get("/api/v1/workspace", headers=world.auth("ops")).json["review"] == "off"
    bad = client.patch("/api/v1/workspace", headers=world.auth("admin"), json={"review": "sometimes"})
    assert bad.status_code == 422 and bad.json["error"]["field"] == "review"


def test_an_authors_own_approve_is_refused_while_review_is_required(app, client, reviewed):
    post_id = _submitted(client, reviewed, role="admin")
    answer = client.post(f"/api/v1/posts/{post_id}/approve", headers=reviewed.auth("admin"))
    assert answer.status_code == 403 and answer.json["error"]["code"] == "own_post"
    assert _post(app, post_id).status == "in_review"
    assert client.post(f"/api/v1/posts/{post_id}/approve", headers=reviewed.auth("reviewer")).status_code == 200
    assert _post(app, post_id).status == "approved"


def test_while_review_is_required_a_marketer_submits_and_only_admins_and_reviewers_approve(app, client, reviewed):
    post_id = _draft(client, reviewed)
    early = client.post(f"/api/v1/posts/{post_id}/approve", headers=reviewed.auth("admin"))
    assert early.status_code == 409 and early.json["error"]["code"] == "not_submitted"
    client.post(f"/api/v1/posts/{post_id}/submit", headers=reviewed.auth("marketer"))
    for role in ("marketer", "ops"):
        answer = client.post(f"/api/v1/posts/{post_id}/approve", headers=reviewed.auth(role))
        assert answer.status_code == 403, (role, answer.json)
    assert _post(app, post_id).status == "in_review"
    answer = client.post(f"/api/v1/posts/{post_id}/approve", headers=reviewed.auth("reviewer"))
    assert answer.status_code == 200 and answer.json["status"] == "approved"
    assert [e[:2] for e in _events(app, post_id)] == [(None, "draft"), ("draft", "in_review"),
                                                      ("in_review", "approved")]


def test_submitting_checks_each_targets_own_text_so_a_variant_that_fits_stands_in_for_a_main_text_that_does_not(
        app, client, reviewed):
    with app.app_context(), write_session() as session:
        session.add(Channel(workspace_id=reviewed.workspace_id, name="chirps", kind="x", config={},
                            created_at=runtime().now()))
    long_one = "Our sourdough, slowly. " * 13  # 299 characters: past X's 280, fine for the log channel

    def tailored() -> int:
        answer = client.post("/api/v1/posts", headers=reviewed.auth("marketer"),
                             json={"body": long_one, "targets": ["main", "chirps"], "local_time": "2026-06-01T09:00",
                                   "variants": {"chirps": {"body": "Sourdough at nine."}}})
        assert answer.status_code == 201, answer.json
        return answer.json["id"]

    fits = client.post(f"/api/v1/posts/{tailored()}/submit", headers=reviewed.auth("marketer"))
    assert fits.status_code == 200 and fits.json["status"] == "in_review", fits.json
    post_id = tailored()
    with app.app_context(), write_session() as session:
        session.scalar(select(Channel).where(Channel.name == "chirps")).config = {"max_length": 10}  # lowered since
    refused = client.post(f"/api/v1/posts/{post_id}/submit", headers=reviewed.auth("marketer"))
    assert refused.status_code == 422
    assert (refused.json["error"]["field"], refused.json["error"]["channel"]) == ("variants.chirps.body", "chirps")
    assert _post(app, post_id).status == "draft"


def test_a_reviewer_composes_nothing(client, reviewed):
    answer = client.post("/api/v1/posts", headers=reviewed.auth("reviewer"),
                         json={"body": "Mine", "targets": ["main"], "local_time": "2026-06-01T09:00"})
    assert answer.status_code == 403


def test_a_request_for_changes_returns_the_post_to_draft_with_its_comment(app, client, reviewed):
    post_id = _submitted(client, reviewed)
    empty = client.post(f"/api/v1/posts/{post_id}/request-changes", headers=reviewed.auth("reviewer"), json={})
    assert empty.status_code == 422 and empty.json["error"]["field"] == "comment"
    by_marketer = client.post(f"/api/v1/posts/{post_id}/request-changes", headers=reviewed.auth("marketer"),
                              json={"comment": "nah"})
    assert by_marketer.status_code == 403
    answer = client.post(f"/api/v1/posts/{post_id}/request-changes", headers=reviewed.auth("reviewer"),
                         json={"comment": "Say which bakery"})
    assert answer.status_code == 200 and answer.json["status"] == "draft"
    assert _events(app, post_id)[-1] == ("in_review", "draft", "api:reviewer@acme.test",
                                         "changes requested: Say which bakery")
    thread = client.get(f"/api/v1/posts/{post_id}/comments", headers=reviewed.auth("marketer")).json["comments"]
    assert [(c["kind"], c["author"], c["body"]) for c in thread] == [
        ("submit", "api:marketer@acme.test", ""), ("request_changes", "api:reviewer@acme.test", "Say which bakery")]
    reply = client.post(f"/api/v1/posts/{post_id}/comments", headers=reviewed.auth("marketer"),
                        json={"body": "The one on Main St"})
    assert reply.status_code == 201 and reply.json["kind"] == "comment"


def test_a_post_still_in_review_when_its_time_passes_expires_and_its_author_is_notified(app, client, reviewed,
                                                                                         clock):
    from jobs.clock import expire_posts_once

    post_id = _submitted(client, reviewed, local_time="2026-06-01T08:30")
    with app.app_context():
        assert expire_posts_once()["expired"] == 0  # 08:00: not yet
    clock.advance(minutes=31)
    with app.app_context():
        assert expire_posts_once()["posts"] == [post_id]
        assert expire_posts_once()["expired"] == 0  # once
    shown = client.get(f"/api/v1/posts/{post_id}", headers=reviewed.auth("marketer")).json
    assert (shown["status"], shown["expired_at"]) == ("expired", "2026-06-01T12:31:00Z")
    with app.app_context(), read_session() as session:
        notes = list(session.scalars(select(Notification).where(Notification.subject == f"post:{post_id}")))
    assert [(n.kind, "marketer@acme.test" in n.title) for n in notes] == [("post_expired", True)]
    # A new time returns it to draft, to be submitted again.
    answer = client.patch(f"/api/v1/posts/{post_id}", headers=reviewed.auth("marketer"),
                          json={"local_time": "2026-06-02T09:00"})
    assert answer.status_code == 200 and answer.json["status"] == "draft", answer.json


def _link(client, world, post_id, role="reviewer", **extra):
    return client.post(f"/api/v1/posts/{post_id}/review-links", headers=world.auth(role),
                       json={"reviewer_name": "Dana at Client Co", **extra})


def _token(answer) -> str:
    assert answer.status_code == 201, answer.json
    assert answer.json["url"].startswith(f"{BASE_URL}/review/")
    return answer.json["url"].rsplit("/", 1)[1]


def test_only_reviewers_admins_and_with_outside_approval_the_author_make_review_links(client, reviewed):
    post_id = _submitted(client, reviewed)
    assert _link(client, reviewed, post_id, role="marketer").status_code == 403
    assert _link(client, reviewed, post_id, role="ops").status_code == 403
    client.patch("/api/v1/workspace", headers=reviewed.auth("admin"), json={"outside_approval": True})
    assert _link(client, reviewed, post_id, role="marketer").status_code == 201
    assert _link(client, reviewed, post_id, role="ops").status_code == 403  # not the author


def test_a_review_link_decides_once_and_each_use_is_recorded_as_the_outside_reviewer(app, client, reviewed):
    post_id = _submitted(client, reviewed)
    token = _token(_link(client, reviewed, post_id))
    page = client.get(f"/review/{token}")
    assert page.status_code == 200 and "Fresh bread" in page.get_data(as_text=True)
    said = client.post(f"/review/{token}", data={"decision": "comment", "comment": "Looks tasty"},
                       environ_base={"REMOTE_ADDR": "203.0.113.9"})
    assert said.status_code in (200, 303)
    approved = client.post(f"/review/{token}", data={"decision": "approve", "comment": "Go"},
                           environ_base={"REMOTE_ADDR": "203.0.113.9"})
    assert approved.status_code in (200, 303), approved.get_data(as_text=True)[:300]
    assert _post(app, post_id).status == "approved"
    again = client.post(f"/review/{token}", data={"decision": "request_changes", "comment": "Wait"})
    assert again.status_code == 410
    assert _post(app, post_id).status == "approved"
    assert _events(app, post_id)[-1][:3] == ("in_review", "approved", "outside:Dana at Client Co")
    with app.app_context(), read_session() as session:
        entries = [(c.kind, c.author, c.address) for c in session.scalars(
            select(PostComment).where(PostComment.post_id == post_id, PostComment.kind != "submit")
            .order_by(PostComment.id))]
        link = session.scalar(select(PostReviewLink).where(PostReviewLink.post_id == post_id))
    assert entries == [("comment", "outside:Dana at Client Co", "203.0.113.9"),
                       ("approve", "outside:Dana at Client Co", "203.0.113.9")]
    assert (link.decision, link.used_from) == ("approve", "203.0.113.9")


def test_a_review_link_is_refused_after_it_expires(app, client, reviewed, clock):
    post_id = _submitted(client, reviewed, local_time="2026-06-20T09:00")
    token = _token(_link(client, reviewed, post_id, expires_in_days=1))
    clock.advance(days=1, minutes=1)
    assert client.get(f"/review/{token}").status_code == 410
    assert client.post(f"/review/{token}", data={"decision": "approve"}).status_code == 410
    assert _post(app, post_id).status == "in_review"


def test_a_review_link_is_refused_after_the_post_is_edited(app, client, reviewed):
    post_id = _submitted(client, reviewed)
    token = _token(_link(client, reviewed, post_id))
    client.patch(f"/api/v1/posts/{post_id}", headers=reviewed.auth("marketer"), json={"body": "Fresher bread"})
    answer = client.post(f"/review/{token}", data={"decision": "approve"})
    assert answer.status_code == 410 and "changed" in answer.get_data(as_text=True)
    assert _post(app, post_id).status == "in_review"


def test_an_unknown_review_link_is_not_found(client):
    assert client.get("/review/" + "x" * 43).status_code == 404
    assert client.post("/review/" + "x" * 43, data={"decision": "approve"}).status_code == 404


def test_the_review_page_shows_the_thread_and_the_first_comment_an_approval_sends(app, client, reviewed):
    with app.app_context(), write_session() as session:
        now = runtime().now()
        session.add(Channel(workspace_id=reviewed.workspace_id, name="toots", kind="mastodon",
                            config={"url": "https://masto.example"}, created_at=now))
        session.add(Channel(workspace_id=reviewed.workspace_id, name="pro", kind="linkedin", config={}, created_at=now))
    created = client.post("/api/v1/posts", headers=reviewed.auth("marketer"), json={
        "body": "Fresh bread", "targets": ["toots", "pro"], "local_time": "2026-06-01T09:00",
        "thread": [{"body": "Second: the rye"}], "first_comment": "Order at https://bakery.example/order"})
    assert created.status_code == 201, created.json
    post_id = created.json["id"]
    client.post(f"/api/v1/posts/{post_id}/submit", headers=reviewed.auth("marketer"))
    page = client.get(f"/review/{_token(_link(client, reviewed, post_id))}").get_data(as_text=True)
    toots, pro = page.split('data-channel="pro"')
    assert "Item 2, a reply" in toots and "Second: the rye" in toots and "First comment" not in toots
    assert "First comment" in pro and '<a href="https://bakery.example/order"' in pro and "a reply" not in pro
