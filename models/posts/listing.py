"""The posts list: every post with each target's state and the network's link, found by the filters a
marketer sets (text, channel, author, post status, a target's state, wall dates), newest first.

Pages run in ``(wall_date, wall_time, id)`` order, newest first, continued by a keyset cursor
(:mod:`models.core.keyset`), so a page costs the same however many posts came before it. The same
author and status filters narrow the queue and the calendar to the rows of matching posts
(:func:`rows_of_matching_posts`).
"""

from dataclasses import dataclass
from datetime import date, time

from sqlalchemy import String, cast, exists, literal, select
from sqlalchemy.orm import Session, aliased

from models.accounts.tables import User
from models.actions.tables import ScheduledAction, Status
from models.channels.providers import post_url
from models.channels.tables import Channel
from models.core.keyset import after as keyset_after
from models.posts.reading import delivery_of, post_rows
from models.posts.tables import ACTION_TYPE, Post, PostStatus, PostTarget

POST_STATUSES = tuple(status.value for status in PostStatus)
# What a target's latest row may say, as the list filters by it.
TARGET_STATES = (Status.QUEUED.value, Status.SUBMITTED.value, Status.PUBLISHED.value, Status.FAILED.value,
                 Status.CANCELLED.value)


@dataclass(frozen=True)
class PostFilter:
    """What a person asked to see; every field optional."""

    text: str | None = None
    channel_id: int | None = None
    author_id: int | None = None
    statuses: tuple[str, ...] = ()  # post statuses (draft, in_review, approved, ...)
    target_state: str | None = None  # some target's latest row is in this status
    start: date | None = None  # wall date, inclusive
    end: date | None = None  # wall date, inclusive

    def __post_init__(self):
        if any(status not in POST_STATUSES for status in self.statuses):
            raise ValueError(f"unknown post status among {self.statuses!r}")
        if self.target_state is not None and self.target_state not in TARGET_STATES:
            raise ValueError(f"unknown target state {self.target_state!r}")


def _thing_id_column():
    """``'post:' || posts.id``: the ``thing_id`` of a post's head rows, in SQL (both dialects)."""
    return literal("post:") + cast(Post.id, String)


def _latest_row_in(state: str):
    """Some target of the post has its latest row (by id) in ``state``."""
    later = aliased(ScheduledAction)
    row = ScheduledAction
    return exists(select(row.id).where(
        row.workspace_id == Post.workspace_id, row.action_type == ACTION_TYPE, row.thing_id == _thing_id_column(),
        row.status == state,
        ~exists(select(later.id).where(later.workspace_id == row.workspace_id, later.action_type == ACTION_TYPE,
                                       later.thing_id == row.thing_id, later.target_key == row.target_key,
                                       later.id > row.id)),
    ))


def _conditions(workspace_id: int, wanted: PostFilter) -> list:
    conditions = [Post.workspace_id == workspace_id]
    if wanted.text:
        conditions.append(Post.body.icontains(wanted.text, autoescape=True))
    if wanted.channel_id is not None:
        conditions.append(exists(select(PostTarget.id).where(PostTarget.post_id == Post.id,
                                                             PostTarget.channel_id == wanted.channel_id)))
    if wanted.author_id is not None:
        conditions.append(Post.created_by_id == wanted.author_id)
    if wanted.statuses:
        conditions.append(Post.status.in_(wanted.statuses))
    if wanted.target_state is not None:
        conditions.append(_latest_row_in(wanted.target_state))
    if wanted.start is not None:
        conditions.append(Post.wall_date >= wanted.start)
    if wanted.end is not None:
        conditions.append(Post.wall_date <= wanted.end)
    return conditions


def find_posts(session: Session, workspace_id: int, wanted: PostFilter, *,
               after: tuple[date, time, int] | None = None, limit: int = 50) -> list[Post]:
    """One page of matching posts, newest wall time first; ``after`` is the last post of the page before."""
    query = select(Post).where(*_conditions(workspace_id, wanted))
    if after is not None:
        query = query.where(keyset_after((Post.wall_date, Post.wall_time, Post.id), after, descending=True))
    query = query.order_by(Post.wall_date.desc(), Post.wall_time.desc(), Post.id.desc()).limit(limit)
    return list(session.scalars(query))


