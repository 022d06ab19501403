"""Posts: what marketers write, approve and move. The reconciler turns approved posts into rows.

A post has a body, optional media links, a wall date and time in its workspace's zone, one
or more targets (channels of the workspace) and a status::

    draft ──approve──▶ approved ──(every target's latest row published)──▶ published
      ▲                  │
      └────unapprove─────┘
    draft / approved / published ──archive──▶ archived

| status    | meaning                                                                     |
|-----------|-----------------------------------------------------------------------------|
| draft     | being written; the reconciler withdraws its rows (age gate permitting)       |
| approved  | the reconciler keeps one row per target at the post's wall time              |
| published | every target's latest row was published; set by the reconciler (terminal)    |
| archived  | withdrawn by a person; its queued rows were cancelled at once (terminal)     |

Rows minted for a post carry ``action_type = "publish_post"``, ``thing_id = "post:<id>"``
and ``target_key = <channel name>``, so the dedupe index and the publish guard cover them.

The operations here (:func:`create_post`, :func:`update_post`, :func:`approve_post`,
:func:`unapprove_post`, :func:`archive_post`, :func:`post_now`) are what both shells call.
Each takes a session inside a write transaction (``models.database.write_session``), the
workspace id, the actor, ``now`` and the policy; each raises :mod:`models.errors` types and
changes nothing when it does. Approve and edit reconcile the post at once, through the same
code the periodic reconciler runs (:func:`models.reconciler.reconcile_post`).
"""

import enum
import re
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta

from sqlalchemy import JSON, CheckConstraint, Date, ForeignKey, Index, Integer, String, Text, Time, select, text
from sqlalchemy.orm import Mapped, Session, mapped_column

from models import lifecycle
from models.accounts import Workspace
from models.actions import ACTIVE_STATUSES, CancelKind, Origin, ScheduledAction, Status
from models.base import Base
from models.channels import CHANNEL_NAME, Channel
from models.errors import Conflict, InvalidInput, NotFound
from models.guard import DuplicateActiveAction, PublishGuardViolation
from models.lifecycle import Actor
from models.policy import Policy
from models.scheduling import NewAction, insert_action
from models.types import UTCDateTime
from models.wall_time import InvalidTimezone, ResolvedTime, resolve_wall_time

ACTION_TYPE = "publish_post"
MAX_ID = 2**31 - 1  # ids are 32-bit integers on PostgreSQL
MAX_TARGETS = 20
MAX_MEDIA = 10
MAX_MEDIA_URL = 2048
# Characters a body may have on each kind of channel; a channel's config may lower it
# with ``max_length``. Kinds not listed take the default.
BODY_LIMITS = {"mastodon": 500, "twilio": 1600}
DEFAULT_BODY_LIMIT = 10_000
WALL_TIME = re.compile(r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})$")
MEDIA_URL = re.compile(r"^https?://[^\s/\x00-\x1f]+[^\s\x00-\x1f]*$")
# How far ahead a post may be scheduled.
MAX_AHEAD = timedelta(days=3660)


class PostStatus(str, enum.Enum):
    """Where a post is in its life."""

    DRAFT = "draft"  # being written; no rows are kept for it
    APPROVED = "approved"  # the reconciler keeps a row per target at its wall time
    PUBLISHED = "published"  # every target's latest row was published (terminal)
    ARCHIVED = "archived"  # withdrawn; its queued rows were cancelled (terminal)


TERMINAL_POST_STATUSES = (PostStatus.PUBLISHED.value, PostStatus.ARCHIVED.value)


