"""Alerts on the dashboard: the list, each alert's page (acknowledge, silence), where they go, the rules' settings,
and each member's choice of what they receive at once."""

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask_login import current_user
from sqlalchemy import select

from models.accounts.permissions import Permission
from models.accounts.tables import User
from models.alerts import operations
from models.alerts.delivery import destinations
from models.alerts.evaluation import Settings
from models.alerts.rules import INSTANCE_RULES, RULES, WORKSPACE_RULES
from models.alerts.tables import AlertPreference
from models.channels.tables import Channel
from models.core.database import db, write_session
from models.core.errors import DomainError, Forbidden, InvalidInput
from models.core.runtime import runtime
from webapp.views.context import is_htmx, render_page, require, viewer

bp = Blueprint("alerts", __name__)


@bp.app_context_processor
def _firing():
    """Every page's header shows how many alerts the viewer's workspace has firing (its own and the instance's)."""
    if not current_user.is_authenticated:
        return {"firing_alerts": None}
    try:
        v = viewer()
    except Forbidden:
        return {"firing_alerts": None}
    return {"firing_alerts": operations.open_count(db.session, v.workspace.id)}


# A rule's window and cooldown are typed as a number and a unit ("15 minutes", "2 hours"); the rules keep seconds.
DURATION_UNITS = {"seconds": 1, "minutes": 60, "hours": 3600, "days": 86400}


