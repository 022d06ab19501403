"""Scheduling posts from a CSV file: the line checker posts hand to the shared import (:mod:`models.imports.runs`).

One post per line. Columns (names without case, in any order):

| column      | required | what                                                                      |
|-------------|----------|---------------------------------------------------------------------------|
| ``body``    | yes      | the post's text, checked against each target's length limit               |
| ``targets`` | yes      | channel names, separated by ``,``, ``;``, ``|`` or spaces                  |
| ``date`` and ``time`` | no       | the wall date (``2026-06-30``) and time (``09:30``) in the workspace's zone |
| ``local_time`` | instead of the two | ``2026-06-30T09:30`` (or with a space)                       |

A line with no date and time (the columns empty, or not in the file) goes into the queue: it
takes the earliest posting slot free on every target (:mod:`models.posts.queue`), after the
slots the lines above it took, and the dry run says which.
| ``media``   | no       | ids of media library items, separated by spaces or ``|`` (upload first)     |

| fate              | accepted | when                                                                    |
|-------------------|----------|-------------------------------------------------------------------------|
| ``schedule``      | yes      | a post will be made; the message says when, with the DST note if the wall time does not exist or happens twice |
| ``queue``         | yes      | a post will take a posting slot; the message says which                  |
| ``no_slot``       | no       | a line for the queue whose targets have no posting times, share none, or have none free |
| ``bad_time``      | no       | not a date or a time                                                    |
| ``in_the_past``   | no       | the time has passed (or is more than 10 years ahead: ``too_far``)       |
| ``unknown_channel`` | no     | a target names no channel of the workspace                              |
| ``too_long``      | no       | the body is longer than a target takes                                  |
| ``invalid_value`` | no       | an empty body, no targets, too many, one twice, a media id not in the library, media a target refuses |
| ``duplicate_line``| no       | an earlier line has the same body, targets, date and time               |
| ``already_scheduled`` | no   | a post of the workspace has the same body at the same date and time, or (for the queue) a queued post has it (the file was uploaded before) |

The commit makes each accepted line's post (a draft, or approved by choice, which queues
its rows at once) through :func:`models.posts.operations.create_post` and
:func:`~models.posts.operations.approve_post`, re-checking it: a line whose time passed or
whose channel was removed since the dry run is reported with its new fate.
"""

import re
from dataclasses import dataclass, field
from datetime import date, datetime, time

from sqlalchemy import select
from sqlalchemy.orm import Session

from models.accounts.workspaces import workspace_zone
from models.actions.tables import ScheduledAction
from models.core.errors import DomainError, Forbidden, InvalidInput
from models.core.moves import Actor
from models.core.policy import Policy
from models.core.time_input import parse_clock, parse_day, parse_local_time
from models.imports.csv_file import CsvLine
from models.imports.runs import Fate
from models.posts.checks import check_body, check_media, check_targets, check_wall_time
from models.posts.operations import approve_post, create_post
from models.posts.queue import HOLDS_A_SLOT, QUEUE, plan_slot
from models.posts.review import review_required
from models.posts.tables import Post, PostStatus
from models.timing.clock import Clock
from models.timing.wall_time import WallTimeShift

SCHEDULE = "schedule"
QUEUED = "queue"
MAX_POST_LINES = 5000
KNOWN = ("body", "targets", "date", "time", "local_time", "media")
SEPARATORS = re.compile(r"[,;|\s]+")
MEDIA_SEPARATORS = re.compile(r"[|\s]+")
# What a refusal's code becomes in the report.
FATE_OF_CODE = {"bad_time": "bad_time", "bad_date": "bad_time", "in_the_past": "in_the_past", "too_far": "in_the_past",
                "unknown_channel": "unknown_channel", "too_long": "too_long", "bad_zone": "bad_zone",
                "no_slots": "no_slot", "no_common_slot": "no_slot", "no_free_slot": "no_slot"}


def _fate_of(error: DomainError) -> Fate:
    return Fate(FATE_OF_CODE.get(error.code, "invalid_value"), False, error.message)


