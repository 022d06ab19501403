"""The post lifecycle. Every status change of a post happens here, and only here.

::

    draft ──approve──▶ approved ──publish──▶ published
      ▲                  │
      └────unapprove─────┘
    draft / approved / published ──archive──▶ archived

| move      | from                       | to        | made by                              | stamps                      |
|-----------|----------------------------|-----------|--------------------------------------|-----------------------------|
| approve   | draft                      | approved  | a person                             | approved_at                 |
| unapprove | approved                   | draft     | a person                             | approved_at cleared         |
| publish   | approved                   | published | the reconciler, once every target's latest row is published | published_at (the last send's time) |
| archive   | draft, approved, published | archived  | a person (its queued rows are cancelled first) | archived_at       |

Each move is one guarded ``UPDATE posts ... WHERE id = :post_id AND status = :seen``, written
out below and built once, plus its ``post_events`` row, in the caller's transaction. The
caller passes the status it saw (it read the post under its lock), so the event's ``from``
is exact; a post that moved meanwhile is a :class:`~models.core.moves.Refused`
(``wrong_state``), never a silent overwrite. The post object handed in is expired after a
move, so it reads its new values on next use.
"""

import enum
from datetime import datetime

from sqlalchemy import bindparam, insert, update
from sqlalchemy.orm import Session

from models.core.events import event_values
from models.core.moves import Actor, Outcome, move_from_seen
from models.core.types import UTCDateTime
from models.posts.tables import Post, PostEvent, PostStatus


class PostMove(str, enum.Enum):
    """The four ways a post's status may change."""

    APPROVE = "approve"
    UNAPPROVE = "unapprove"
    PUBLISH = "publish"
    ARCHIVE = "archive"


ALLOWED_POST_MOVES: dict[PostMove, tuple[frozenset[PostStatus], PostStatus]] = {
    PostMove.APPROVE: (frozenset({PostStatus.DRAFT}), PostStatus.APPROVED),
    PostMove.UNAPPROVE: (frozenset({PostStatus.APPROVED}), PostStatus.DRAFT),
    PostMove.PUBLISH: (frozenset({PostStatus.APPROVED}), PostStatus.PUBLISHED),
    PostMove.ARCHIVE: (frozenset({PostStatus.DRAFT, PostStatus.APPROVED, PostStatus.PUBLISHED}), PostStatus.ARCHIVED),
}

_t = Post.__table__
_c = _t.c
NOW = bindparam("now", type_=UTCDateTime())


def _statement(move: PostMove, **values):
    """``UPDATE posts SET status = <target>, ... WHERE id = :post_id AND status = :seen_status``."""
    _, target = ALLOWED_POST_MOVES[move]
    return update(_t).where(_c.id == bindparam("post_id"), _c.status == bindparam("seen_status")).values(
        status=target.value, updated_at=NOW, **values).returning(_c.id)


APPROVE = _statement(PostMove.APPROVE, approved_at=NOW)
UNAPPROVE = _statement(PostMove.UNAPPROVE, approved_at=None)
PUBLISH = _statement(PostMove.PUBLISH, published_at=bindparam("sent_at", type_=UTCDateTime()))
ARCHIVE = _statement(PostMove.ARCHIVE, archived_at=NOW)

_STATEMENTS = {PostMove.APPROVE: APPROVE, PostMove.UNAPPROVE: UNAPPROVE, PostMove.PUBLISH: PUBLISH,
               PostMove.ARCHIVE: ARCHIVE}
_EVENT = insert(PostEvent.__table__)


def _event(post_id: int, source: str | None, target: str, *, now: datetime, actor: Actor, reason: str | None) -> dict:
    return event_values(source, target, now=now, actor=actor, reason=reason, post_id=post_id)


def _move(session: Session, move: PostMove, post: Post, *, now: datetime, actor: Actor, reason: str | None,
          **values) -> Outcome:
    """Run ``move`` on ``post`` from the status it was seen in; the event, or why it changed nothing."""
    sources, target = ALLOWED_POST_MOVES[move]
    return move_from_seen(session, post, _STATEMENTS[move], {"post_id": post.id, "now": now, **values},
                          sources=sources,
                          events=_EVENT, event=lambda seen: _event(post.id, seen, target.value, now=now, actor=actor,
                                                                   reason=reason))


def record_creation(session: Session, post: Post, *, now: datetime, actor: Actor) -> None:
    """Write the first event of a freshly inserted post (nothing → draft)."""
    session.execute(_EVENT, _event(post.id, None, post.status, now=now, actor=actor, reason="created"))


def approve(session: Session, post: Post, *, now: datetime, actor: Actor) -> Outcome:
    """draft → approved: the reconciler keeps a row per target from now on."""
    return _move(session, PostMove.APPROVE, post, now=now, actor=actor, reason="approved")


def unapprove(session: Session, post: Post, *, now: datetime, actor: Actor) -> Outcome:
    """approved → draft: the reconciler withdraws its queued rows (age gate permitting)."""
    return _move(session, PostMove.UNAPPROVE, post, now=now, actor=actor, reason="back to draft")


def publish(session: Session, post: Post, *, now: datetime, actor: Actor, sent_at: datetime | None = None) -> Outcome:
    """approved → published, by the reconciler once every target's latest row was published;
    ``published_at`` is when the last target was sent (``sent_at``), not when the pass noticed."""
    return _move(session, PostMove.PUBLISH, post, now=now, actor=actor, reason="every target sent",
                 sent_at=sent_at or now)


def archive(session: Session, post: Post, *, now: datetime, actor: Actor, reason: str | None = None) -> Outcome:
    """draft, approved or published → archived: withdrawn for good."""
    return _move(session, PostMove.ARCHIVE, post, now=now, actor=actor, reason=reason or "archived")