class Post(Base):
    __tablename__ = "posts"

    id: Mapped[int] = mapped_column(primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id", ondelete="RESTRICT"))
    created_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="RESTRICT"))
    body: Mapped[str] = mapped_column(Text)
    media: Mapped[list] = mapped_column(JSON, default=list)
    # The wall date and time as the person chose them, in the workspace's zone. The instant
    # is resolved from them (and the zone as it is now) every time it is needed.
    wall_date: Mapped[date] = mapped_column(Date)
    wall_time: Mapped[time] = mapped_column(Time)
    status: Mapped[str] = mapped_column(String(16), default=PostStatus.DRAFT.value)
    # Bumped by every edit, so a screen can tell it shows an older version.
    revision: Mapped[int] = mapped_column(Integer, default=1)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())
    approved_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    published_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    archived_at: Mapped[datetime | None] = mapped_column(UTCDateTime())

    __table_args__ = (
        CheckConstraint(
            "status IN (" + ", ".join(repr(s.value) for s in PostStatus) + ")", name="status"
        ),
        # The calendar: a workspace's posts by wall date and time.
        Index("ix_posts_workspace_wall", "workspace_id", "wall_date", "wall_time", "id"),
        # The reconciler's work list: approved posts only, however many others there are.
        Index(
            "ix_posts_approved",
            "workspace_id",
            "id",
            postgresql_where=text("status = 'approved'"),
            sqlite_where=text("status = 'approved'"),
        ),
    )

    @property
    def thing_id(self) -> str:
        return thing_id_of(self.id)


class PostTarget(Base):
    """One channel a post goes to."""

    __tablename__ = "post_targets"

    id: Mapped[int] = mapped_column(primary_key=True)
    post_id: Mapped[int] = mapped_column(ForeignKey("posts.id", ondelete="RESTRICT"))
    channel_id: Mapped[int] = mapped_column(ForeignKey("channels.id", ondelete="RESTRICT"))

    __table_args__ = (Index("ux_post_targets_post_channel", "post_id", "channel_id", unique=True),)


def thing_id_of(post_id: int) -> str:
    """The ``thing_id`` of the rows minted for post ``post_id``."""
    return f"post:{post_id}"


def post_id_of(thing_id: str | None) -> int | None:
    """The post a row's ``thing_id`` names, or None when it names none."""
    if not thing_id or not thing_id.startswith("post:"):
        return None
    rest = thing_id[5:]
    return int(rest) if rest.isdigit() else None


# -- reading --------------------------------------------------------------------------------


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
class Delivery:
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


def delivery_of(target_names: list[str], rows: list[ScheduledAction]) -> Delivery:
    """Each target's latest row (by id) among ``rows``."""
    latest: dict[str, ScheduledAction] = {}
    for row in rows:
        if row.target_key not in latest or row.id > latest[row.target_key].id:
            latest[row.target_key] = row
    return Delivery([TargetDelivery(name, latest.get(name)) for name in target_names])


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


def resolve_post_time(post: Post, zone: str) -> ResolvedTime:
    """The post's wall time in ``zone`` as a UTC instant (raises InvalidTimezone)."""
    return resolve_wall_time(post.wall_date, post.wall_time, zone)


def post_payload(post: Post) -> dict:
    """What a row minted for ``post`` carries to its provider."""
    return {"post_id": post.id, "body": post.body, "media": list(post.media or [])}


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
        day, at, ident = after
        query = query.where(
            (Post.wall_date > day)
            | ((Post.wall_date == day) & (Post.wall_time > at))
            | ((Post.wall_date == day) & (Post.wall_time == at) & (Post.id > ident))
        )
    query = query.order_by(Post.wall_date, Post.wall_time, Post.id).limit(limit)
    return list(session.scalars(query))


# -- validation -----------------------------------------------------------------------------


def parse_wall_time(value, field: str = "local_time") -> tuple[date, time]:
    """``YYYY-MM-DDTHH:MM`` (the workspace's zone) as a wall date and time, or InvalidInput."""
    match = WALL_TIME.match(value.strip()) if isinstance(value, str) else None
    if not match:
        raise InvalidInput(
            f"{field} must look like 2026-05-20T09:00 (the workspace's zone)", field=field, code="bad_time"
        )
    year, month, day, hour, minute = (int(part) for part in match.groups())
    try:
        return date(year, month, day), time(hour, minute)
    except ValueError:
        raise InvalidInput(f"{field} is not a real date and time", field=field, code="bad_time") from None


def body_limit(channel: Channel) -> int:
    """How many characters a post body may have on ``channel``."""
    limit = BODY_LIMITS.get(channel.kind, DEFAULT_BODY_LIMIT)
    configured = (channel.config or {}).get("max_length")
    if isinstance(configured, int) and not isinstance(configured, bool) and configured > 0:
        limit = min(limit, configured)
    return limit


