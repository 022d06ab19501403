"""A workspace's settings: its time zone, with a preview of what a change moves before it is made.

The change itself is :func:`models.accounts.workspaces.change_workspace_zone` (the one the
``tickwork workspace set-timezone`` command runs): in one transaction the new zone is written
and every wing moves what follows it. The preview runs the same change and undoes it.
"""

from datetime import datetime, time, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo, available_timezones

from flask import Blueprint, flash, redirect, request, url_for

from models.accounts.permissions import Permission
from models.accounts.workspaces import change_workspace_zone, preview_zone_change
from models.core.database import write_session
from models.core.errors import DomainError, InvalidInput
from models.core.runtime import runtime
from models.timing.wall_time import InvalidTimezone, resolve_wall_time
from webapp.views.context import render_page, require, viewer

bp = Blueprint("settings", __name__)

MAX_ZONE = 64


@lru_cache(maxsize=1)
def available_zones() -> list[str]:
    """The IANA zones this system knows, for the form's suggestions."""
    return sorted(zone for zone in available_timezones() if "/" in zone and not zone.startswith(("Etc/", "SystemV/")))


def zone_choices(now: datetime) -> list[tuple[str, str]]:
    """Every zone with what a person searches by: its region and its offset now ("Europe · UTC+01:00"),
    in region order, for the zone fields' list (settings, contacts)."""
    choices = []
    for name in available_zones():
        offset = now.astimezone(ZoneInfo(name)).utcoffset() or timedelta(0)
        minutes = int(offset.total_seconds() // 60)
        sign = "+" if minutes >= 0 else "−"
        label = f"{name.split('/', 1)[0]} · UTC{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
        choices.append((name, label))
    return choices


def _sample(zone_from: str, zone_to: str, now: datetime) -> dict | None:
    """What tomorrow's 09:00 is in UTC before and after: wall times stay, instants move."""
    try:
        day = (now + timedelta(days=1)).date()
        return {"wall": f"{day:%a %d %b} 09:00", "before": resolve_wall_time(day, time(9, 0), zone_from).instant,
                "after": resolve_wall_time(day, time(9, 0), zone_to).instant}
    except InvalidTimezone:
        return None


def render_settings(*, zone: str = "", preview: dict | None = None, error: DomainError | None = None,
                    status: int = 200):
    v = viewer()
    sample = _sample(v.zone, preview["to"], runtime().now()) if preview else None
    return render_page("settings/settings.html", v=v, zone=zone, preview=preview, sample=sample, error=error,
                       zones=zone_choices(runtime().now())), status


def _typed_zone() -> str:
    zone = (request.form.get("zone") or "").strip()
    if not zone or len(zone) > MAX_ZONE or "\x00" in zone:
        raise InvalidInput("Give an IANA time zone, such as Europe/London.", field="zone", code="bad_zone")
    return zone


@bp.get("/settings")
@require(Permission.ADMINISTER)
def settings():
    """The workspace's settings: its time zone."""
    return render_settings()


@bp.post("/settings/two-factor")
@require(Permission.ADMINISTER)
def two_factor():
    """Require (or stop requiring) two-factor sign-in of this workspace's admins."""
    from models.accounts.two_factor import set_admins_need_two_factor

    v = viewer()
    required = request.form.get("required") == "1"
    try:
        with write_session() as session:
            set_admins_need_two_factor(session, v.workspace.id, required, by=v.user)
    except DomainError as error:
        return render_settings(error=error, status=error.status)
    flash("Admins of this workspace now sign in with two-factor." if required
          else "Admins of this workspace may sign in with a password alone.", "ok")
    return redirect(url_for("settings.settings"), code=303)


@bp.post("/settings/review")
@require(Permission.ADMINISTER)
def review():
    """Require review of posts (or not), and let authors make review links for outside approvers (or not)."""
    from models.accounts.workspaces import set_review_settings

    v = viewer()
    try:
        with write_session() as session:
            set_review_settings(session, v.workspace.id, review=(request.form.get("review") or "").strip(),
                                outside_approval=request.form.get("outside_approval") == "1")
    except DomainError as error:
        return render_settings(error=error, status=error.status)
    flash("Posts now go through review before they are approved." if request.form.get("review") == "required"
          else "Posts are approved without a review step.", "ok")
    return redirect(url_for("settings.settings"), code=303)


@bp.post("/settings/timezone")
@require(Permission.ADMINISTER)
def timezone():
    """Preview what a new zone moves (``intent=preview``), or make the change."""
    v = viewer()
    rt = runtime()
    typed = (request.form.get("zone") or "")[:MAX_ZONE]
    try:
        zone = _typed_zone()
        with write_session() as session:
            if request.form.get("intent") != "change":
                moved = preview_zone_change(session, v.workspace.id, zone, hooks=rt.hooks, now=rt.now(),
                                            actor=v.actor, policy=rt.policy)
                return render_settings(zone=zone, preview=moved)
            moved = change_workspace_zone(session, v.workspace.id, zone, hooks=rt.hooks, now=rt.now(),
                                          actor=v.actor, policy=rt.policy)
    except DomainError as error:
        return render_settings(zone=typed, error=error, status=error.status)
    parts = [f"{wing}: " + ", ".join(f"{n} {key.replace('_', ' ')}" for key, n in counts.items())
             for wing, counts in moved.items() if isinstance(counts, dict)]
    flash(f"The workspace's zone is now {moved['to']} (was {moved['from']}). " + "; ".join(parts))
    return redirect(url_for("settings.settings"), code=303)