def duration_parts(seconds: float | None) -> tuple[str, str]:
    """A number of seconds as the largest unit that counts it whole: 7200 → ("2", "hours"); None → ("", "minutes")."""
    if seconds is None:
        return "", "minutes"
    whole = int(seconds)
    for unit, size in reversed(DURATION_UNITS.items()):
        if whole and whole % size == 0:
            return str(whole // size), unit
    return str(whole), "seconds"


def duration_words(seconds: float | None) -> str:
    """A window or cooldown in words: "15 minutes", "1 hour", "—" for none."""
    number, unit = duration_parts(seconds)
    if not number:
        return "—"
    return f"{number} {unit[:-1] if number == '1' else unit}"


def _typed_seconds(name: str) -> str | None:
    """The seconds a number and its unit say, as the rule's check reads them; a bare number is seconds."""
    typed, unit = request.form.get(name), request.form.get(f"{name}_unit")
    if typed is None or unit is None or not typed.strip():
        return typed
    if unit not in DURATION_UNITS:
        raise InvalidInput(f"the {name} is counted in seconds, minutes, hours or days", field=name)
    number = typed.strip()
    if not (number.isascii() and number.isdigit()) or len(number) > 9:  # "²" is a digit to isdigit, not to int
        raise InvalidInput(f"the {name} is a whole number of {unit}, like 15", field=name)
    return str(int(number) * DURATION_UNITS[unit])


def _index_context(error: DomainError | None = None) -> dict:
    v = viewer()
    session = db.session
    settings = Settings(session, runtime_rules())
    preferences = {row.rule: row.delivery for row in session.scalars(select(AlertPreference).where(
        AlertPreference.workspace_id == v.workspace.id, AlertPreference.user_id == v.user.id))}
    return dict(
        v=v, alerts=operations.list_alerts(session, v.workspace.id), rules=RULES, error=error,
        workspace_rules=[(name, settings(name, v.workspace.id)) for name in WORKSPACE_RULES],
        instance_rules=[(name, settings(name, None)) for name in INSTANCE_RULES],
        destinations=destinations(session, v.workspace.id),
        channels=list(session.scalars(select(Channel).where(Channel.workspace_id == v.workspace.id)
                                      .order_by(Channel.name))),
        preferences=preferences, duration_parts=duration_parts, duration_words=duration_words,
        duration_units=DURATION_UNITS,
    )


def runtime_rules():
    from flask import current_app

    return current_app.config["TICKWORK_ALERT_RULES"]


@bp.get("/alerts")
@require(Permission.READ)
def index():
    """The workspace's alerts and the instance's, open ones first; destinations, rule settings, my choices."""
    return render_page("alerts/index.html", **_index_context())


def _alert_context(alert_id: int, error: DomainError | None = None) -> dict:
    v = viewer()
    alert = operations.get_alert(db.session, v.workspace.id, alert_id)
    people = {user.id: user.email for user in db.session.scalars(select(User).where(
        User.id.in_([i for i in (alert.acknowledged_by_id, alert.silenced_by_id) if i is not None])))}
    return dict(v=v, alert=alert, rule=RULES[alert.rule], people=people, error=error,
                figures={k: val for k, val in (alert.figures or {}).items()
                         if k not in ("title", "top_reasons", "action_ids")})


@bp.get("/alerts/<int:alert_id>")
@require(Permission.READ)
def show(alert_id: int):
    """One alert: when it fired, its figures, what it concerns, who acknowledged or silenced it."""
    return render_page("alerts/alert.html", **_alert_context(alert_id))


def _alert_move(alert_id: int, move, done: str):
    v = viewer()
    try:
        with write_session() as session:
            move(session, v)
    except DomainError as error:
        db.session.rollback()
        context = _alert_context(alert_id, error=error)
        if is_htmx():
            return render_template("alerts/_state.html", **context), error.status
        return render_page("alerts/alert.html", **context), error.status
    db.session.rollback()
    if is_htmx():
        return render_template("alerts/_state.html", **_alert_context(alert_id))
    flash(done)
    return redirect(url_for("alerts.show", alert_id=alert_id), code=303)


@bp.post("/alerts/<int:alert_id>/acknowledge")
@require(Permission.OPERATE)
def acknowledge(alert_id: int):
    """Acknowledge a firing alert: nothing more is sent until it resolves."""
    return _alert_move(alert_id, lambda session, v: operations.acknowledge_alert(
        session, v.workspace.id, alert_id, user_id=v.user.id, now=runtime().now()), "Acknowledged.")


@bp.post("/alerts/<int:alert_id>/silence")
@require(Permission.OPERATE)
def silence(alert_id: int):
    """Send no reminder about an open alert for the hours given."""
    return _alert_move(alert_id, lambda session, v: operations.silence_alert(
        session, v.workspace.id, alert_id, hours=request.form.get("hours", ""), user_id=v.user.id,
        now=runtime().now()), "Silenced.")


def _index_write(write, done: str):
    v = viewer()
    try:
        with write_session() as session:
            write(session, v)
    except DomainError as error:
        db.session.rollback()
        return render_page("alerts/index.html", **_index_context(error)), error.status
    flash(done)
    return redirect(url_for("alerts.index"), code=303)


@bp.post("/alerts/destinations")
@require(Permission.ADMINISTER)
def add_destination():
    """Send the workspace's alerts through one of its channels to a recipient too (optionally a member)."""
    return _index_write(lambda session, v: operations.add_destination(
        session, v.workspace.id, channel=request.form.get("channel", ""), recipient=request.form.get("recipient", ""),
        member=request.form.get("member"), now=runtime().now()), "Alerts will also go there.")


@bp.post("/alerts/destinations/<int:destination_id>/remove")
@require(Permission.ADMINISTER)
def remove_destination(destination_id: int):
    """Stop sending the workspace's alerts to one destination."""
    return _index_write(lambda session, v: operations.remove_destination(session, v.workspace.id, destination_id),
                        "Destination removed.")


@bp.post("/alerts/rules")
@require(Permission.ADMINISTER)
def save_rule():
    """Set one workspace rule's threshold, window, cooldown, or turn it off."""
    return _index_write(lambda session, v: operations.save_rule_setting(
        session, v.workspace.id, request.form.get("rule", ""), values={
            "threshold": request.form.get("threshold"), "window": _typed_seconds("window"),
            "cooldown": _typed_seconds("cooldown"), "enabled": request.form.get("enabled", "0")},
        now=runtime().now()), "Rule saved.")


@bp.post("/alerts/preferences")
@require(Permission.OWN_ACCOUNT)
def save_preferences():
    """The viewer's own choice, per rule: each alert at once, or only in the daily digest."""
    def write(session, v):
        for name in RULES:
            chosen = request.form.get(f"delivery-{name}")
            if chosen is not None:
                operations.set_preference(session, v.workspace.id, v.user.id, name, chosen, now=runtime().now())

    return _index_write(write, "Your choices are saved.")

