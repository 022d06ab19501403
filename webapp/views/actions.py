"""One action: its detail page, and the row widget that cancels, reschedules and retries it.

The row is one stateful partial (``_action_row.html``) that renders every state of the row
and replaces itself. A refused change answers with the row re-rendered and the refusal
written on it, under the refusal's own status code (403, 409, 422): htmx 4 swaps error
answers like any other, so the row shows the message in place.
"""

import json
from datetime import date, time

from flask import Blueprint, abort, flash, redirect, render_template, request, url_for
from flask_login import login_required
from sqlalchemy import select

from models.accounts.tables import Role
from models.actions.tables import ActionEvent, Origin, ScheduledAction, Status
from models.actions.filters import rescheduled_to
from models.channels.tables import Channel
from models.core.database import db, write_session
from models.core.errors import DomainError, Forbidden, InvalidInput
from models.actions.scheduling import action_events, cancel_action, get_action, reschedule_action, retry_action
from models.timing.wall_time import InvalidTimezone, resolve_wall_time
from models.core.runtime import runtime
from webapp.views.posts import post_url
from webapp.views.context import is_htmx, render_page, viewer
from webapp.views.wording import failure_reason, refusal_message

bp = Blueprint("actions", __name__)


def channel_names(session, workspace_id: int) -> dict[int, str]:
    rows = session.execute(select(Channel.id, Channel.name).where(Channel.workspace_id == workspace_id))
    return {ident: name for ident, name in rows}


def events_by_action(session, action_ids: list[int]) -> dict[int, list[ActionEvent]]:
    """The timelines of several rows in one query."""
    timelines: dict[int, list[ActionEvent]] = {ident: [] for ident in action_ids}
    if action_ids:
        for event in session.scalars(select(ActionEvent).where(ActionEvent.action_id.in_(action_ids))
                                     .order_by(ActionEvent.action_id, ActionEvent.id)):
            timelines[event.action_id].append(event)
    return timelines


def may_cancel(v, row: ScheduledAction) -> bool:
    """Ops cancel anything; a marketer cancels a post's rows and the rows they created."""
    return v.can(Role.OPS) or row.origin == Origin.RECONCILER.value or row.created_by_id == v.user.id


def row_context(row: ScheduledAction, **extra) -> dict:
    v = viewer()
    context = dict(
        row=row, v=v, channel_name=channel_names(db.session, v.workspace.id).get(row.channel_id, "?"),
        reason=failure_reason(row) if row.status == Status.FAILED.value else None,
        can_cancel=may_cancel(v, row), post_link=post_url(row), message=None, message_kind="ok",
        editing=False, replacement=None,
        timeline=action_events(db.session, row.id) if row.attempt_count else None,
    )
    context.update(extra)
    return context


def render_row(row: ScheduledAction, *, status: int = 200, **extra):
    """The row partial for htmx, or the action's page for a plain browser request."""
    context = row_context(row, **extra)
    if is_htmx():
        return render_template("actions/_action_row.html", **context), status
    if status < 400 and request.method == "POST":
        if context["message"]:
            flash(context["message"])
        return redirect(_safe_next() or url_for("actions.detail", action_id=row.id), code=303)
    return render_detail(row, status=status, message=context["message"], message_kind=context["message_kind"])


def _safe_next() -> str | None:
    target = request.form.get("next") or ""
    return target if target.startswith("/") and not target.startswith("//") else None


def refuse(action_id: int, error: DomainError, *, editing: bool = False):
    """Re-render the row with the refusal on it; a 404 when the row is not ours to show."""
    v = viewer()
    row = db.session.scalar(
        select(ScheduledAction).where(ScheduledAction.id == action_id, ScheduledAction.workspace_id == v.workspace.id)
        .execution_options(populate_existing=True)
    )
    if row is None:
        abort(404, "There is no such action in this workspace.")
    return render_row(row, status=error.status, message=refusal_message(error, row, v), message_kind="error",
                      editing=editing)


def render_detail(row: ScheduledAction, *, status: int = 200, message: str | None = None, message_kind: str = "ok"):
    v = viewer()
    session = db.session
    events = action_events(session, row.id)
    parent = session.get(ScheduledAction, row.rescheduled_from_id) if row.rescheduled_from_id else None
    context = row_context(row, message=message, message_kind=message_kind)
    context.update(
        events=events, parent=parent, children=rescheduled_to(session, row.id),
        payload_text=json.dumps(row.payload, indent=2, ensure_ascii=False, sort_keys=True),
    )
    return render_page("actions/action_detail.html", **context), status


@bp.get("/actions/<int:action_id>")
@login_required
def detail(action_id: int):
    """An action's detail: timeline, lineage, payload, provider id."""
    v = viewer()
    return render_detail(get_action(db.session, v.workspace.id, action_id))


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
            found = get_action(session, v.workspace.id, action_id)
            if not may_cancel(v, found):
                raise Forbidden("You need the ops role to cancel an action you did not create.")
            was_already = found.status == Status.CANCELLED.value
            done = cancel_action(session, v.workspace.id, action_id, now=rt.now(), actor=v.actor)
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
    if not v.can(Role.OPS):
        return refuse(action_id, Forbidden("You need the ops role to reschedule."))
    return render_row(found, editing=True)


def parse_wall_time(form, zone: str, *, date_field: str = "date", time_field: str = "time"):
    """A date and a time typed in the workspace's zone, resolved to an instant (or a 422)."""
    raw_date, raw_time = (form.get(date_field) or "").strip(), (form.get(time_field) or "").strip()
    try:
        day = date.fromisoformat(raw_date)
    except ValueError:
        raise InvalidInput("Give a date like 2026-06-30.", field=date_field) from None
    try:
        at = time.fromisoformat(raw_time)
    except ValueError:
        raise InvalidInput("Give a time like 09:30.", field=time_field) from None
    try:
        return resolve_wall_time(day, at.replace(second=0, microsecond=0), zone)
    except InvalidTimezone as exc:
        raise InvalidInput(f"This workspace's time zone is not valid: {exc}", field="timezone") from None


@bp.post("/actions/<int:action_id>/reschedule")
@login_required
def reschedule(action_id: int):
    """Cancel the row and schedule its replacement at the new wall time."""
    v = viewer()
    rt = runtime()
    if not v.can(Role.OPS):
        return refuse(action_id, Forbidden("You need the ops role to reschedule."))
    try:
        resolved = parse_wall_time(request.form, v.zone)
        with write_session() as session:
            new = reschedule_action(session, v.workspace.id, action_id, resolved.instant, now=rt.now(),
                                    policy=rt.policy, actor=v.actor)
            old = session.get(ScheduledAction, action_id)
    except DomainError as error:
        return refuse(action_id, error, editing=isinstance(error, InvalidInput))
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
    if not v.can(Role.ADMIN):
        return refuse(action_id, Forbidden("You need the admin role to retry."))
    try:
        with write_session() as session:
            done = retry_action(session, v.workspace.id, action_id, now=rt.now(), policy=rt.policy, actor=v.actor)
    except DomainError as error:
        return refuse(action_id, error)
    rt.announce_due([done])
    return render_row(done, message=f"Retried: queued again, due now (attempt {done.attempt_count + 1} of "
                                    f"{rt.policy.max_attempts}).")


@bp.post("/actions/<int:action_id>/post-now")
@login_required
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
