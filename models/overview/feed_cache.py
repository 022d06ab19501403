"""The calendar feed, built once per change of the workspace's schedule.

Building and writing a busy workspace's feed (thousands of events) takes seconds, and calendar
apps fetch it every few minutes whether anything changed or not. So the feed is kept, as the
bytes sent, until the workspace's schedule changes; what "changed" means is
:func:`schedule_version`: a handful of indexed aggregates over what the feed is made of
(posts, the rows in the window, recurring rules, enrollments, campaign and channel names,
the workspace's name and zone, and the local day, since the window moves with it), whose
digest is also the feed's ``ETag``. A fetch that carries it gets a 304.

Four fetches at once of a feed not built yet build it once: the first builds, the others wait
for it. The cache lives in each web process (memory), holds at most :data:`MAX_FEEDS` feeds,
and forgets the least recently fetched first.
"""

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, time, timezone

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from models.actions.tables import ScheduledAction
from models.channels.tables import Channel
from models.drips.tables import Campaign, Enrollment, EnrollmentStatus
from models.overview.feed import FeedWindow
from models.posts.tables import Post
from models.recurring.tables import RecurringSchedule
from models.timing.wall_time import resolve_wall_time

MAX_FEEDS = 64


@dataclass(frozen=True)
class ScheduleVersion:
    """What a feed was built from, as an ETag and the last time any of it changed."""

    etag: str
    last_modified: datetime


def _stamp(value) -> str:
    return value.isoformat() if isinstance(value, datetime) else str(value)


def schedule_version(session: Session, workspace_id: int, workspace_name: str, zone: str, window: FeedWindow,
                     *, host: str) -> ScheduleVersion:
    """The version of the workspace's schedule the feed for ``window`` shows (a few indexed aggregates)."""
    parts: list = [workspace_name, zone, window.first.isoformat(), window.last.isoformat(), host]
    changed: list[datetime] = [resolve_wall_time(window.first, time(0), zone).instant]
    # Counted by status too: a move between two statuses in the same instant still changes the version.
    aggregates = (
        select(Post.status, func.count(), func.max(Post.updated_at), func.sum(Post.revision)).where(
            Post.workspace_id == workspace_id, Post.wall_date >= window.first, Post.wall_date <= window.last)
        .group_by(Post.status).order_by(Post.status),
        select(ScheduledAction.status, func.count(), func.max(ScheduledAction.updated_at),
               func.max(ScheduledAction.id)).where(
            ScheduledAction.workspace_id == workspace_id, ScheduledAction.publish_at >= window.start,
            ScheduledAction.publish_at < window.end).group_by(ScheduledAction.status).order_by(ScheduledAction.status),
        select(RecurringSchedule.status, func.count(), func.max(RecurringSchedule.updated_at)).where(
            RecurringSchedule.workspace_id == workspace_id).group_by(RecurringSchedule.status)
        .order_by(RecurringSchedule.status),
        select(func.count(), func.max(Enrollment.updated_at), func.sum(Enrollment.current_step),
               func.max(Enrollment.next_send_at)).where(
            Enrollment.workspace_id == workspace_id, Enrollment.status == EnrollmentStatus.ACTIVE.value),
        select(func.count(), func.max(Campaign.updated_at)).where(Campaign.workspace_id == workspace_id),
    )
    for query in aggregates:
        for row in session.execute(query):
            parts.extend(_stamp(value) for value in row)
            changed.extend(value for value in row if isinstance(value, datetime))
    parts.extend(f"{cid}:{name}" for cid, name in session.execute(
        select(Channel.id, Channel.name).where(Channel.workspace_id == workspace_id).order_by(Channel.id)))
    digest = hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:32]
    last = max(moment.astimezone(timezone.utc) for moment in changed)
    return ScheduleVersion(etag=digest, last_modified=last.replace(microsecond=0))


@dataclass(frozen=True)
class CachedFeed:
    version: ScheduleVersion
    body: bytes


class FeedCache:
    """Built feeds by workspace, each kept while its schedule version holds (see the module docstring)."""

    def __init__(self, max_feeds: int = MAX_FEEDS):
        self.max_feeds = max_feeds
        self._feeds: OrderedDict[int, CachedFeed] = OrderedDict()
        self._lock = threading.Lock()
        self._building: dict[int, threading.Lock] = {}
        self.builds = 0  # how many times a feed was built (for tests and the bench)

    def get(self, workspace_id: int, version: ScheduleVersion, build: Callable[[], bytes]) -> CachedFeed:
        """The feed of ``version``: kept, or built now by ``build`` (once, however many ask at once)."""
        with self._lock:
            found = self._hit(workspace_id, version)
            if found is not None:
                return found
            building = self._building.setdefault(workspace_id, threading.Lock())
        with building:
            with self._lock:
                found = self._hit(workspace_id, version)
                if found is not None:
                    return found
            made = CachedFeed(version, build())
            with self._lock:
                self.builds += 1
                self._feeds[workspace_id] = made
                self._feeds.move_to_end(workspace_id)
                while len(self._feeds) > self.max_feeds:
                    self._feeds.popitem(last=False)
            return made

    def _hit(self, workspace_id: int, version: ScheduleVersion) -> CachedFeed | None:
        found = self._feeds.get(workspace_id)
        if found is None or found.version.etag != version.etag:
            return None
        self._feeds.move_to_end(workspace_id)
        return found

    def clear(self) -> None:
        with self._lock:
            self._feeds.clear()
