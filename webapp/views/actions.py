"""One action: its detail page, and the row widget that cancels, reschedules and retries it.

The row is one stateful partial (``actions/_action_row.html``) that renders every state of
the row and replaces itself. What it shows of a row is built once, by :func:`row_views`,
wherever the row appears (the queue, failures, the detail page, a re-rendered row), so a
row reads the same before and after a reload. A refused change answers with the row
re-rendered and the refusal written on it, under the refusal's own status code (403, 409,
422): htmx 4 swaps error answers like any other, so the row shows the message in place.
"""

import json
from dataclasses import dataclass, replace

from flask import Blueprint, abort, current_app, flash, redirect, render_template, request, url_for
from flask_login import login_required
from sqlalchemy import select

from models.accounts.permissions import Permission
from models.actions.access import check_may_reschedule, may_cancel, may_reschedule, may_retry
from models.actions.reading import action_events, events_by_action, get_action, rescheduled_to
from models.actions.scheduling import cancel_action, reschedule_action, retry_action
from models.actions.tables import ActionEvent, ScheduledAction, Status
from models.channels.reading import channel_names
from models.core.database import db, write_session
from models.core.errors import DomainError, InvalidInput, NotFound
from models.core.runtime import runtime
from models.retention.reading import archived_action
from models.core.time_input import parse_clock, parse_day, resolve_typed
from webapp.redirects import same_site_path
from webapp.views.context import Viewer, is_htmx, render_page, require, viewer
from webapp.views.posts import post_url
from webapp.views.wording import failure_reason, refusal_message

bp = Blueprint("actions", __name__)


@dataclass(frozen=True)
class RowView:
    """Everything the row partial shows of one action, and what the viewer may do to it."""

    row: ScheduledAction
    channel_name: str
    reason: str | None  # why it failed, in words, for a failed row
    can_cancel: bool
    can_reschedule: bool
    can_retry: bool
    post_link: str | None  # the post a reconciler row follows
    timeline: list[ActionEvent] | None  # for a row that has been tried at least once
    message: str | None = None
    message_kind: str = "ok"
    editing: bool = False
    replacement: "RowView | None" = None
    typed: dict | None = None  # the date and time a refused reschedule was given, shown again


def row_views(rows: list[ScheduledAction], v: Viewer) -> list[RowView]:
    """The row widgets of ``rows``, with one query for channel names and one for the timelines."""
    names = channel_names(db.session, v.workspace.id)
    timelines = events_by_action(db.session, [row.id for row in rows if row.attempt_count])
    return [
        RowView(
            row=row, channel_name=names.get(row.channel_id, "?"),
            reason=failure_reason(row) if row.status == Status.FAILED.value else None,
            can_cancel=may_cancel(v.role, v.user.id, row), can_reschedule=may_reschedule(v.role),
            can_retry=may_retry(v.role), post_link=post_url(row), timeline=timelines.get(row.id),
        )
        for row in rows
    ]


def row_view(row: ScheduledAction, **extra) -> RowView:
    """One row's widget for the current viewer, with a message, the edit form, or its replacement."""
    replacement = extra.pop("replacement", None)
    view = replace(row_views([row], viewer())[0], **extra)
    if replacement is not None:
        view = replace(view, replacement=row_views([replacement], viewer())[0])
    return view


def render_row(row: ScheduledAction, *, status: int = 200, **extra):
    """The row partial for htmx, or the action's page for a plain browser request."""
    view = row_view(row, **extra)
    if is_htmx():
        return render_template("actions/_action_row.html", r=view, v=viewer()), status
    if status < 400 and request.method == "POST":
        if view.message:
            flash(view.message, view.message_kind)
        back = same_site_path(request.form.get("next"))
        return redirect(back or url_for("actions.detail", action_id=row.id), code=303)
    return render_detail(row, status=status, message=view.message, message_kind=view.message_kind)


def refuse(action_id: int, error: DomainError, *, editing: bool = False, typed: dict | None = None):
    """Re-render the row with the refusal on it; a 404 when the row is not ours to show."""
    v = viewer()
    row = db.session.scalar(
        select(ScheduledAction).where(ScheduledAction.id == action_id, ScheduledAction.workspace_id == v.workspace.id)
        .execution_options(populate_existing=True)
    )
    if row is None:
        abort(404, "There is no such action in this workspace.")
    return render_row(row, status=error.status, message=refusal_message(error, row, v), message_kind="error",
                      editing=editing, typed=typed if editing else None)


def render_detail(row: ScheduledAction, *, status: int = 200, message: str | None = None, message_kind: str = "ok"):
    v = viewer()
    session = db.session
    events = action_events(session, row.id)
    parent = session.get(ScheduledAction, row.rescheduled_from_id) if row.rescheduled_from_id else None
    return render_page(
        "actions/action_detail.html", v=v, r=row_view(row), row=row, message=message, message_kind=message_kind,
        events=events, parent=parent, children=rescheduled_to(session, row.id),
        payload_text=json.dumps(row.payload, indent=2, ensure_ascii=False, sort_keys=True),
    ), status


