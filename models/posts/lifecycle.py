"""The post lifecycle. Every status change of a post happens here, and only here.

::

    draft ──approve (review off)──────────────────▶ approved ──publish──▶ published
      │ ▲                                              ▲  │
      │ └──────────────unapprove──────────────────────┼──┘
      submit                                          approve (review required: an admin or a reviewer, never the author)
      ▼                                                │
    in_review ─────────────────────────────────────────┘
      │  └──request_changes (with a comment)──▶ draft
      └──expire (its time passed)──▶ expired ──redraft (a new time)──▶ draft
    approved ──return_to_review (an edit of what it sends, while review is required)──▶ in_review
    draft / in_review / approved / published / expired ──archive──▶ archived

| move            | from                       | to        | made by                              | stamps                      |
|-----------------|----------------------------|-----------|--------------------------------------|-----------------------------|
| submit          | draft                      | in_review | a person who composes, while review is required | submitted_at     |
| request_changes | in_review                  | draft     | an admin or a reviewer, with a comment | submitted_at cleared      |
| approve         | draft (review off), in_review | approved | a person (review required: an admin or a reviewer, not the author) | approved_at |
| unapprove       | approved                   | draft     | a person                             | approved_at cleared         |
| return_to_review | approved                  | in_review | an edit of what goes out (text, media, variants, thread, first comment, targets) while review is required | submitted_at; approved_at cleared |
| expire          | in_review                  | expired   | the expiry pass, once the post's time has passed | expired_at      |
| redraft         | expired                    | draft     | a person giving the post a new time  | expired_at, submitted_at cleared |
| publish         | approved                   | published | the reconciler, once every target's latest row is published | published_at (the last send's time) |
| archive         | draft, in_review, approved, published, expired | archived | a person (its queued rows are cancelled first) | archived_at |

Which moves a workspace's review setting allows, and who may make them, is
:mod:`models.posts.review`'s to decide; this module only moves. The words a person gives with
a review step are the event's reason (and a comment in the post's thread).

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
    """The ways a post's status may change."""

    SUBMIT = "submit"
    REQUEST_CHANGES = "request_changes"
    APPROVE = "approve"
    UNAPPROVE = "unapprove"
    RETURN_TO_REVIEW = "return_to_review"
    EXPIRE = "expire"
    REDRAFT = "redraft"
    PUBLISH = "publish"
    ARCHIVE = "archive"


ALLOWED_POST_MOVES: dict[PostMove, tuple[frozenset[PostStatus], PostStatus]] = {
    PostMove.SUBMIT: (frozenset({PostStatus.DRAFT}), PostStatus.IN_REVIEW),
    PostMove.REQUEST_CHANGES: (frozenset({PostStatus.IN_REVIEW}), PostStatus.DRAFT),
    PostMove.APPROVE: (frozenset({PostStatus.DRAFT, PostStatus.IN_REVIEW}), PostStatus.APPROVED),
    PostMove.UNAPPROVE: (frozenset({PostStatus.APPROVED}), PostStatus.DRAFT),
    PostMove.RETURN_TO_REVIEW: (frozenset({PostStatus.APPROVED}), PostStatus.IN_REVIEW),
    PostMove.EXPIRE: (frozenset({PostStatus.IN_REVIEW}), PostStatus.EXPIRED),
    PostMove.REDRAFT: (frozenset({PostStatus.EXPIRED}), PostStatus.DRAFT),
    PostMove.PUBLISH: (frozenset({PostStatus.APPROVED}), PostStatus.PUBLISHED),
    PostMove.ARCHIVE: (frozenset({PostStatus.DRAFT, PostStatus.IN_REVIEW, PostStatus.APPROVED, PostStatus.PUBLISHED,
                                  PostStatus.EXPIRED}), PostStatus.ARCHIVED),
}

_t = Post.__table__
_c = _t.c
NOW = bindparam("now", type_=UTCDateTime())


def _statement(move: PostMove, **values):
    """``UPDATE posts SET status = <target>, ... WHERE id = :post_id AND status = :seen_status``."""
    _, target = ALLOWED_POST_MOVES[move]
    return update(_t).where(_c.id == bindparam("post_id"), _c.status == bindparam("seen_status")).values(
        status=target.value, updated_at=NOW, **values).returning(_c.id)