def check_body(body, channels: list[Channel]) -> str:
    if not isinstance(body, str):
        raise InvalidInput("body must be a string", field="body", code="wrong_type")
    if not body.strip():
        raise InvalidInput("body must not be empty", field="body", code="missing")
    if "\x00" in body:
        raise InvalidInput("body must not contain NUL characters", field="body", code="bad_character")
    for channel in channels:
        limit = body_limit(channel)
        if len(body) > limit:
            raise InvalidInput(
                f"body is {len(body)} characters; {channel.name} ({channel.kind}) takes at most {limit}",
                field="body",
                code="too_long",
                channel=channel.name,
            )
    return body


def check_media(media) -> list[str]:
    if media is None:
        return []
    if not isinstance(media, list) or not all(isinstance(url, str) for url in media):
        raise InvalidInput("media must be a list of links", field="media", code="wrong_type")
    if len(media) > MAX_MEDIA:
        raise InvalidInput(f"a post has at most {MAX_MEDIA} media links", field="media", code="too_many")
    for url in media:
        if len(url) > MAX_MEDIA_URL or not MEDIA_URL.match(url):
            raise InvalidInput(f"{url[:80]!r} is not an http(s) link", field="media", code="bad_link")
    return list(media)


def check_targets(session: Session, workspace_id: int, names) -> list[Channel]:
    """The channels named ``names`` in this workspace, in order; InvalidInput otherwise."""
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        raise InvalidInput("targets must be a list of channel names", field="targets", code="wrong_type")
    names = [name.strip() for name in names]
    for name in names:
        if not CHANNEL_NAME.match(name):
            raise InvalidInput(f"no channel named {name[:63]!r} in this workspace", field="targets",
                               code="unknown_channel")
    if not names:
        raise InvalidInput("a post needs at least one target", field="targets", code="missing")
    if len(names) > MAX_TARGETS:
        raise InvalidInput(f"a post has at most {MAX_TARGETS} targets", field="targets", code="too_many")
    if len(set(names)) != len(names):
        raise InvalidInput("a target is named twice", field="targets", code="duplicate")
    found = {
        channel.name: channel
        for channel in session.scalars(
            select(Channel).where(Channel.workspace_id == workspace_id, Channel.name.in_(names))
        )
    }
    missing = [name for name in names if name not in found]
    if missing:
        raise InvalidInput(
            f"no channel named {missing[0]!r} in this workspace", field="targets", code="unknown_channel"
        )
    return [found[name] for name in names]


def _zone(session: Session, workspace_id: int) -> str:
    return session.scalar(select(Workspace.timezone).where(Workspace.id == workspace_id))


def check_wall_time(day: date, at: time, zone: str, now: datetime, policy: Policy) -> ResolvedTime:
    """The wall time resolved in ``zone``; refused if the zone is broken or the time is past."""
    try:
        resolved = resolve_wall_time(day, at, zone)
    except InvalidTimezone as exc:
        raise InvalidInput(
            f"the workspace's time zone is not valid: {exc}", field="timezone", code="bad_zone"
        ) from None
    except OverflowError:  # the last minutes of year 9999, west of UTC
        raise InvalidInput("local_time is too far ahead", field="local_time", code="too_far") from None
    if resolved.instant > now + MAX_AHEAD:
        raise InvalidInput("local_time is more than 10 years ahead", field="local_time", code="too_far")
    if resolved.instant < now - policy.past_tolerance:
        raise InvalidInput(
            "local_time is in the past; pick a later time, or use Post now",
            field="local_time",
            code="in_the_past",
        )
    return resolved


# -- operations -----------------------------------------------------------------------------


@dataclass
class PostChange:
    """A post after an operation, with the rows the operation inserted and a wall-time note."""

    post: Post
    new_rows: list[ScheduledAction] = field(default_factory=list)
    note: str | None = None
    counts: dict = field(default_factory=dict)


