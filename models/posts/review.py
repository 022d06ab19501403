"""The review step: who may submit, approve and request changes, the comment thread on a post,
and the expiry of posts still in review when their time passes.

| step            | who may                                                          | while review is |
|-----------------|------------------------------------------------------------------|-----------------|
| submit          | whoever composes (marketers, ops, admins)                        | either          |
| approve         | whoever composes or reviews                                      | off             |
| approve         | admins and reviewers, never the post's author, from ``in_review`` only | required  |
| request changes | admins and reviewers, with a comment, from ``in_review``         | either          |
| comment         | every member                                                     | either          |

Each step is one move of :mod:`models.posts.lifecycle` (its event carries the comment) and
one entry of the post's thread (``post_comments``), in the same transaction.
"""

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from models.accounts.permissions import Permission, can, refusal
from models.accounts.tables import Role, User, Workspace
from models.core.errors import Conflict, Forbidden, InvalidInput
from models.core.moves import Actor
from models.core.policy import Policy
from models.notifications.inbox import raise_notification
from models.posts import lifecycle as post_lifecycle
from models.posts.checks import check_texts, check_wall_time
from models.posts.reading import get_post, post_targets, resolve_post_time
from models.posts.tables import Post, PostComment, PostStatus
from models.timing.wall_time import InvalidTimezone

REVIEW_SETTINGS = ("off", "required")
MAX_COMMENT = 2000


class CommentKind:
    COMMENT = "comment"
    SUBMIT = "submit"
    APPROVE = "approve"
    REQUEST_CHANGES = "request_changes"


def review_required(session: Session, workspace_id: int) -> bool:
    """Whether the workspace's posts go through review before they are approved."""
    return session.scalar(select(Workspace.review).where(Workspace.id == workspace_id)) == "required"


def check_comment(text, *, required: bool) -> str | None:
    """A comment as kept: stripped, at most 2,000 characters; refused when required and empty."""
    if text is None or (isinstance(text, str) and not text.strip()):
        if required:
            raise InvalidInput("say what should change: a comment is required", field="comment", code="missing")
        return None
    if not isinstance(text, str) or "\x00" in text:
        raise InvalidInput("a comment is text", field="comment")
    text = text.strip()
    if len(text) > MAX_COMMENT:
        raise InvalidInput(f"a comment is at most {MAX_COMMENT} characters", field="comment", code="too_long")
    return text


def check_may_approve(session: Session, post: Post, role: Role | None, actor: Actor) -> None:
    """Forbidden (or 409) unless this person may approve ``post`` now; ``role`` None is an outside reviewer,
    whose link was checked already."""
    if role is not None and not can(role, Permission.APPROVE):
        raise Forbidden(refusal(Permission.APPROVE, "approve a post"))
    if not review_required(session, post.workspace_id):
        return
    if role is not None and not can(role, Permission.REVIEW):
        raise Forbidden("While review is required, only admins and reviewers approve; submit it for review.",
                        code="review_required")
    if actor.user_id is not None and post.created_by_id == actor.user_id:
        raise Forbidden("An author never approves their own post; another reviewer must.", code="own_post")
    if post.status == PostStatus.DRAFT.value:
        raise Conflict(f"post #{post.id} is a draft; it is submitted for review before it is approved",
                       code="not_submitted", status_now=post.status)


def record_step(session: Session, post: Post, *, kind: str, actor: Actor, body: str | None, now: datetime,
                address: str | None = None) -> PostComment:
    """One entry of the post's thread: a comment, or the words that came with a review step."""
    entry = PostComment(post_id=post.id, author_user_id=actor.user_id, author=actor.label[:255], kind=kind,
                        body=body or "", post_revision=post.revision, address=address, created_at=now)
    session.add(entry)
    session.flush()
    return entry


def _refused(post: Post, what: str) -> Conflict:
    return Conflict(f"post #{post.id} is {post.status}; {what}", code="wrong_state", status_now=post.status)


