"""Month and week calendars in the workspace's zone: actions as chips, busy days as counts; moving a
post by dragging a chip, or by its "Move to…" control; an agenda list for narrow screens.

Every rule lives in :mod:`models.posts.operations` (``move_post``, ``check_move``) and
:mod:`models.overview.calendar` (``how_to_move``); these views parse, call, and render. The
calendar is one widget (``#calendar``): a move answers with the calendar re-rendered and the
outcome written on it, a refusal under its own status code (403, 409, 422), as the row widget does.
"""

import re
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from urllib.parse import urlencode

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask_login import login_required
from sqlalchemy import select

from models.actions.tables import ScheduledAction, Status
from models.channels.reading import channel_names
from models.channels.tables import Channel
from models.core.database import db, write_session
from models.core.errors import DomainError, InvalidInput
from models.core.hooks import CalendarEntry
from models.core.runtime import runtime
from models.core.time_input import parse_clock, parse_day
from models.overview.calendar import BUSY_DAY, how_to_move, lay_out
from models.posts.access import check_may_move_post, may_move_post
from models.posts.listing import POST_STATUSES, matching_post_ids, post_authors
from models.posts.operations import PostMoved, UndoGuard, check_move, move_post
from models.posts.queue import free_slots
from models.posts.reading import get_post, posts_by_id
from models.posts.tables import MAX_ID
from models.timing.wall_time import to_local
from webapp.views.context import Viewer, is_htmx, viewer
from webapp.views.feeds import feed_panel
from webapp.views.filters import PostFilters, parse_post_filters

bp = Blueprint("calendar", __name__)

# Where a wing's calendar entry links to, by its kind: the endpoint and its id argument.
ENTRY_LINKS = {"post": ("posts.edit", "post_id"), "rule": ("recurring.detail", "rule_id"),
               "campaign": ("campaigns.detail", "campaign_id")}
# How long the Undo of a move stays on screen (tickwork.js removes it).
UNDO_SECONDS = 10
MAX_UNDO_ROWS = 50
CALENDAR_FILTER_KEYS = ("channel", "author", "review")
ROW_IDS = re.compile(r"^\d{1,10}(,\d{1,10}){0,49}$")


def entry_link(entry) -> str | None:
    """The dashboard page of a calendar entry, if its kind has one."""
    if entry.kind not in ENTRY_LINKS:
        return None
    endpoint, argument = ENTRY_LINKS[entry.kind]
    return url_for(endpoint, **{argument: entry.ref})


SHOWN = (Status.QUEUED.value, Status.SUBMITTED.value, Status.PUBLISHED.value, Status.FAILED.value)


@dataclass(frozen=True)
class Chip:
    """One thing on a calendar day, a row or a wing's entry, and how it may move."""

    at: time  # local time of day
    status: str
    label: str
    link: str | None
    title: str
    post_id: int | None = None  # dragging it moves this post
    refusal: str | None = None  # why it cannot be dragged
    row: ScheduledAction | None = None
    entry: CalendarEntry | None = None

    @property
    def key(self) -> str:
        return f"row-{self.row.id}" if self.row is not None else f"{self.entry.kind}-{self.entry.ref}"


@dataclass
class Day:
    """A day of the layout with its chips in time order (``busy`` days show counts instead of rows)."""

    day: date
    busy: bool
    counts: dict
    chips: list[Chip] = field(default_factory=list)
    hour_counts: dict = field(default_factory=dict)  # a busy day's busy hours (the week's grid): counts per type

    def at_hour(self, hour: int) -> list[Chip]:
        return [chip for chip in self.chips if chip.at.hour == hour]


def _month_start(day: date) -> date:
    return day.replace(day=1)