def create_post(
    session: Session,
    workspace_id: int,
    *,
    body,
    targets,
    wall_date: date,
    wall_time: time,
    media=None,
    actor: Actor,
    now: datetime,
    policy: Policy,
) -> PostChange:
    """Create a draft post after checking everything: targets, time, body against each target."""
    channels = check_targets(session, workspace_id, targets)
    body = check_body(body, channels)
    media = check_media(media)
    resolved = check_wall_time(wall_date, wall_time, _zone(session, workspace_id), now, policy)
    post = Post(
        workspace_id=workspace_id,
        created_by_id=actor.user_id,
        body=body,
        media=media,
        wall_date=wall_date,
        wall_time=wall_time,
        status=PostStatus.DRAFT.value,
        revision=1,
        created_at=now,
        updated_at=now,
    )
    session.add(post)
    session.flush()
    for channel in channels:
        session.add(PostTarget(post_id=post.id, channel_id=channel.id))
    session.flush()
    return PostChange(post, note=resolved.note)


_UNSET = object()


def update_post(
    session: Session,
    workspace_id: int,
    post_id: int,
    *,
    body=_UNSET,
    targets=_UNSET,
    wall_date: date | None = None,
    wall_time: time | None = None,
    media=_UNSET,
    actor: Actor,
    now: datetime,
    policy: Policy,
) -> PostChange:
    """Change a draft or approved post's body, media, wall time or targets, then reconcile it.

    Fields left out keep their value. An approved post stays approved: its rows follow the
    edit in the same transaction (moved, inserted or withdrawn by the reconciler's rules).
    """
    post = get_post(session, workspace_id, post_id, lock=True)
    _refuse_if_terminal(post, "it can no longer be edited")
    channels = check_targets(session, workspace_id, targets) if targets is not _UNSET else post_targets(session, post.id)
    new_body = check_body(post.body if body is _UNSET else body, channels)
    new_media = check_media(media) if media is not _UNSET else post.media
    note = None
    if wall_date is not None or wall_time is not None:
        if wall_date is None or wall_time is None:
            raise InvalidInput("give the date and the time together", field="local_time", code="missing")
        note = check_wall_time(wall_date, wall_time, _zone(session, workspace_id), now, policy).note
        post.wall_date, post.wall_time = wall_date, wall_time
    post.body, post.media = new_body, new_media
    if targets is not _UNSET:
        _replace_targets(session, post.id, channels)
    post.revision += 1
    post.updated_at = now
    session.flush()
    change = _reconcile(session, post, actor=actor, now=now, policy=policy)
    change.note = note
    return change


def _replace_targets(session: Session, post_id: int, channels: list[Channel]) -> None:
    wanted = {channel.id for channel in channels}
    current = list(session.scalars(select(PostTarget).where(PostTarget.post_id == post_id)))
    for target in current:
        if target.channel_id not in wanted:
            session.delete(target)
    have = {target.channel_id for target in current}
    for channel in channels:
        if channel.id not in have:
            session.add(PostTarget(post_id=post_id, channel_id=channel.id))
    session.flush()


def _refuse_if_terminal(post: "Post", what: str) -> None:
    """Published and archived posts are final: refuse the change with a 409 naming the status."""
    if post.status in TERMINAL_POST_STATUSES:
        raise Conflict(f"post #{post.id} is {post.status}; {what}", code="wrong_state", status_now=post.status)


def approve_post(
    session: Session, workspace_id: int, post_id: int, *, actor: Actor, now: datetime, policy: Policy
) -> PostChange:
    """draft → approved, and its rows are queued at once. Approving an approved post changes nothing."""
    post = get_post(session, workspace_id, post_id, lock=True)
    _refuse_if_terminal(post, "it cannot be approved")
    if post.status == PostStatus.APPROVED.value:
        return PostChange(post)
    channels = post_targets(session, post.id)
    check_body(post.body, channels)
    resolved = check_wall_time(post.wall_date, post.wall_time, _zone(session, workspace_id), now, policy)
    post.status = PostStatus.APPROVED.value
    post.approved_at = now
    post.updated_at = now
    session.flush()
    change = _reconcile(session, post, actor=actor, now=now, policy=policy)
    change.note = resolved.note
    return change


def unapprove_post(
    session: Session, workspace_id: int, post_id: int, *, actor: Actor, now: datetime, policy: Policy
) -> PostChange:
    """approved → draft; its queued rows are withdrawn by the reconciler's rules (age gate included)."""
    post = get_post(session, workspace_id, post_id, lock=True)
    _refuse_if_terminal(post, "it cannot be unapproved")
    if post.status == PostStatus.DRAFT.value:
        return PostChange(post)
    post.status = PostStatus.DRAFT.value
    post.approved_at = None
    post.updated_at = now
    session.flush()
    return _reconcile(session, post, actor=actor, now=now, policy=policy)


