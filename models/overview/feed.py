"""A workspace's iCalendar feed: what the calendar shows, for the past 90 days and the next 365, as RFC 5545.

Read only. The shell finds the person's feed token (:mod:`models.accounts.feeds`) and
hands this module the workspace, the time and a way to make dashboard links.

| what                     | one event per                  | UID                                  | summary                          |
|--------------------------|--------------------------------|--------------------------------------|----------------------------------|
| a post (not archived)    | post, at its wall time         | ``post-<id>@host``                   | ``[approved] Fresh bread at nine`` |
| a recurring occurrence   | rule and slot, minted or planned | ``rule-<id>-<slot>@host``          | ``[planned] rule #3: send_report`` |
| an ad-hoc action         | row (a person's, not a post's) | ``action-<id>@host``                 | ``[queued] send_email via main`` |
| drip sends               | campaign and local day (all day) | ``campaign-<id>-<date>@host``      | ``welcome: 1,240 sends [1,200 published, 40 queued]`` |

Left out: archived posts, cancelled rows, a post's own rows (its event says how its targets
went), and Tickwork's own notifications (origin ``system``).

UIDs follow the thing, not the row: a moved post, or a rescheduled occurrence, keeps its
UID, so a calendar app moves the event instead of showing two. No event carries a target
address (an email, a phone), a channel secret or a payload beyond its title: the summary
names a channel by its name, an action by its ``title`` (else its type).
"""

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from datetime import date, datetime, time, timedelta, timezone
from zoneinfo import ZoneInfo

from icalendar import Timezone
from sqlalchemy import and_, case, func, select
from sqlalchemy.orm import Session

from models.actions.tables import Origin, ScheduledAction, Status
from models.channels.reading import channel_names
from models.channels.tables import Channel
from models.core.policy import Policy
from models.drips.tables import Campaign, Enrollment, EnrollmentStatus, Send
from models.posts.reading import delivery_of, list_posts, post_rows
from models.posts.tables import PostStatus, PostTarget, post_id_of
from models.recurring.reading import rule_recurrence
from models.recurring.tables import RecurringSchedule, RuleStatus, rule_id_of, slot_of
from models.timing.recurrence import RecurrenceError
from models.timing.wall_time import InvalidTimezone, resolve_wall_time, to_local

# The window is bounded so a feed's cost is too: 90 days back, a year ahead (local days).
PAST_DAYS = 90
AHEAD_DAYS = 365
# What a feed may hold at most of each kind, so a busy workspace's feed stays a feed.
MAX_POSTS = 5000
MAX_ACTIONS = 5000
MAX_PLANNED = 5000
TITLE_LENGTH = 60
EVENT_LENGTH = timedelta(minutes=15)
SHOWN = (Status.QUEUED.value, Status.SUBMITTED.value, Status.PUBLISHED.value, Status.FAILED.value)
PRODID = "-//Tickwork//Calendar feed//EN"

# (kind, ref) -> an absolute dashboard address: ("post", 12), ("rule", 3), ("action", 55), ("campaign", 4).
LinkMaker = Callable[[str, int], str]


@dataclass(frozen=True)
class FeedEvent:
    """One event of the feed, before it is written as iCalendar."""

    uid: str  # the part before "@host"
    summary: str
    start: datetime | date  # aware, or a date for an all-day event
    kind: str  # what ``ref`` is, for the link back
    ref: int
    description: str = ""
    sequence: int = 0
    tentative: bool = False  # a draft, or an occurrence not minted yet


@dataclass
class FeedWindow:
    """The local days the feed covers, and their UTC bounds."""

    first: date
    last: date  # inclusive
    start: datetime
    end: datetime


def feed_window(now: datetime, zone: str) -> FeedWindow:
    """From the local day PAST_DAYS before today to the local day AHEAD_DAYS after it, in ``zone``."""
    today = to_local(now, zone).date()
    first, last = today - timedelta(days=PAST_DAYS), today + timedelta(days=AHEAD_DAYS)
    return FeedWindow(first, last, resolve_wall_time(first, time(0), zone).instant,
                      resolve_wall_time(last + timedelta(days=1), time(0), zone).instant)


def _title(text: str) -> str:
    """The first line of ``text``, cut to a title's length."""
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return line if len(line) <= TITLE_LENGTH else line[:TITLE_LENGTH - 1] + "…"