@bp.get("/actions/<int:action_id>")
@login_required
def detail(action_id: int):
    """An action's detail: timeline, lineage, payload, provider id."""
    v = viewer()
    try:
        return render_detail(get_action(db.session, v.workspace.id, action_id))
    except NotFound:
        archived = archived_action(db.session, v.workspace.id, action_id, current_app.config["TICKWORK_ARCHIVE_DIR"])
        if archived is None:
            raise
    row = archived.row
    names = channel_names(db.session, v.workspace.id)
    return render_page(
        "actions/archived_detail.html", v=v, row=row, archived=archived, channel_name=names.get(row.channel_id, "?"),
        reason=failure_reason(row) if row.status == Status.FAILED.value else None,
        payload_text=json.dumps(row.payload, indent=2, ensure_ascii=False, sort_keys=True),
    )


@bp.get("/actions/<int:action_id>/row")
@login_required
def row(action_id: int):
    """The action's row as it is now (htmx polls this while a row is being sent)."""
    v = viewer()
    found = get_action(db.session, v.workspace.id, action_id)
    if not is_htmx():
        return redirect(url_for("actions.detail", action_id=found.id))
    return render_row(found)


@bp.post("/actions/<int:action_id>/cancel")
@login_required
def cancel(action_id: int):
    """Cancel a queued action."""
    v = viewer()
    rt = runtime()
    try:
        with write_session() as session:
            was_already = get_action(session, v.workspace.id, action_id).status == Status.CANCELLED.value
            done = cancel_action(session, v.workspace.id, action_id, now=rt.now(), actor=v.actor, role=v.role)
    except DomainError as error:
        return refuse(action_id, error)
    message = "It was already cancelled." if was_already else "Cancelled."
    return render_row(done, message=message)


@bp.get("/actions/<int:action_id>/reschedule")
@login_required
def reschedule_form(action_id: int):
    """The row with its inline date and time form open."""
    v = viewer()
    found = get_action(db.session, v.workspace.id, action_id)
    try:
        check_may_reschedule(v.role)
    except DomainError as error:
        return refuse(action_id, error)
    return render_row(found, editing=True)


@bp.post("/actions/<int:action_id>/reschedule")
@login_required
def reschedule(action_id: int):
    """Cancel the row and schedule its replacement at the new wall time."""
    v = viewer()
    rt = runtime()
    try:
        check_may_reschedule(v.role)
        resolved = resolve_typed(parse_day(request.form.get("date")), parse_clock(request.form.get("time")), v.zone,
                                 "date")
        with write_session() as session:
            new = reschedule_action(session, v.workspace.id, action_id, resolved.instant, now=rt.now(),
                                    policy=rt.policy, actor=v.actor, role=v.role, hooks=rt.hooks, time_field="date")
            old = session.get(ScheduledAction, action_id)
    except DomainError as error:
        typed = {"date": (request.form.get("date") or "")[:10], "time": (request.form.get("time") or "")[:5]}
        return refuse(action_id, error, editing=isinstance(error, InvalidInput), typed=typed)
    rt.announce_due([new])
    local = v.local(new.publish_at)
    message = f"Moved to {local:%a %d %b %H:%M %Z} as #{new.id}."
    if resolved.note:
        message += " " + resolved.note
    return render_row(old, message=message, replacement=new, status=200)


@bp.post("/actions/<int:action_id>/retry")
@login_required
def retry(action_id: int):
    """Queue a failed action again, due now (admin only)."""
    v = viewer()
    rt = runtime()
    try:
        with write_session() as session:
            done = retry_action(session, v.workspace.id, action_id, now=rt.now(), policy=rt.policy, actor=v.actor,
                                role=v.role, hooks=rt.hooks)
    except DomainError as error:
        return refuse(action_id, error)
    rt.announce_due([done])
    return render_row(done, message=f"Retried: queued again, due now (attempt {done.attempt_count + 1} of "
                                    f"{rt.policy.max_attempts}).")


@bp.post("/actions/<int:action_id>/post-now")
@require(Permission.COMPOSE)
def post_now(action_id: int):
    """Send this target of the row's post now: the queued row is replaced by one due now."""
    from models.posts.tables import post_id_of
    from models.posts.operations import post_now as send_post_now

    v = viewer()
    rt = runtime()
    try:
        found = get_action(db.session, v.workspace.id, action_id)
        post_id = post_id_of(found.thing_id)
        if post_id is None:
            raise InvalidInput("This action does not belong to a post.", code="not_a_post")
        with write_session() as session:
            change = send_post_now(session, v.workspace.id, post_id, channel=found.target_key, actor=v.actor,
                                   now=rt.now(), policy=rt.policy)
            old = session.get(ScheduledAction, action_id)
    except DomainError as error:
        return refuse(action_id, error)
    rt.announce_due(change.new_rows)
    new = change.new_rows[0]
    return render_row(old, message=f"Sending now as #{new.id}.", replacement=new)
