"""Review links: a signed, expiring address an outside reviewer opens without an account.

| step     | who may                                                                          |
|----------|----------------------------------------------------------------------------------|
| make one | an admin or a reviewer; the post's author too when the workspace's ``outside_approval`` is on (a link is a bearer secret) |
| revoke   | an admin or a reviewer, or whoever made it                                       |
| use one  | whoever holds it, while it works: not used for a decision, not revoked, not expired, and the post unchanged since (its revision) |

Only the token's SHA-256 is kept. Every use is recorded as ``outside:<name>`` with the time and the
address it came from (the thread entry, and the post event of a decision). A decision is refused
while the same browser holds the author's session, so an author cannot approve their own post
through a link.
"""

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from models.accounts.permissions import Permission, can
from models.accounts.tables import Role, Workspace
from models.core.errors import Conflict, DomainError, Forbidden, InvalidInput, NotFound
from models.core.moves import Actor
from models.core.policy import Policy
from models.posts.operations import approve_post
from models.posts.reading import get_post
from models.posts.review import add_comment, check_may_approve, request_changes
from models.posts.tables import Post, PostReviewLink, PostStatus

DEFAULT_DAYS = 7
MAX_DAYS = 30
DECISIONS = ("approve", "request_changes")


class LinkGone(DomainError):
    """The link existed but no longer works."""

    status = 410
    code = "link_gone"