def archive_post(
    session: Session, workspace_id: int, post_id: int, *, actor: Actor, now: datetime, policy: Policy
) -> PostChange:
    """Archive the post and cancel its queued rows at once (kind ``person``); rows being sent finish."""
    post = get_post(session, workspace_id, post_id, lock=True)
    if post.status == PostStatus.ARCHIVED.value:
        return PostChange(post)
    cancelled = 0
    for row in post_rows(session, workspace_id, [post.id])[post.id]:
        if row.status == Status.QUEUED.value:
            outcome = lifecycle.cancel(
                session, row.id, kind=CancelKind.PERSON, now=now, actor=actor,
                reason=f"post #{post.id} archived by {actor.label}",
            )
            cancelled += outcome.ok
    post.status = PostStatus.ARCHIVED.value
    post.archived_at = now
    post.updated_at = now
    session.flush()
    return PostChange(post, counts={"cancelled": cancelled})


def post_now(
    session: Session,
    workspace_id: int,
    post_id: int,
    *,
    channel: str | None = None,
    actor: Actor,
    now: datetime,
    policy: Policy,
) -> PostChange:
    """Send the post (or its target ``channel``) now, whatever its status.

    Each target's queued row is cancelled (kind ``rescheduled``) and a row due now is
    inserted in its place, origin ``person``, pointing back to it. Targets already published
    or being sent are left as they are; if that leaves nothing to send, 409.
    """
    post = get_post(session, workspace_id, post_id, lock=True)
    channels = post_targets(session, post.id)
    if channel is not None:
        channels = [c for c in channels if c.name == channel]
        if not channels:
            raise InvalidInput(f"{channel!r} is not a target of post #{post_id}", field="channel",
                               code="unknown_target")
    check_body(post.body, channels)
    rows = post_rows(session, workspace_id, [post.id])[post.id]
    active = {row.target_key: row for row in rows if row.status in ACTIVE_STATUSES}
    new_rows, refusals = [], []
    for target in channels:
        old = active.get(target.name)
        if old is not None and old.status == Status.SUBMITTED.value:
            refusals.append(f"{target.name} is being sent")
            continue
        if old is not None:
            outcome = lifecycle.cancel(session, old.id, kind=CancelKind.RESCHEDULED, now=now, actor=actor,
                                       reason="replaced by Post now")
            if not outcome.ok:
                refusals.append(f"{target.name} is {outcome.status}")
                continue
        new = NewAction(action_type=ACTION_TYPE, channel=target, target_key=target.name,
                        payload=post_payload(post), publish_at=now, thing_id=post.thing_id)
        try:
            row = insert_action(session, workspace_id, new, now=now, actor=actor, origin=Origin.PERSON,
                                rescheduled_from_id=old.id if old is not None else None, reason="Post now")
        except PublishGuardViolation:
            if old is not None:
                # A legacy duplicate: the queued row sat beside a published sibling.
                raise Conflict(f"{target.name} was already published", code="already_published") from None
            refusals.append(f"{target.name} was already published")
            continue
        except DuplicateActiveAction:
            refusals.append(f"{target.name} already has an active row")
            continue
        new_rows.append(row)
    if not new_rows:
        raise Conflict(f"nothing to send now: {'; '.join(refusals)}", code="nothing_to_send",
                       field="channel" if channel else None)
    post.updated_at = now
    session.flush()
    return PostChange(post, new_rows=new_rows, counts={"skipped": refusals})


def _reconcile(session, post, *, actor, now, policy) -> PostChange:
    # Imported here: the reconciler builds on this module.
    from models.reconciler import reconcile_post

    try:
        result = reconcile_post(session, post.workspace_id, post.id, now=now, policy=policy, actor=actor)
    except InvalidTimezone as exc:
        raise InvalidInput(
            f"the workspace's time zone is not valid: {exc}", field="timezone", code="bad_zone"
        ) from None
    return PostChange(result.post, new_rows=result.new_rows, counts=dict(result.counts))