def _add_months(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


def _focus(raw: str | None, today: date) -> date:
    try:
        return date.fromisoformat(raw or "")
    except ValueError:
        return today


def _row_chip(row: ScheduledAction, v: Viewer, names: dict) -> Chip:
    how = how_to_move(row)
    body = row.payload.get("body") if isinstance(row.payload, dict) else None
    label = f"{v.local(row.publish_at):%H:%M} {names.get(row.channel_id, '')}"
    if isinstance(body, str):
        label += f" · {body[:40]}"
    return Chip(at=v.local(row.publish_at).time(), status=row.status, label=label,
                link=url_for("actions.detail", action_id=row.id),
                title=f"#{row.id} {row.action_type} → {row.target_key} ({row.status})",
                post_id=how.post_id, refusal=how.refusal, row=row)


def _entry_chip(entry: CalendarEntry) -> Chip:
    return Chip(at=entry.at, status=entry.status, label=f"{entry.at:%H:%M} {entry.title}", link=entry_link(entry),
                title=f"{entry.status.capitalize()} {entry.kind} #{entry.ref}",
                post_id=entry.ref if entry.kind == "post" else None,
                refusal=None if entry.kind == "post" else "This entry cannot be moved from the calendar.",
                entry=entry)


@dataclass
class CalendarFilter:
    """The calendar's filters: a channel, and the author and review state of the rows' posts."""

    values: dict  # as typed, for the form and the links
    channel_id: int | None
    of_posts: PostFilters
    problem: str | None

    @property
    def active(self) -> bool:
        return any(self.values.values())

    @property
    def query(self) -> str:
        """The filters as a query string's tail (``&channel=...``), for every link the calendar makes."""
        pairs = {key: value for key, value in self.values.items() if value}
        return "&" + urlencode(pairs) if pairs else ""


def calendar_filter(args, v: Viewer) -> CalendarFilter:
    """Read the calendar's filter bar; a bad value is dropped and said in words."""
    values = {key: (args.get(key) or "").strip()[:200] for key in CALENDAR_FILTER_KEYS}
    problems = []
    channel_id = None
    if values["channel"]:
        channel_id = next((ident for ident, name in channel_names(db.session, v.workspace.id).items()
                           if name == values["channel"]), None)
        if channel_id is None:
            problems.append(f"No channel named {values['channel']!r}.")
            values["channel"] = ""
    of_posts = parse_post_filters(values, v)
    problems += of_posts.problems
    return CalendarFilter(values=values, channel_id=channel_id, of_posts=of_posts, problem=" ".join(problems) or None)


def _filtered_entries(layout, v: Viewer, filters: CalendarFilter) -> None:
    """Keep the wings' entries the filters allow: posts that match them; no other kind once a filter is set."""
    if not filters.active:
        return
    post_ids = [entry.ref for day in layout for entry in day.entries if entry.kind == "post"]
    review = filters.of_posts.review
    keep = matching_post_ids(db.session, v.workspace.id, post_ids, author_id=filters.of_posts.author_id,
                             statuses=(review,) if review else (), channel_id=filters.channel_id)
    for day in layout:
        day.entries = [entry for entry in day.entries if entry.kind == "post" and entry.ref in keep]


def calendar_context(v: Viewer, *, view: str, focus: date | None, with_cancelled: bool, notice: dict | None = None,
                     filters: CalendarFilter | None = None):
    """Everything the calendar widget shows for ``view`` around ``focus``."""
    filters = filters or calendar_filter({}, v)
    today = to_local(runtime().now(), v.zone).date()
    focus = focus or today
    statuses = SHOWN + ((Status.CANCELLED.value,) if with_cancelled else ())
    if view == "month":
        first_of_month = _month_start(focus)
        first = first_of_month - timedelta(days=first_of_month.weekday())
        last_of_month = _add_months(first_of_month, 1) - timedelta(days=1)
        days = ((last_of_month - first).days // 7 + 1) * 7
        prev_date, next_date = _add_months(first_of_month, -1), _add_months(first_of_month, 1)
        title = f"{first_of_month:%B %Y}"
    else:
        first = focus - timedelta(days=focus.weekday())
        days = 7
        prev_date, next_date = first - timedelta(days=7), first + timedelta(days=7)
        last = first + timedelta(days=6)
        title = f"{first:%d %b} – {last:%d %b %Y}"
    where = [ScheduledAction.channel_id == filters.channel_id] if filters.channel_id is not None else []
    of_posts = filters.of_posts.condition(v.workspace.id)
    if of_posts is not None:
        where.append(of_posts)
    layout = lay_out(db.session, v.workspace.id, first, days, v.zone, statuses, runtime().hooks.calendar_sources,
                     hourly=view != "month", where=tuple(where))
    _filtered_entries(layout, v, filters)
    names = channel_names(db.session, v.workspace.id)
    calendar_days = []
    for laid in layout:
        chips = [_entry_chip(entry) for entry in laid.entries] + [_row_chip(row, v, names) for row in laid.actions]
        chips.sort(key=lambda chip: chip.at)
        calendar_days.append(Day(laid.day, laid.busy, laid.counts, chips, laid.hour_counts))
    posts = posts_by_id(db.session, v.workspace.id,
                        [chip.post_id for day in calendar_days for chip in day.chips if chip.post_id])
    free = _free_slots(v, first, first + timedelta(days=days - 1))
    return dict(
        free_slots=free,
        v=v, view=view, layout=calendar_days, today=today, focus=focus, title=title, prev_date=prev_date,
        next_date=next_date, with_cancelled=with_cancelled, month=focus.month if view == "month" else None,
        busy_day=BUSY_DAY, weeks=[calendar_days[i:i + 7] for i in range(0, len(calendar_days), 7)],
        posts=posts, can_move=may_move_post(v.role), notice=notice, undo_seconds=UNDO_SECONDS,
        agenda=[day for day in calendar_days if day.chips or day.busy],
        filters=filters, filter_query=filters.query, channels=sorted(names.values()),
        authors=post_authors(db.session, v.workspace.id), review_states=POST_STATUSES,
    )


def _free_slots(v: Viewer, first: date, last: date) -> dict[date, list[tuple]]:
    """Each day's free posting times (the channels free at each), the drop targets a post may be moved to."""
    channels = [channel for channel in db.session.scalars(select(Channel).where(Channel.workspace_id == v.workspace.id)
                                                          .order_by(Channel.name)) if channel.posting_slots]
    if not channels or v.zone_problem:
        return {}
    rt = runtime()
    free = free_slots(db.session, v.workspace.id, channels, first, last, now=rt.now(), policy=rt.policy)
    by_day: dict[date, dict] = {}
    for channel in channels:
        for day, at in free[channel.id]:
            by_day.setdefault(day, {}).setdefault(at, []).append(channel.name)
    return {day: sorted(times.items()) for day, times in by_day.items()}


def calendar_url(view: str, focus: date, with_cancelled: bool) -> str:
    query = {"view": view, "date": focus.isoformat()}
    if with_cancelled:
        query["cancelled"] = "1"
    return url_for("calendar.calendar") + "?" + urlencode(query)


@bp.get("/calendar")
@login_required
def calendar():
    """The month (or week) around ``date``, in the workspace's zone."""
    v = viewer()
    view = "week" if request.args.get("view") == "week" else "month"
    today = to_local(runtime().now(), v.zone).date()
    context = calendar_context(v, view=view, focus=_focus(request.args.get("date"), today),
                               with_cancelled=request.args.get("cancelled") == "1",
                               filters=calendar_filter(request.args, v))
    if is_htmx():
        return render_template("calendar/_calendar.html", **context)
    return render_template("calendar/calendar.html", feed=feed_panel(v), **context)


# -- moving a post ---------------------------------------------------------------------------


def _post_id(raw) -> int:
    text = raw.strip() if isinstance(raw, str) else ""
    if not text.isdecimal() or not 0 < int(text) <= MAX_ID:
        raise InvalidInput("Pick a post to move.", field="post", code="bad_post")
    return int(text)


def _undo_guard(form) -> UndoGuard | None:
    """The guard an Undo button carries; anything malformed is a 422."""
    if form.get("undo") != "1":
        return None
    revision, rows = (form.get("revision") or "").strip(), (form.get("rows") or "").strip()
    if not revision.isdecimal() or not 0 < int(revision) <= MAX_ID or (rows and not ROW_IDS.match(rows)):
        raise InvalidInput("This Undo is not one Tickwork offered.", field="undo", code="bad_undo")
    ids = tuple(int(part) for part in rows.split(",")) if rows else ()
    if any(not 0 < ident <= MAX_ID for ident in ids):
        raise InvalidInput("This Undo is not one Tickwork offered.", field="undo", code="bad_undo")
    return UndoGuard(revision=int(revision), row_ids=ids)


def _where(v: Viewer, resolved) -> str:
    return f"{resolved.local:%a %d %b %Y, %H:%M %Z}"


def _clock(v: Viewer, instant: datetime | None) -> str:
    return f"{v.local(instant):%H:%M}" if instant else "an unknown time"


STAYED_WORDS = {
    Status.PUBLISHED.value: "{channel} already sent at {at}",
    Status.SUBMITTED.value: "{channel} is being sent (claimed at {at})",
    Status.FAILED.value: "{channel} failed at {at} and stays",
    Status.CANCELLED.value: "{channel} was cancelled and stays so",
    Status.QUEUED.value: "{channel} stays at {at} (a person's own time)",
}


def moved_words(v: Viewer, moved: PostMoved, *, undoing: bool) -> str:
    """What a move did, in one sentence: which targets stayed and why, how many moved, any DST note."""
    post = moved.post
    where = _where(v, moved.resolved)
    if moved.unchanged:
        return f"Post #{post.id} is already at {where}."
    verb = "moved back" if undoing else "moved"
    if not moved.stayed and not moved.moved:
        words = f"Post #{post.id} ({post.status}) {verb} to {where}."
    else:
        parts = [STAYED_WORDS.get(t.status, "{channel} stays").format(channel=t.channel, at=_clock(v, t.at))
                 for t in moved.stayed]
        count = len(moved.moved)
        parts.append(f"{count} target{'' if count == 1 else 's'} {verb} to {where}" if count
                     else f"nothing else to move; post #{post.id} is now at {where}")
        words = "; ".join(parts)
        words = words[0].upper() + words[1:] + "."
    if moved.resolved.note:
        words += " " + moved.resolved.note
    return words


def refusal_words(error: DomainError) -> str:
    """A refused move, in words for the person who dropped it."""
    if error.code == "in_the_past":
        return "That is in the past: a post cannot be moved before now. Nothing changed."
    if error.code in ("claimed_meanwhile", "changed_since"):
        return f"Undo refused: {error.message}."
    message = error.message[0].upper() + error.message[1:]
    return message if message.endswith(".") else message + "."


def _render_calendar(v: Viewer, form, notice: dict, status: int):
    view = "week" if form.get("view") == "week" else "month"
    today = to_local(runtime().now(), v.zone).date()
    context = calendar_context(v, view=view, focus=_focus(form.get("focus"), today),
                               with_cancelled=form.get("cancelled") == "1", notice=notice,
                               filters=calendar_filter(form, v))
    return render_template("calendar/_calendar.html", **context), status


def _move_form_context(v: Viewer, post, args, *, error: str | None = None, values: dict | None = None) -> dict:
    today = to_local(runtime().now(), v.zone).date()
    view = "week" if args.get("view") == "week" else "month"
    values = values or {"date": post.wall_date.isoformat(), "time": post.wall_time.strftime("%H:%M")}
    return dict(v=v, post=post, view=view, focus=_focus(args.get("focus") or args.get("date"), today),
                with_cancelled=args.get("cancelled") == "1", values=values, error=error,
                preview=_preview(v, post, values.get("date"), values.get("time")),
                back=calendar_url(view, _focus(args.get("focus") or args.get("date"), today),
                                  args.get("cancelled") == "1"))


def _preview(v: Viewer, post, raw_date, raw_time) -> dict:
    """Where the post would land (with any DST note), or why it cannot move there."""
    rt = runtime()
    try:
        resolved = check_move(db.session, post, parse_day(raw_date), parse_clock(raw_time), now=rt.now(),
                              policy=rt.policy)
    except DomainError as error:
        return dict(error=refusal_words(error))
    return dict(local=resolved.local, utc=resolved.instant, note=resolved.note, same=(
        parse_day(raw_date), parse_clock(raw_time)) == (post.wall_date, post.wall_time))


@bp.get("/calendar/move")
@login_required
def move_form():
    """The "Move to…" control: a post's date and time, with where it would land (the keyboard's drag)."""
    v = viewer()
    check_may_move_post(v.role)
    post = get_post(db.session, v.workspace.id, _post_id(request.args.get("post")))
    context = _move_form_context(v, post, request.args)
    if is_htmx():
        return render_template("calendar/_move_panel.html", standalone=False, **context)
    return render_template("calendar/move.html", standalone=True, **context)


@bp.get("/calendar/move-preview")
@login_required
def move_preview():
    """Where a dragged post would land at ``date`` and ``time``, with the DST note, before it is dropped."""
    v = viewer()
    post = get_post(db.session, v.workspace.id, _post_id(request.args.get("post")))
    if not is_htmx():
        return redirect(url_for("calendar.move_form", post=post.id))
    return render_template("calendar/_move_preview.html", v=v, post=post,
                           preview=_preview(v, post, request.args.get("date"), request.args.get("time")))


@bp.post("/calendar/move")
@login_required
def move():
    """Move a post (every target) to a date and time: a drop on the calendar, Move to…, or an Undo."""
    v = viewer()
    rt = runtime()
    form = request.form
    post_id = None
    try:
        post_id = _post_id(form.get("post"))
        wall_date, wall_time = parse_day(form.get("date")), parse_clock(form.get("time"))
        guard = _undo_guard(form)
        with write_session() as session:
            moved = move_post(session, v.workspace.id, post_id, wall_date=wall_date, wall_time=wall_time,
                              actor=v.actor, role=v.role, now=rt.now(), policy=rt.policy, guard=guard)
    except DomainError as error:
        if error.status == 404:
            raise
        words = refusal_words(error)
        if not is_htmx():
            if post_id is None:
                raise
            post = get_post(db.session, v.workspace.id, post_id)
            values = {"date": form.get("date", ""), "time": form.get("time", "")}
            return render_template("calendar/move.html", standalone=True,
                                   **_move_form_context(v, post, form, error=words, values=values)), error.status
        return _render_calendar(v, form, dict(kind="error", text=words, post_id=post_id), error.status)
    rt.announce_due(moved.new_rows)
    words = moved_words(v, moved, undoing=guard is not None)
    undo = None
    if guard is None and not moved.unchanged:
        previous_date, previous_time = moved.previous
        undo = dict(post=moved.post.id, date=previous_date.isoformat(), time=previous_time.strftime("%H:%M"),
                    revision=moved.undo.revision, rows=",".join(str(i) for i in moved.undo.row_ids))
    if not is_htmx():
        flash(words, "ok")
        view = "week" if form.get("view") == "week" else "month"
        return redirect(calendar_url(view, wall_date, form.get("cancelled") == "1"), code=303)
    return _render_calendar(v, form, dict(kind="ok", text=words, post_id=moved.post.id, undo=undo), 200)