def rows_of_matching_posts(workspace_id: int, *, author_id: int | None = None, statuses: tuple[str, ...] = ()):
    """A condition on ``scheduled_actions``: the row was minted for a post by ``author_id`` whose status is
    among ``statuses`` (rows of no post never match). None when neither is asked for."""
    if author_id is None and not statuses:
        return None
    matching = select(_thing_id_column()).where(Post.workspace_id == workspace_id)
    if author_id is not None:
        matching = matching.where(Post.created_by_id == author_id)
    if statuses:
        matching = matching.where(Post.status.in_(statuses))
    return ScheduledAction.thing_id.in_(matching)


def matching_post_ids(session: Session, workspace_id: int, post_ids, *, author_id: int | None = None,
                      statuses: tuple[str, ...] = (), channel_id: int | None = None) -> set[int]:
    """Those of ``post_ids`` that match the filters (the calendar's entries of posts without rows)."""
    wanted = [pid for pid in post_ids if isinstance(pid, int)]
    if not wanted:
        return set()
    query = select(Post.id).where(*_conditions(workspace_id, PostFilter(channel_id=channel_id, author_id=author_id,
                                                                         statuses=statuses)),
                                  Post.id.in_(wanted))
    return set(session.scalars(query))


def post_authors(session: Session, workspace_id: int) -> list[User]:
    """Everyone who wrote a post in this workspace (members or not any more), by email."""
    authors = select(Post.created_by_id).where(Post.workspace_id == workspace_id).distinct()
    return list(session.scalars(select(User).where(User.id.in_(authors)).order_by(User.email)))


@dataclass(frozen=True)
class TargetState:
    """One target of a post: its latest row's status and, once published, the network's link to the post."""

    channel: str
    kind: str | None
    status: str  # the latest row's status, or "none" when no row was minted yet
    action_id: int | None
    url: str | None
    reason: str | None  # a failed row's message


def target_states(session: Session, workspace_id: int, posts: list[Post]) -> dict[int, list[TargetState]]:
    """Each post's targets in the order chosen, with their state and link: three queries for the whole page."""
    ids = [post.id for post in posts]
    if not ids:
        return {}
    targets: dict[int, list[Channel]] = {pid: [] for pid in ids}
    for post_id, channel in session.execute(
            select(PostTarget.post_id, Channel).join(Channel, Channel.id == PostTarget.channel_id)
            .where(PostTarget.post_id.in_(ids)).order_by(PostTarget.post_id, PostTarget.id)):
        targets[post_id].append(channel)
    rows = post_rows(session, workspace_id, ids)
    states: dict[int, list[TargetState]] = {}
    for post_id in ids:
        channels = {channel.name: channel for channel in targets[post_id]}
        delivery = delivery_of(list(channels), rows.get(post_id, []))
        states[post_id] = [target_state(channels.get(target.channel), target.channel, target.latest)
                           for target in delivery.targets]
    return states


def target_state(channel: Channel | None, name: str, latest: ScheduledAction | None) -> TargetState:
    """A target's state from its channel and latest row; the link only for a published row."""
    status = latest.status if latest is not None else "none"
    url = None
    if channel is not None and latest is not None and status == Status.PUBLISHED.value:
        url = post_url(channel.kind, channel.config, latest.provider_id)
    reason = latest.last_error if latest is not None and status == Status.FAILED.value else None
    return TargetState(channel=name, kind=channel.kind if channel is not None else None, status=status,
                       action_id=latest.id if latest is not None else None, url=url, reason=reason)


def link_of(channels: list[Channel], name: str, latest: ScheduledAction | None) -> str | None:
    """The network's link to what the target ``name`` published (None until then, or where none can be derived)."""
    channel = next((channel for channel in channels if channel.name == name), None)
    return target_state(channel, name, latest).url