def submit_post(session: Session, workspace_id: int, post_id: int, *, actor: Actor, role: Role, now: datetime,
                policy: Policy, comment=None) -> Post:
    """draft → in_review, after the checks approval would make (each target's own text fits, its time is ahead)."""
    if not can(role, Permission.COMPOSE):
        raise Forbidden(refusal(Permission.COMPOSE, "submit a post for review"))
    comment = check_comment(comment, required=False)
    post = get_post(session, workspace_id, post_id, lock=True)
    if post.status == PostStatus.IN_REVIEW.value:
        return post
    if post.status != PostStatus.DRAFT.value:
        raise _refused(post, "only a draft is submitted for review")
    check_texts(post.body, post.variants, post_targets(session, post.id))  # each target's own text, as approve
    check_wall_time(post.wall_date, post.wall_time, _zone(session, workspace_id), now, policy)
    outcome = post_lifecycle.submit(session, post, now=now, actor=actor, comment=comment)
    if not outcome.ok:
        raise _refused(post, "only a draft is submitted for review")
    post.updated_at = now
    record_step(session, post, kind=CommentKind.SUBMIT, actor=actor, body=comment, now=now)
    return post


def request_changes(session: Session, workspace_id: int, post_id: int, *, actor: Actor, role: Role | None,
                    now: datetime, comment, address: str | None = None) -> Post:
    """in_review → draft with a comment saying what should change; ``role`` None is an outside reviewer."""
    if role is not None and not can(role, Permission.REVIEW):
        raise Forbidden(refusal(Permission.REVIEW, "request changes"))
    comment = check_comment(comment, required=True)
    post = get_post(session, workspace_id, post_id, lock=True)
    outcome = post_lifecycle.request_changes(session, post, now=now, actor=actor, comment=comment)
    if not outcome.ok:
        raise _refused(post, "changes are requested of a post in review")
    record_step(session, post, kind=CommentKind.REQUEST_CHANGES, actor=actor, body=comment, now=now, address=address)
    return post


def add_comment(session: Session, workspace_id: int, post_id: int, *, actor: Actor, role: Role | None, body,
                now: datetime, address: str | None = None) -> PostComment:
    """A comment on the post's thread; ``role`` None is an outside reviewer."""
    if role is not None and not can(role, Permission.COMMENT):
        raise Forbidden(refusal(Permission.COMMENT, "comment"))
    text = check_comment(body, required=True)
    post = get_post(session, workspace_id, post_id)
    return record_step(session, post, kind=CommentKind.COMMENT, actor=actor, body=text, now=now, address=address)


def list_comments(session: Session, workspace_id: int, post_id: int) -> list[PostComment]:
    """The post's thread, oldest first."""
    get_post(session, workspace_id, post_id)
    return list(session.scalars(select(PostComment).where(PostComment.post_id == post_id).order_by(PostComment.id)))


# -- expiry -----------------------------------------------------------------------------------


@dataclass
class ExpiryPass:
    expired: list[int]
    skipped: int = 0

    def summary(self) -> dict:
        return {"expired": len(self.expired), "posts": self.expired, "skipped": self.skipped}


def expire_overdue_posts(session: Session, *, now: datetime, actor: Actor) -> ExpiryPass:
    """Every post still in review whose time has passed becomes ``expired``, and its author is told.

    Idempotent: a post expires once (the move is guarded), and its notification is raised once
    per expiry (keyed by the post and its revision). A workspace whose zone is garbage is skipped,
    never a crash.
    """
    result = ExpiryPass(expired=[])
    rows = session.execute(
        select(Post, Workspace.timezone).join(Workspace, Workspace.id == Post.workspace_id)
        .where(Post.status == PostStatus.IN_REVIEW.value).order_by(Post.id)).all()
    for post, zone in rows:
        try:
            instant = resolve_post_time(post, zone).instant
        except InvalidTimezone:
            result.skipped += 1
            continue
        if instant > now:
            continue
        locked = get_post(session, post.workspace_id, post.id, lock=True)
        if locked.status != PostStatus.IN_REVIEW.value:
            continue
        if not post_lifecycle.expire(session, locked, now=now, actor=actor).ok:
            continue
        _notify_author(session, locked, now=now)
        result.expired.append(locked.id)
    return result


def _notify_author(session: Session, post: Post, *, now: datetime) -> None:
    author = session.get(User, post.created_by_id) if post.created_by_id else None
    who = author.email if author is not None else "its author"
    raise_notification(
        session, post.workspace_id, kind="post_expired", subject=f"post:{post.id}",
        title=f"Post #{post.id} expired in review ({who})",
        body=(f"For {who}: post #{post.id} was still waiting for review when its time "
              f"({post.wall_date.isoformat()} {post.wall_time.strftime('%H:%M')}) passed, so it was not sent. "
              "Give it a new time to return it to draft, then submit it again."),
        dedupe_key=f"post_expired:{post.id}:{post.revision}", now=now)


def _zone(session: Session, workspace_id: int) -> str | None:
    return session.scalar(select(Workspace.timezone).where(Workspace.id == workspace_id))