def _hash(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def _reviewer_name(name) -> str:
    if not isinstance(name, str) or not name.strip() or len(name.strip()) > 100 or "\x00" in name:
        raise InvalidInput("name the outside reviewer: 1 to 100 characters", field="reviewer_name")
    return " ".join(name.split())


def _days(days) -> int:
    if days is None:
        return DEFAULT_DAYS
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= MAX_DAYS:
        raise InvalidInput(f"expires_in_days is a whole number from 1 to {MAX_DAYS}", field="expires_in_days")
    return days


def may_make_link(session: Session, post: Post, role: Role, user_id: int | None) -> bool:
    """An admin or a reviewer; the author too while the workspace lets authors make links."""
    if can(role, Permission.REVIEW):
        return True
    outside = session.scalar(select(Workspace.outside_approval).where(Workspace.id == post.workspace_id))
    return bool(outside) and user_id is not None and post.created_by_id == user_id and can(role, Permission.COMPOSE)


@dataclass(frozen=True)
class NewLink:
    link: PostReviewLink
    token: str  # shown once: only its hash is kept


def make_link(session: Session, workspace_id: int, post_id: int, *, reviewer_name, actor: Actor, role: Role,
              now: datetime, days=None) -> NewLink:
    """A link for a named outside reviewer, working until it is used, revoked, expired or the post changes."""
    name, days = _reviewer_name(reviewer_name), _days(days)
    post = get_post(session, workspace_id, post_id)
    if not may_make_link(session, post, role, actor.user_id):
        raise Forbidden("Only admins and reviewers make review links (and the author, when the workspace allows "
                        "outside approval).", code="forbidden")
    if post.status not in (PostStatus.DRAFT.value, PostStatus.IN_REVIEW.value):
        raise Conflict(f"post #{post.id} is {post.status}; only a draft or a post in review is reviewed",
                       code="wrong_state", status_now=post.status)
    raw = secrets.token_urlsafe(32)
    link = PostReviewLink(post_id=post.id, token_hash=_hash(raw), reviewer_name=name, created_by_id=actor.user_id,
                          post_revision=post.revision, created_at=now, expires_at=now + timedelta(days=days))
    session.add(link)
    session.flush()
    return NewLink(link, raw)


def revoke_link(session: Session, workspace_id: int, post_id: int, link_id: int, *, actor: Actor, role: Role,
                now: datetime) -> PostReviewLink:
    """The link stops working; revoking a revoked link changes nothing."""
    get_post(session, workspace_id, post_id)
    link = session.scalar(select(PostReviewLink).where(PostReviewLink.id == link_id,
                                                       PostReviewLink.post_id == post_id))
    if link is None:
        raise NotFound(f"no review link #{link_id} on post #{post_id}")
    if not can(role, Permission.REVIEW) and link.created_by_id != actor.user_id:
        raise Forbidden("Only admins, reviewers and whoever made the link revoke it.", code="forbidden")
    if link.revoked_at is None:
        link.revoked_at = now
        session.flush()
    return link


def links_of(session: Session, workspace_id: int, post_id: int) -> list[PostReviewLink]:
    """The post's review links, newest first."""
    get_post(session, workspace_id, post_id)
    return list(session.scalars(select(PostReviewLink).where(PostReviewLink.post_id == post_id)
                                .order_by(PostReviewLink.id.desc())))


def why_not_working(link: PostReviewLink, post: Post, now: datetime) -> str | None:
    """Why the link no longer works, in words for its holder; None while it works."""
    if link.used_at is not None:
        return f"This link was used to {link.decision.replace('_', ' ')} on {link.used_at:%d %b %Y %H:%M} UTC."
    if link.revoked_at is not None:
        return "This link was withdrawn."
    if link.expires_at <= now:
        return "This link has expired."
    if post.revision != link.post_revision or post.status not in (PostStatus.DRAFT.value, PostStatus.IN_REVIEW.value):
        return "The post changed after this link was made; ask for a new link."
    return None


def open_link(session: Session, raw, *, now: datetime, lock: bool = False) -> tuple[PostReviewLink, Post]:
    """The working link ``raw`` names and its post; 404 for no such link, 410 for one that stopped working."""
    if not isinstance(raw, str) or not 20 <= len(raw) <= 100:
        raise NotFound("no such review link")
    link = session.scalar(select(PostReviewLink).where(PostReviewLink.token_hash == _hash(raw)))
    if link is None:
        raise NotFound("no such review link")
    post = session.get(Post, link.post_id)
    post = get_post(session, post.workspace_id, post.id, lock=lock)
    why = why_not_working(link, post, now)
    if why:
        raise LinkGone(why)
    return link, post


def outside_actor(link: PostReviewLink) -> Actor:
    return Actor(label=f"outside:{link.reviewer_name}")


def use_link(session: Session, raw, *, decision: str, comment, address: str | None, signed_in_user_id: int | None,
             now: datetime, policy: Policy):
    """Approve, request changes or comment through a link; a decision uses the link up.

    Refused (403) while the browser holds the author's session. Returns the post's change for a
    decision (its new rows), or the comment.
    """
    if decision not in (*DECISIONS, "comment"):
        raise InvalidInput("decide approve, request_changes or comment", field="decision", code="bad_choice")
    link, post = open_link(session, raw, now=now, lock=True)
    actor = outside_actor(link)
    address = (address or "")[:64] or None
    if decision == "comment":
        return add_comment(session, post.workspace_id, post.id, actor=actor, role=None, body=comment, now=now,
                           address=address)
    if signed_in_user_id is not None and signed_in_user_id == post.created_by_id:
        raise Forbidden("This browser is signed in as the post's author: an author never approves their own post. "
                        "Open the link where you are not signed in.", code="own_post")
    if decision == "approve":
        check_may_approve(session, post, None, actor)
        result = approve_post(session, post.workspace_id, post.id, actor=actor, now=now, policy=policy,
                              comment=(comment or "").strip()[:2000] or None, address=address)
        if result.post.status != PostStatus.APPROVED.value:
            raise Conflict("the post was not approved", code="wrong_state", status_now=result.post.status)
    else:
        result = request_changes(session, post.workspace_id, post.id, actor=actor, role=None, now=now,
                                 comment=comment, address=address)
    link.used_at, link.decision, link.used_from = now, decision, address
    session.flush()
    return result