@dataclass
class _Line:
    """One line's values, read: the post it describes, or why it cannot be one."""

    line: CsvLine
    body: str = ""
    targets: list[str] = field(default_factory=list)
    media: list[str] = field(default_factory=list)
    wall_date: date | None = None
    wall_time: time | None = None
    queued: bool = False  # no date and time in the file: a posting slot was found for it
    fate: Fate | None = None

    @property
    def key(self) -> tuple:
        return self.body, tuple(sorted(self.targets)), self.wall_date, self.wall_time


def _read(line: CsvLine) -> _Line:
    values = line.values
    read = _Line(line, body=values.get("body", ""),
                 targets=[name for name in SEPARATORS.split(values.get("targets", "")) if name],
                 media=[url for url in MEDIA_SEPARATORS.split(values.get("media", "")) if url])
    if not any((values.get(column) or "").strip() for column in ("local_time", "date", "time")):
        return read  # no date and time: the line goes into the queue
    try:
        if "local_time" in values:
            read.wall_date, read.wall_time = parse_local_time(values["local_time"].replace(" ", "T", 1), "local_time")
        else:
            read.wall_date = parse_day(values.get("date"), "the date")
            read.wall_time = parse_clock(values.get("time"), "the time")
    except InvalidInput as error:
        typed = (values["local_time"] if "local_time" in values
                 else f"{values.get('date', '')} {values.get('time', '')}")
        read.fate = Fate("bad_time", False, f"{typed.strip()[:40]!r}: {error.message}")
    return read


def _when(resolved) -> str:
    words = f"at {resolved.local:%a %d %b %Y, %H:%M %Z}"
    if resolved.shift is not WallTimeShift.NONE:
        words += ". " + resolved.note
    return words


def _queued_posts(session: Session, workspace_id: int, bodies: set[str]) -> dict[str, int]:
    """The workspace's queued posts still holding a slot, by body: a queue file uploaded twice queues nothing twice."""
    if not bodies:
        return {}
    found = session.execute(select(Post.id, Post.body).where(
        Post.workspace_id == workspace_id, Post.from_queue.is_(True), Post.body.in_(sorted(bodies)),
        Post.status.in_(HOLDS_A_SLOT)).order_by(Post.id))
    return {body: post_id for post_id, body in found}


def _existing_posts(session: Session, workspace_id: int, days: set[date]) -> dict[tuple, int]:
    """The workspace's posts (archived ones aside) on ``days``, by (body, wall date, wall time): a file
    uploaded twice, or a commit cut short and run again, never makes a post twice."""
    if not days:
        return {}
    found = session.execute(select(Post.id, Post.body, Post.wall_date, Post.wall_time).where(
        Post.workspace_id == workspace_id, Post.wall_date.in_(sorted(days)),
        Post.status != PostStatus.ARCHIVED.value).order_by(Post.id))
    return {(body, day, at): post_id for post_id, body, day, at in found}