def _action_title(payload, action_type: str) -> str:
    """An action's title: its payload's ``title`` when it has one, else its type; never more of the payload."""
    title = payload.get("title") if isinstance(payload, dict) else None
    return _title(title) if isinstance(title, str) and title.strip() else action_type


def post_events(session: Session, workspace_id: int, window: FeedWindow, zone: str) -> list[FeedEvent]:
    """Every post in the window but archived ones, at its wall time, with its targets' delivery."""
    posts = list_posts(session, workspace_id, start=window.first, end=window.last,
                       statuses=[PostStatus.DRAFT.value, PostStatus.APPROVED.value, PostStatus.PUBLISHED.value],
                       limit=MAX_POSTS)
    ids = [post.id for post in posts]
    rows = post_rows(session, workspace_id, ids)
    targets_of: dict[int, list[str]] = defaultdict(list)
    for start in range(0, len(ids), 500):  # one query per 500 posts, not one per post
        for post_id, name in session.execute(
                select(PostTarget.post_id, Channel.name).join(Channel, Channel.id == PostTarget.channel_id)
                .where(PostTarget.post_id.in_(ids[start:start + 500])).order_by(PostTarget.post_id, PostTarget.id)):
            targets_of[post_id].append(name)
    events = []
    for post in posts:
        targets = targets_of[post.id]
        delivery = delivery_of(targets, rows[post.id])
        start = resolve_wall_time(post.wall_date, post.wall_time, zone).local
        lines = [f"Post #{post.id}, {post.status}.", f"Targets: {', '.join(targets)}."]
        if post.status != PostStatus.DRAFT.value:
            lines.append(f"Delivery: {delivery.label}.")
        events.append(FeedEvent(uid=f"post-{post.id}", summary=f"[{post.status}] {_title(post.body)}", start=start,
                                kind="post", ref=post.id, description="\n".join(lines), sequence=post.revision,
                                tentative=post.status == PostStatus.DRAFT.value))
    return events


def action_events(session: Session, workspace_id: int, window: FeedWindow, zone: str) -> list[FeedEvent]:
    """Rows that are not a post's: recurring occurrences (by rule and slot) and a person's ad-hoc actions."""
    rows = session.scalars(
        select(ScheduledAction).where(
            ScheduledAction.workspace_id == workspace_id, ScheduledAction.publish_at >= window.start,
            ScheduledAction.publish_at < window.end, ScheduledAction.status.in_(SHOWN),
            ScheduledAction.origin.in_([Origin.RECURRING.value, Origin.PERSON.value]))
        .order_by(ScheduledAction.publish_at, ScheduledAction.id).limit(MAX_ACTIONS))
    names = channel_names(session, workspace_id)
    events = []
    for row in rows:
        if post_id_of(row.thing_id) is not None:
            continue  # Post now: its post's event says how it went
        start = to_local(row.publish_at, zone)
        channel = names.get(row.channel_id, "a channel")
        title = _action_title(row.payload, row.action_type)
        rule_id, slot = rule_id_of(row.thing_id), slot_of(row.thing_id)
        if rule_id is not None and slot is not None:
            events.append(FeedEvent(
                uid=f"rule-{rule_id}-{slot}", summary=f"[{row.status}] rule #{rule_id}: {title}", start=start,
                kind="action", ref=row.id,
                description=f"Occurrence {slot} of recurring rule #{rule_id} via {channel}; action #{row.id}, "
                            f"{row.status}."))
        else:
            events.append(FeedEvent(
                uid=f"action-{row.id}", summary=f"[{row.status}] {title} via {channel}", start=start, kind="action",
                ref=row.id, description=f"Action #{row.id} ({row.action_type}) via {channel}, {row.status}."))
    return events


def planned_occurrence_events(session: Session, workspace_id: int, window: FeedWindow, zone: str,
                              policy: Policy) -> list[FeedEvent]:
    """Active rules' occurrences the expander has not minted yet, as the recurring wing previews them."""
    events: list[FeedEvent] = []
    rules = session.scalars(select(RecurringSchedule).where(
        RecurringSchedule.workspace_id == workspace_id, RecurringSchedule.status == RuleStatus.ACTIVE.value)
        .order_by(RecurringSchedule.id))
    for rule in rules:
        since = max(window.start, rule.last_materialized_at or rule.starts_at)
        if since >= window.end:
            continue
        try:
            occurrences = rule_recurrence(rule, zone, policy).occurrences_between(since, window.end)
        except (InvalidTimezone, RecurrenceError):
            continue  # the expander reports a rule that no longer reads
        title = _action_title(rule.payload, rule.action_type)
        for occurrence in occurrences[:MAX_PLANNED - len(events)]:
            events.append(FeedEvent(uid=f"rule-{rule.id}-{occurrence.slot}",
                                    summary=f"[planned] rule #{rule.id}: {title}", start=occurrence.local,
                                    kind="rule", ref=rule.id, tentative=True,
                                    description=f"Occurrence {occurrence.slot} of recurring rule #{rule.id}, "
                                                "planned: not queued yet."))
        if len(events) >= MAX_PLANNED:
            break
    return events


