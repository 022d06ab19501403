"""The queue (what fires next) and failures (what did not go out), with bulk cancel, retry and reschedule."""

from flask import Blueprint, render_template, request
from flask_login import login_required

from models.accounts.permissions import Permission
from models.actions.filters import action_types, count_actions, find_actions, matching_ids
from models.actions.tables import Status
from models.core.database import db, write_session
from models.core.errors import DomainError, InvalidInput
from models.core.time_input import parse_day, parse_shift
from models.overview.rescheduling import Shift, plan_reschedule, reschedule_matching
from models.actions.reading import action_cursor
from models.actions.scheduling import cancel_action, retry_action
from models.channels.reading import channel_names
from models.clock.pacing import throttled_channels
from models.core.runtime import runtime
from models.posts.listing import POST_STATUSES, post_authors
from webapp.views.actions import row_views
from webapp.views.context import is_htmx, require, viewer
from webapp.views.filters import parse_filter

bp = Blueprint("queue", __name__)

PAGE_SIZE = 50
BULK_LIMIT = 2000
QUEUE_STATUSES = (Status.QUEUED.value, Status.SUBMITTED.value)
FAILED = (Status.FAILED.value,)
# The actions list shows what the calendar counts: every status but cancelled, unless asked for.
# A listing's counts stop here ("more than 10,000"): counting a backlog of a million would cost the page its speed.
COUNTED_AT_MOST = 10_000
ALL_STATUSES = (Status.QUEUED.value, Status.SUBMITTED.value, Status.PUBLISHED.value, Status.FAILED.value,
                Status.CANCELLED.value)


