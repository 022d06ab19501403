"""Notifications on the dashboard: the bell's count on every page, the inbox, and (admins) where they are sent."""

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask_login import current_user
from sqlalchemy import select

from jobs.works import works_context
from models.accounts.permissions import Permission
from models.channels.tables import Channel
from models.core.database import db, write_session
from models.core.errors import DomainError, Forbidden
from models.notifications.inbox import inbox, mark_read, notification_settings, unread_count
from models.works.access import check_may_set_notifications
from models.works.notify import save_notification_settings
from webapp.views.context import is_htmx, render_page, require, viewer

bp = Blueprint("notifications", __name__)


@bp.app_context_processor
def _bell():
    """Every page's header shows the viewer's unread notifications."""
    if not current_user.is_authenticated:
        return {"unread_notifications": None}
    try:
        v = viewer()
    except Forbidden:
        return {"unread_notifications": None}
    return {"unread_notifications": unread_count(db.session, v.workspace.id, v.user.id)}


def _settings_view(*, error: DomainError | None = None, typed=None) -> dict:
    v = viewer()
    settings = notification_settings(db.session, v.workspace.id)
    channels = list(db.session.scalars(select(Channel).where(Channel.workspace_id == v.workspace.id)
                                       .order_by(Channel.name)))
    chosen = next((c.name for c in channels if settings and c.id == settings.channel_id), "")
    values = {"channel": typed.get("channel", "") if typed else chosen,
              "recipient": typed.get("recipient", "") if typed else (settings.recipient if settings else "") or ""}
    return dict(channels=channels, values=values, settings_error=error, is_admin=v.can(Permission.ADMINISTER))


@bp.get("/notifications")
@require(Permission.READ)
def index():
    """The workspace's notifications, newest first, unread ones marked."""
    v = viewer()
    return render_page("notifications/inbox.html", v=v, items=inbox(db.session, v.workspace.id, v.user.id),
                       **_settings_view())


@bp.post("/notifications/read")
@require(Permission.OWN_ACCOUNT)
def read():
    """Mark one notification (``id``) or all of them read, for the viewer."""
    v = viewer()
    raw = request.form.get("id", "")
    with write_session() as session:
        mark_read(session, v.workspace.id, v.user.id, now=works_context().clock.now(),
                  notification_id=int(raw) if raw.isdecimal() and len(raw) < 10 else None)
    if is_htmx():
        db.session.rollback()  # end the read snapshot taken before the write
        return render_template("notifications/_inbox.html", v=v, items=inbox(db.session, v.workspace.id, v.user.id))
    return redirect(url_for("notifications.index"), code=303)


@bp.get("/notifications/settings")
@require(Permission.READ)
def settings_page():
    """Where notifications are also sent: the notifications page, opened at its settings."""
    return redirect(url_for("notifications.index", _anchor="notification-settings"), code=303)


@bp.post("/notifications/settings")
@require(Permission.ADMINISTER)
def settings():
    """Send the workspace's notifications through one of its channels, to one recipient (or nowhere)."""
    v = viewer()
    try:
        check_may_set_notifications(v.role)
        with write_session() as session:
            save_notification_settings(session, v.workspace.id, channel=request.form.get("channel"),
                                       recipient=request.form.get("recipient"), now=works_context().clock.now())
    except DomainError as error:
        return render_page("notifications/inbox.html", v=v, items=inbox(db.session, v.workspace.id, v.user.id),
                           **_settings_view(error=error, typed=request.form)), error.status
    flash("Notification settings saved.")
    return redirect(url_for("notifications.index"), code=303)
