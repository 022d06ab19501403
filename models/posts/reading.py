"""Reading posts: one post, a page of them, their targets, the rows minted for them, their delivery."""

from dataclasses import dataclass
from datetime import date, time

from sqlalchemy import select
from sqlalchemy.orm import Session

from models.actions.tables import ScheduledAction, Status
from models.channels.tables import Channel
from models.core.errors import NotFound
from models.core.keyset import after as keyset_after
from models.core.keyset import decode_cursor, encode_cursor
from models.posts.content import content_for
from models.posts.tables import ACTION_TYPE, MAX_ID, Post, PostTarget, post_id_of, thing_id_of
from models.timing.wall_time import ResolvedTime, resolve_wall_time


def post_targets(session: Session, post_id: int) -> list[Channel]:
    """The post's target channels, in the order they were chosen."""
    return list(
        session.scalars(
            select(Channel)
            .join(PostTarget, PostTarget.channel_id == Channel.id)
            .where(PostTarget.post_id == post_id)
            .order_by(PostTarget.id)
        )
    )


def post_rows(session: Session, workspace_id: int, post_ids: list[int]) -> dict[int, list[ScheduledAction]]:
    """Every row minted for each of ``post_ids`` (any status, any origin), oldest first.

    One indexed lookup by (workspace, action type, thing): the cost follows these posts'
    own rows, never the workspace's history.
    """
    if not post_ids:
        return {}
    found: dict[int, list[ScheduledAction]] = {pid: [] for pid in post_ids}
    rows = session.scalars(
        select(ScheduledAction)
        .where(
            ScheduledAction.workspace_id == workspace_id,
            ScheduledAction.action_type == ACTION_TYPE,
            ScheduledAction.thing_id.in_([thing_id_of(pid) for pid in post_ids]),
        )
        .order_by(ScheduledAction.id)
    )
    for row in rows:
        found[post_id_of(row.thing_id)].append(row)
    return found


@dataclass(frozen=True)
class TargetDelivery:
    """One target of a post, and its latest row (if any)."""

    channel: str
    latest: ScheduledAction | None

    @property
    def status(self) -> str:
        return self.latest.status if self.latest is not None else "none"


@dataclass(frozen=True)
class PostDelivery:
    """Per-target delivery of a post: "2 of 3 sent"."""

    targets: list[TargetDelivery]

    @property
    def sent(self) -> int:
        return sum(1 for t in self.targets if t.status == Status.PUBLISHED.value)

    @property
    def total(self) -> int:
        return len(self.targets)

    @property
    def label(self) -> str:
        return f"{self.sent} of {self.total} sent"

    @property
    def all_sent(self) -> bool:
        return self.total > 0 and self.sent == self.total


def delivery_of(target_names: list[str], rows: list[ScheduledAction]) -> PostDelivery:
    """Each target's latest row (by id) among ``rows``."""
    latest: dict[str, ScheduledAction] = {}
    for row in rows:
        if row.target_key not in latest or row.id > latest[row.target_key].id:
            latest[row.target_key] = row
    return PostDelivery([TargetDelivery(name, latest.get(name)) for name in target_names])


def get_post(session: Session, workspace_id: int, post_id: int, *, lock: bool = False) -> Post:
    """The post, or :class:`NotFound`. ``lock`` takes its row lock (PostgreSQL; SQLite's writer
    lock is already held by a write transaction) and re-reads it, so a decision made on it
    cannot rest on an older version."""
    if not 0 < post_id <= MAX_ID:
        raise NotFound(f"no post #{post_id} in this workspace")  # before PostgreSQL refuses the integer
    query = select(Post).where(Post.id == post_id, Post.workspace_id == workspace_id)
    if lock:
        query = query.with_for_update().execution_options(populate_existing=True)
    post = session.scalar(query)
    if post is None:
        raise NotFound(f"no post #{post_id} in this workspace")
    return post


def posts_by_id(session: Session, workspace_id: int, post_ids) -> dict[int, Post]:
    """The posts of this workspace among ``post_ids`` (others are left out), in one query."""
    wanted = sorted({pid for pid in post_ids if 0 < pid <= MAX_ID})
    if not wanted:
        return {}
    return {post.id: post for post in session.scalars(
        select(Post).where(Post.workspace_id == workspace_id, Post.id.in_(wanted)))}


def resolve_post_time(post: Post, zone: str) -> ResolvedTime:
    """The post's wall time in ``zone`` as a UTC instant (raises InvalidTimezone)."""
    return resolve_wall_time(post.wall_date, post.wall_time, zone)


def post_payload(post: Post, channel_name: str | None = None) -> dict:
    """What a row minted for ``post`` carries to the target ``channel_name``: its variant if it has one
    (:func:`models.posts.content.content_for`), else the main body and media."""
    if channel_name is None:
        return {"post_id": post.id, "body": post.body, "media": list(post.media or [])}
    body, media = content_for(post, channel_name)
    return {"post_id": post.id, "body": body, "media": media}


def list_posts(
    session: Session,
    workspace_id: int,
    *,
    start: date | None = None,
    end: date | None = None,
    statuses: list[str] | None = None,
    after: tuple[date, time, int] | None = None,
    limit: int = 50,
) -> list[Post]:
    """A page of posts by (wall date, wall time, id); ``start`` and ``end`` are inclusive dates."""
    query = select(Post).where(Post.workspace_id == workspace_id)
    if start is not None:
        query = query.where(Post.wall_date >= start)
    if end is not None:
        query = query.where(Post.wall_date <= end)
    if statuses:
        query = query.where(Post.status.in_(statuses))
    if after is not None:
        query = query.where(keyset_after((Post.wall_date, Post.wall_time, Post.id), after))
    query = query.order_by(Post.wall_date, Post.wall_time, Post.id).limit(limit)
    return list(session.scalars(query))


def post_cursor(post: Post) -> str:
    """The cursor that continues a page of posts after ``post``."""
    return encode_cursor(post.wall_date.isoformat(), post.wall_time.strftime("%H:%M:%S"), str(post.id))


def _post_id(text: str) -> int:
    if not text.isdecimal() or not 0 < int(text) <= MAX_ID:
        raise ValueError("not a post id")
    return int(text)


def read_post_cursor(cursor: str) -> tuple[date, time, int]:
    """``(wall_date, wall_time, id)`` from a cursor :func:`post_cursor` gave out; anything else is a 422."""
    return decode_cursor(cursor, date.fromisoformat, time.fromisoformat, _post_id)