def _statuses(kind: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The statuses a listing may filter by, and those it shows when no status is chosen."""
    if kind == "queue":
        return QUEUE_STATUSES, QUEUE_STATUSES
    if kind == "failures":
        return FAILED, FAILED
    with_cancelled = request.args.get("cancelled") == "1"
    return ALL_STATUSES, ALL_STATUSES if with_cancelled else ALL_STATUSES[:-1]


def _listing(kind: str):
    v = viewer()
    session = db.session
    allowed, default = _statuses(kind)
    parsed = parse_filter(request.args, v, allowed=allowed, default=default)
    rows = find_actions(session, v.workspace.id, parsed.wanted, after=parsed.after, limit=PAGE_SIZE + 1,
                        newest_first=kind == "failures")
    page, more = rows[:PAGE_SIZE], len(rows) > PAGE_SIZE
    counts = count_actions(session, v.workspace.id, parsed.wanted.with_statuses(*(allowed if kind != "actions" else default)),
                           at_most=COUNTED_AT_MOST)
    context = dict(
        v=v, kind=kind, views=row_views(page, v), parsed=parsed, counts=counts, counted_at_most=COUNTED_AT_MOST,
        next_cursor=action_cursor(page[-1]) if more else None, types=action_types(session, v.workspace.id),
        channels=sorted(channel_names(session, v.workspace.id).values()), statuses=allowed,
        throttled=throttled_channels(session, v.workspace.id, runtime().now()) if kind == "queue" else [],
        now=runtime().now(), authors=post_authors(session, v.workspace.id), review_states=POST_STATUSES,
    )
    if is_htmx():
        return render_template("queue/_listing_results.html", **context)
    return render_template("queue/listing.html", **context)


@bp.get("/queue")
@login_required
def queue():
    """Queued and submitted actions in (publish_at, id) order, filtered."""
    return _listing("queue")


@bp.get("/actions")
@login_required
def actions():
    """Every action in (publish_at, id) order, whatever its status: what the calendar's counts open."""
    return _listing("actions")


@bp.get("/failures")
@login_required
def failures():
    """Failed actions, newest first, with the reason in words."""
    return _listing("failures")


def _bulk(kind: str):
    """Preview (GET) or carry out (POST) a bulk cancel or retry over the current filter."""
    v = viewer()
    rt = runtime()
    statuses = (Status.QUEUED.value,) if kind == "cancel" else FAILED
    source = request.form if request.method == "POST" else request.args
    parsed = parse_filter(source, v, allowed=statuses, default=statuses)
    ids = matching_ids(db.session, v.workspace.id, parsed.wanted, limit=BULK_LIMIT + 1)
    preview = dict(count=min(len(ids), BULK_LIMIT), capped=len(ids) > BULK_LIMIT)
    context = dict(v=v, kind=kind, parsed=parsed, preview=preview, done=None, limit=BULK_LIMIT)
    if request.method == "GET" or request.form.get("confirm") != "yes":
        return render_template("queue/_bulk.html" if is_htmx() else "queue/bulk.html", **context)
    done, refused, retried = 0, [], []
    with write_session() as session:
        for action_id in ids[:BULK_LIMIT]:
            try:
                if kind == "cancel":
                    cancel_action(session, v.workspace.id, action_id, now=rt.now(), actor=v.actor, role=v.role)
                else:
                    retried.append(retry_action(session, v.workspace.id, action_id, now=rt.now(),
                                                policy=rt.policy, actor=v.actor, role=v.role, hooks=rt.hooks))
                done += 1
            except DomainError as error:
                refused.append(f"#{action_id}: {error.message}")
    rt.announce_due(retried)
    context["done"] = dict(count=done, refused=refused)
    return render_template("queue/_bulk.html" if is_htmx() else "queue/bulk.html", **context)


@bp.route("/queue/bulk-cancel", methods=["GET", "POST"])
@require(Permission.OPERATE)
def bulk_cancel():
    """Cancel every queued action matching the filter, after a preview count and a confirmation."""
    return _bulk("cancel")


@bp.route("/failures/bulk-retry", methods=["GET", "POST"])
@require(Permission.ADMINISTER)
def bulk_retry():
    """Retry every failed action matching the filter, after a preview count and a confirmation."""
    return _bulk("retry")


def _shift(source) -> Shift | None:
    """The shift typed into the bulk reschedule form; None when none was given yet; a 422 when garbled."""
    raw_shift, raw_date = (source.get("shift") or "").strip(), (source.get("to_date") or "").strip()
    if raw_shift and raw_date:
        raise InvalidInput("Give a shift or a date, not both.", field="shift", code="both")
    if raw_date:
        return Shift(to_date=parse_day(raw_date, "to_date"))
    if raw_shift:
        days, minutes = parse_shift(raw_shift)
        return Shift(days=days, minutes=minutes)
    return None


@bp.route("/queue/bulk-reschedule", methods=["GET", "POST"])
@require(Permission.OPERATE)
def bulk_reschedule():
    """Shift every queued action matching the filter by a duration, or move it to a date, after a preview."""
    v = viewer()
    rt = runtime()
    source = request.form if request.method == "POST" else request.args
    parsed = parse_filter(source, v, allowed=(Status.QUEUED.value,), default=(Status.QUEUED.value,))
    ids = matching_ids(db.session, v.workspace.id, parsed.wanted, limit=BULK_LIMIT + 1)
    context = dict(v=v, parsed=parsed, count=min(len(ids), BULK_LIMIT), capped=len(ids) > BULK_LIMIT,
                   limit=BULK_LIMIT, plan=None, done=None, error=None,
                   typed={"shift": (source.get("shift") or "")[:40], "to_date": (source.get("to_date") or "")[:40]})
    template = "queue/_bulk_reschedule.html" if is_htmx() else "queue/bulk_reschedule.html"
    try:
        shift = _shift(source)
        if shift is not None:
            context["plan"] = plan_reschedule(db.session, v.workspace.id, ids[:BULK_LIMIT], shift, zone=v.zone,
                                              now=rt.now(), policy=rt.policy)
    except DomainError as error:
        context["error"] = error.message
        return render_template(template, **context), error.status
    if request.method == "GET" or shift is None or request.form.get("confirm") != "yes":
        return render_template(template, **context)
    with write_session() as session:
        done = reschedule_matching(session, v.workspace.id, ids[:BULK_LIMIT], shift, zone=v.zone, actor=v.actor,
                                   role=v.role, now=rt.now(), policy=rt.policy)
    rt.announce_due(done.new_rows)
    context.update(done=done, plan=None)
    return render_template(template, **context)