def drip_day_events(session: Session, workspace_id: int, window: FeedWindow, zone: str) -> list[FeedEvent]:
    """One all-day event per campaign and local day: its sends that day, minted or planned, counted by status."""
    days = (window.last - window.first).days + 1
    bounds = [resolve_wall_time(window.first + timedelta(days=n), time(0), zone).instant for n in range(days + 1)]
    counts: dict[tuple[int, int], dict[str, int]] = defaultdict(dict)
    names: dict[int, str] = {}
    minted_day = case(*[(ScheduledAction.publish_at < bound, n) for n, bound in enumerate(bounds[1:])])
    minted = session.execute(
        select(Campaign.id, Campaign.name, minted_day.label("day"), ScheduledAction.status, func.count())
        .select_from(ScheduledAction)
        .join(Send, Send.attempt_id == ScheduledAction.id)
        .join(Enrollment, Enrollment.id == Send.enrollment_id)
        .join(Campaign, Campaign.id == Enrollment.campaign_id)
        .where(ScheduledAction.workspace_id == workspace_id, ScheduledAction.origin == Origin.DRIP.value,
               ScheduledAction.publish_at >= window.start, ScheduledAction.publish_at < window.end,
               ScheduledAction.status.in_(SHOWN))
        .group_by(Campaign.id, Campaign.name, minted_day, ScheduledAction.status))
    planned_day = case(*[(Enrollment.next_send_at < bound, n) for n, bound in enumerate(bounds[1:])])
    planned = session.execute(
        select(Campaign.id, Campaign.name, planned_day.label("day"), func.count())
        .select_from(Enrollment).join(Campaign, Campaign.id == Enrollment.campaign_id)
        .where(and_(Enrollment.workspace_id == workspace_id, Enrollment.status == EnrollmentStatus.ACTIVE.value,
                    Enrollment.waiting_send_id.is_(None), Enrollment.next_send_at >= window.start,
                    Enrollment.next_send_at < window.end))
        .group_by(Campaign.id, Campaign.name, planned_day))
    for campaign_id, name, index, status, count in minted:
        if index is not None:
            names[campaign_id] = name
            counts[(campaign_id, index)][status] = count
    for campaign_id, name, index, count in planned:
        if index is not None:
            names[campaign_id] = name
            counts[(campaign_id, index)]["planned"] = count
    order = ("published", "failed", "submitted", "queued", "planned")
    events = []
    for (campaign_id, index), by_status in sorted(counts.items()):
        day = window.first + timedelta(days=index)
        total = sum(by_status.values())
        breakdown = ", ".join(f"{by_status[s]:,} {s}" for s in order if by_status.get(s))
        events.append(FeedEvent(uid=f"campaign-{campaign_id}-{day.isoformat()}",
                                summary=f"{_title(names[campaign_id])}: {total:,} send{'' if total == 1 else 's'} "
                                        f"[{breakdown}]",
                                start=day, kind="campaign", ref=campaign_id,
                                description=f"Drip campaign #{campaign_id} on {day.isoformat()}: {breakdown}."))
    return events


@dataclass
class Feed:
    """A workspace's feed events, in start order."""

    workspace_name: str
    zone: str
    window: FeedWindow
    events: list[FeedEvent] = field(default_factory=list)


def build_feed(session: Session, workspace_id: int, workspace_name: str, zone: str, *, now: datetime,
               policy: Policy) -> Feed:
    """Every event of the workspace's feed as of ``now``."""
    window = feed_window(now, zone)
    events = (post_events(session, workspace_id, window, zone) + action_events(session, workspace_id, window, zone)
              + planned_occurrence_events(session, workspace_id, window, zone, policy)
              + drip_day_events(session, workspace_id, window, zone))
    seen: set[str] = set()
    unique = []
    for event in events:  # a slot minted and planned at once (a pass between two reads) is one
        if event.uid not in seen:
            seen.add(event.uid)
            unique.append(event)
    unique.sort(key=lambda e: (_sort_instant(e.start, zone), e.uid))
    return Feed(workspace_name, zone, window, unique)