class PostImport:
    """The :class:`~models.imports.runs.LineChecker` of ``POST /api/v1/posts.csv`` and the dashboard's upload.

    ``approve`` is the commit's choice: approved posts (their rows queued at once) or drafts.
    After a commit, ``new_rows`` holds the rows approving queued, for the shell to announce.
    """

    kind = "posts"
    max_lines = MAX_POST_LINES

    def __init__(self, *, clock: Clock, policy: Policy, approve: bool = False):
        self.clock = clock
        self.policy = policy
        self.approve = approve
        self.new_rows: list[ScheduledAction] = []

    def check_header(self, columns: list[str]) -> None:
        unknown = [column for column in columns if column not in KNOWN]
        if unknown:
            raise InvalidInput(f"the header's column {unknown[0][:64]!r} is not one of {', '.join(KNOWN)}",
                               field="file", code="bad_header", line=1)
        missing = [column for column in ("body", "targets") if column not in columns]
        if len({"date", "time"} & set(columns)) == 1 and "local_time" not in columns:
            missing.append("date and time together (or local_time; neither, to fill the queue)")
        if missing:
            raise InvalidInput(f"line 1 must be a header naming body, targets, date and time (or local_time), and "
                               f"optionally media; it lacks {', '.join(missing)}", field="file",
                               code="missing_header", line=1)

    def _classify(self, session: Session, workspace_id: int, lines: list[CsvLine], state: dict,
                  now: datetime) -> list[_Line]:
        zone = workspace_zone(session, workspace_id)
        seen = state.setdefault("seen", {})
        channels_of: dict[tuple, list | DomainError] = {}  # a file names the same few targets again and again
        checked = [_read(line) for line in lines]
        existing = _existing_posts(session, workspace_id, {read.wall_date for read in checked
                                                           if read.fate is None and read.wall_date is not None})
        queued = _queued_posts(session, workspace_id, {read.body for read in checked
                                                       if read.fate is None and read.wall_date is None})
        claims = state.setdefault("claims", set())  # the slots the lines above took
        for read in checked:
            line = read.line
            if read.fate is not None:
                continue
            try:
                named = tuple(read.targets)
                if named not in channels_of:
                    try:
                        channels_of[named] = check_targets(session, workspace_id, read.targets)
                    except DomainError as error:
                        channels_of[named] = error
                if isinstance(channels_of[named], DomainError):
                    raise channels_of[named]
                channels = channels_of[named]
                read.body = check_body(read.body, channels)
                read.media = check_media(session, workspace_id, read.media, channels, read.body)
                if read.wall_date is None:
                    self._queue(session, workspace_id, read, channels, seen, queued, claims, now)
                    continue
                resolved = check_wall_time(read.wall_date, read.wall_time, zone, now, self.policy)
            except DomainError as error:
                read.fate = _fate_of(error)
                continue
            if read.key in seen:
                read.fate = Fate("duplicate_line", False, f"line {seen[read.key]} has the same body, targets and time")
                continue
            found = existing.get((read.body, read.wall_date, read.wall_time))
            if found is not None:
                read.fate = Fate("already_scheduled", False, f"post #{found} has the same body at the same time")
                continue
            seen[read.key] = line.number
            read.fate = Fate(SCHEDULE, True, _when(resolved))
        return checked

    def _queue(self, session: Session, workspace_id: int, read: _Line, channels, seen: dict, queued: dict,
               claims: set, now: datetime) -> None:
        """Give a line without a date and time the earliest slot free on its targets after those above it took."""
        key = (QUEUED, read.body)
        if key in seen:
            read.fate = Fate("duplicate_line", False, f"line {seen[key]} has the same body, for the queue")
            return
        if read.body in queued:
            read.fate = Fate("already_scheduled", False, f"post #{queued[read.body]} has the same body, in the queue")
            return
        plan = plan_slot(session, workspace_id, channels, QUEUE, now=now, policy=self.policy, claimed=claims)
        seen[key] = read.line.number
        claims.update((channel.id, plan.slot) for channel in channels)
        read.wall_date, read.wall_time = plan.slot
        read.queued = True
        read.fate = Fate(QUEUED, True, "takes the posting slot " + _when(plan.resolved))

    def check(self, session: Session, workspace_id: int, target: str, lines: list[CsvLine], state: dict) -> list[Fate]:
        now = state.setdefault("now", self.clock.now())  # one instant for the whole file
        return [read.fate for read in self._classify(session, workspace_id, lines, state, now)]

    def apply(self, session: Session, workspace_id: int, target: str, lines: list[CsvLine], *, actor: Actor,
              now: datetime) -> list[Fate]:
        fates = []
        for read in self._classify(session, workspace_id, lines, {}, now):
            if not read.fate.accepted:
                fates.append(read.fate)
                continue
            try:
                with session.begin_nested():
                    change = create_post(session, workspace_id, body=read.body, targets=read.targets,
                                         wall_date=read.wall_date, wall_time=read.wall_time, media=read.media,
                                         from_queue=read.queued, actor=actor, now=now, policy=self.policy)
                    if self.approve and review_required(session, workspace_id):
                        # An import's author would approve their own posts: review decides instead.
                        raise Forbidden("review is required: import these as drafts and submit them",
                                        code="review_required")
                    if self.approve:
                        approved = approve_post(session, workspace_id, change.post.id, actor=actor, now=now,
                                                policy=self.policy)
                        self.new_rows.extend(approved.new_rows)
            except DomainError as error:
                fates.append(_fate_of(error))
                continue
            fates.append(Fate(read.fate.code, True, f"post #{change.post.id}, {change.post.status}, {read.fate.message}"))
        return fates
