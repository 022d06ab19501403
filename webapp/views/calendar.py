"""Month and week calendars in the workspace's zone: actions as chips, busy days as counts."""

from datetime import date, timedelta

from flask import Blueprint, render_template, request, url_for
from flask_login import login_required

from models.actions.tables import Status
from models.overview.calendar import BUSY_DAY, lay_out
from models.core.database import db
from models.timing.wall_time import to_local
from models.channels.reading import channel_names
from models.core.runtime import runtime
from webapp.views.context import is_htmx, viewer

bp = Blueprint("calendar", __name__)

# Where a wing's calendar entry links to, by its kind: the endpoint and its id argument.
ENTRY_LINKS = {"post": ("posts.edit", "post_id"), "rule": ("recurring.detail", "rule_id"),
               "campaign": ("campaigns.detail", "campaign_id")}


def entry_link(entry) -> str | None:
    """The dashboard page of a calendar entry, if its kind has one."""
    if entry.kind not in ENTRY_LINKS:
        return None
    endpoint, argument = ENTRY_LINKS[entry.kind]
    return url_for(endpoint, **{argument: entry.ref})

SHOWN = (Status.QUEUED.value, Status.SUBMITTED.value, Status.PUBLISHED.value, Status.FAILED.value)


def _month_start(day: date) -> date:
    return day.replace(day=1)


def _add_months(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


@bp.get("/calendar")
@login_required
def calendar():
    """The month (or week) around ``date``, in the workspace's zone."""
    v = viewer()
    today = to_local(runtime().now(), v.zone).date()
    view = "week" if request.args.get("view") == "week" else "month"
    try:
        focus = date.fromisoformat(request.args.get("date") or "")
    except ValueError:
        focus = today
    with_cancelled = request.args.get("cancelled") == "1"
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
    layout = lay_out(db.session, v.workspace.id, first, days, v.zone, statuses, runtime().hooks.calendar_sources)
    context = dict(
        v=v, view=view, layout=layout, today=today, focus=focus, title=title, prev_date=prev_date,
        next_date=next_date, with_cancelled=with_cancelled, names=channel_names(db.session, v.workspace.id),
        entry_link=entry_link, month=focus.month if view == "month" else None, busy_day=BUSY_DAY,
        weeks=[layout[i:i + 7] for i in range(0, len(layout), 7)],
    )
    return render_template("calendar/_calendar.html" if is_htmx() else "calendar/calendar.html", **context)