def _sort_instant(start: datetime | date, zone: str) -> datetime:
    if isinstance(start, datetime):
        return start.astimezone(timezone.utc)
    return resolve_wall_time(start, time(0), zone).instant


# TEXT values (RFC 5545 3.3.11): these escaped; control characters other than a tab dropped.
_TEXT_ESCAPES = str.maketrans({"\\": "\\\\", ";": "\\;", ",": "\\,", "\n": "\\n",
                               **{chr(c): None for c in range(32) if c not in (9, 10)}, "\x7f": None})
_NOT_IN_A_URI = str.maketrans({**{chr(c): None for c in range(33)}, "\x7f": None})


def _text(value: str) -> str:
    return value.replace("\r\n", "\n").replace("\r", "\n").translate(_TEXT_ESCAPES)


def _fold(line: str) -> bytes:
    """One content line, folded at 75 octets (RFC 5545 3.1), never inside a UTF-8 character."""
    data = line.encode()
    if len(data) <= 75:
        return data + b"\r\n"
    parts, at, width = [], 0, 75
    while at < len(data):
        end = min(at + width, len(data))
        while end < len(data) and data[end] & 0xC0 == 0x80:
            end -= 1
        parts.append(data[at:end])
        at, width = end, 74  # a continuation line starts with its space
    return b"\r\n ".join(parts) + b"\r\n"


def _utc_stamp(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y%m%dT%H%M%SZ")


@lru_cache(maxsize=64)
def _vtimezone(zone: str, first: date, last: date) -> bytes:
    return Timezone.from_tzid(zone, first_date=first, last_date=last).to_ical()


def render_ics(feed: Feed, *, host: str, link: LinkMaker, now: datetime) -> bytes:
    """The feed as an iCalendar document, with the workspace's VTIMEZONE; every event links back to the dashboard.

    The events are written here, line by line, not through ``icalendar``'s objects: for thousands
    of events those cost seconds (tens on a busy machine), this a fraction of one. ``icalendar``
    still writes the VTIMEZONE, and the tests read the document back with it.
    """
    zone = ZoneInfo(feed.zone)
    stamp = _utc_stamp(now)
    lines = [b"BEGIN:VCALENDAR\r\n"] + [_fold(line) for line in (
        f"PRODID:{_text(PRODID)}", "VERSION:2.0", "CALSCALE:GREGORIAN", "METHOD:PUBLISH",
        f"X-WR-CALNAME:{_text(f'Tickwork · {feed.workspace_name}')}", f"X-WR-TIMEZONE:{_text(feed.zone)}",
        "REFRESH-INTERVAL;VALUE=DURATION:PT30M", "X-PUBLISHED-TTL:PT30M")]
    lines.append(_vtimezone(feed.zone, feed.window.first - timedelta(days=366), feed.window.last + timedelta(days=366)))
    tzid = _text(feed.zone).replace('"', "")
    for item in feed.events:
        url = link(item.kind, item.ref).translate(_NOT_IN_A_URI)
        event = ["BEGIN:VEVENT", f"UID:{_text(f'{item.uid}@{host}')}", f"DTSTAMP:{stamp}",
                 f"SUMMARY:{_text(item.summary)}"]
        if isinstance(item.start, datetime):
            start = item.start.astimezone(zone)
            end = start + EVENT_LENGTH
            event += [f"DTSTART;TZID={tzid}:{start:%Y%m%dT%H%M%S}", f"DTEND;TZID={tzid}:{end:%Y%m%dT%H%M%S}"]
        else:
            event += [f"DTSTART;VALUE=DATE:{item.start:%Y%m%d}",
                      f"DTEND;VALUE=DATE:{item.start + timedelta(days=1):%Y%m%d}", "TRANSP:TRANSPARENT"]
        event += [f"URL:{url}", f"DESCRIPTION:{_text(f'{item.description}' + chr(10) + url if item.description else url)}",
                  f"SEQUENCE:{int(item.sequence)}", f"STATUS:{'TENTATIVE' if item.tentative else 'CONFIRMED'}",
                  "END:VEVENT"]
        lines.extend(_fold(line) for line in event)
    lines.append(b"END:VCALENDAR\r\n")
    return b"".join(lines)