SUBMIT = _statement(PostMove.SUBMIT, submitted_at=NOW)
REQUEST_CHANGES = _statement(PostMove.REQUEST_CHANGES, submitted_at=None)
APPROVE = _statement(PostMove.APPROVE, approved_at=NOW)
EXPIRE = _statement(PostMove.EXPIRE, expired_at=NOW)
REDRAFT = _statement(PostMove.REDRAFT, expired_at=None, submitted_at=None)
UNAPPROVE = _statement(PostMove.UNAPPROVE, approved_at=None)
RETURN_TO_REVIEW = _statement(PostMove.RETURN_TO_REVIEW, submitted_at=NOW, approved_at=None)
PUBLISH = _statement(PostMove.PUBLISH, published_at=bindparam("sent_at", type_=UTCDateTime()))
ARCHIVE = _statement(PostMove.ARCHIVE, archived_at=NOW)

_STATEMENTS = {PostMove.SUBMIT: SUBMIT, PostMove.REQUEST_CHANGES: REQUEST_CHANGES, PostMove.APPROVE: APPROVE,
               PostMove.UNAPPROVE: UNAPPROVE, PostMove.RETURN_TO_REVIEW: RETURN_TO_REVIEW, PostMove.EXPIRE: EXPIRE,
               PostMove.REDRAFT: REDRAFT, PostMove.PUBLISH: PUBLISH, PostMove.ARCHIVE: ARCHIVE}
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


def submit(session: Session, post: Post, *, now: datetime, actor: Actor, comment: str | None = None) -> Outcome:
    """draft → in_review: it waits for a reviewer's decision."""
    return _move(session, PostMove.SUBMIT, post, now=now, actor=actor, reason=_with("submitted for review", comment))


def request_changes(session: Session, post: Post, *, now: datetime, actor: Actor, comment: str) -> Outcome:
    """in_review → draft: the reviewer asks for changes, and says which."""
    return _move(session, PostMove.REQUEST_CHANGES, post, now=now, actor=actor,
                 reason=_with("changes requested", comment))


def approve(session: Session, post: Post, *, now: datetime, actor: Actor, comment: str | None = None) -> Outcome:
    """draft or in_review → approved: the reconciler keeps a row per target from now on."""
    return _move(session, PostMove.APPROVE, post, now=now, actor=actor, reason=_with("approved", comment))


def expire(session: Session, post: Post, *, now: datetime, actor: Actor) -> Outcome:
    """in_review → expired: its time passed before anyone decided."""
    return _move(session, PostMove.EXPIRE, post, now=now, actor=actor, reason="its time passed while in review")


def redraft(session: Session, post: Post, *, now: datetime, actor: Actor) -> Outcome:
    """expired → draft: it was given a new time, to be submitted again."""
    return _move(session, PostMove.REDRAFT, post, now=now, actor=actor, reason="a new time after it expired")


def _with(what: str, comment: str | None) -> str:
    return f"{what}: {comment}" if comment else what


def unapprove(session: Session, post: Post, *, now: datetime, actor: Actor) -> Outcome:
    """approved → draft: the reconciler withdraws its queued rows (age gate permitting)."""
    return _move(session, PostMove.UNAPPROVE, post, now=now, actor=actor, reason="back to draft")


def return_to_review(session: Session, post: Post, *, now: datetime, actor: Actor, reason: str) -> Outcome:
    """approved → in_review: what it sends changed after it was approved, and review is required."""
    return _move(session, PostMove.RETURN_TO_REVIEW, post, now=now, actor=actor, reason=reason)


def publish(session: Session, post: Post, *, now: datetime, actor: Actor, sent_at: datetime | None = None) -> Outcome:
    """approved → published, by the reconciler once every target's latest row was published;
    ``published_at`` is when the last target was sent (``sent_at``), not when the pass noticed."""
    return _move(session, PostMove.PUBLISH, post, now=now, actor=actor, reason="every target sent",
                 sent_at=sent_at or now)


def archive(session: Session, post: Post, *, now: datetime, actor: Actor, reason: str | None = None) -> Outcome:
    """draft, in_review, approved, published or expired → archived: withdrawn for good."""
    return _move(session, PostMove.ARCHIVE, post, now=now, actor=actor, reason=reason or "archived")
