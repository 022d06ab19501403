"""The dashboard's front door: sign-in, sign-out, the workspace switcher; and its blueprints."""

from flask import Blueprint, Flask, flash, make_response, redirect, render_template, request, session, url_for
from flask_login import current_user, login_required, login_user, logout_user
from sqlalchemy import func, select

from models.accounts.tables import User
from models.core.database import db
from models.core.errors import Forbidden
from webapp.auth import login_manager
from webapp.redirects import same_site_path
from models.core.runtime import runtime
from webapp.views.context import is_htmx, memberships_of, viewer

bp = Blueprint("pages", __name__)

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)


@bp.route("/login", methods=["GET", "POST"])
def login():
    """Sign in with email and password."""
    if request.method == "POST":
        email = (request.form.get("email") or "").strip().lower()[:254]
        user = db.session.scalar(select(User).where(func.lower(User.email) == email))
        if user is not None and user.is_active and user.check_password(request.form.get("password") or ""):
            # A fresh session on sign-in, so a session id planted before it is worth nothing.
            session.clear()
            login_user(user)
            return redirect(same_site_path(request.form.get("next")) or url_for("pages.index"), code=303)
        flash("That email and password do not match.", "error")
        return render_template("pages/login.html", email=email, next=same_site_path(request.form.get("next")) or ""), 401
    if current_user.is_authenticated:
        return redirect(url_for("pages.index"))
    return render_template("pages/login.html", email="", next=same_site_path(request.args.get("next")) or "")


@bp.post("/logout")
@login_required
def logout():
    """Sign out."""
    logout_user()
    session.clear()
    return redirect(url_for("pages.login"), code=303)


@bp.get("/")
@login_required
def index():
    """Marketers start on the calendar, everyone else on the queue."""
    v = viewer()
    return redirect(url_for("queue.queue" if v.can("ops") else "calendar.calendar"))


@bp.post("/workspace")
@login_required
def switch_workspace():
    """Look at another workspace this person belongs to."""
    raw = request.form.get("workspace_id", "")
    chosen = int(raw) if raw.isdecimal() else None
    if chosen is None or chosen not in {m.workspace_id for m in memberships_of(current_user.id)}:
        raise Forbidden("You are not a member of that workspace.")
    session["workspace_id"] = chosen
    response = make_response(redirect(url_for("pages.index"), code=303))
    if is_htmx():
        response = make_response("", 204)
        response.headers["HX-Redirect"] = url_for("pages.index")
    return response


@login_manager.unauthorized_handler
def _sign_in_first():
    """Not signed in: htmx is sent to the sign-in page whole; a browser is redirected to it."""
    back = same_site_path(request.full_path.rstrip("?")) if request.method == "GET" else None
    target = url_for("pages.login", next=back)
    if is_htmx():
        response = make_response("Your session has ended; sign in again.", 401)
        response.headers["HX-Redirect"] = target
        return response
    flash("Please sign in.", "info")
    return redirect(target)


def init_app(app: Flask) -> None:
    from webapp.views import (
        actions, alerts, calendar, campaigns, channels, contacts, drip_public, feeds, health, history, media, members,
        notifications, outbox, posts, queue, recurring, settings, works,
    )

    app.register_blueprint(bp)
    for module in (actions, calendar, campaigns, channels, contacts, drip_public, feeds, health, history, members,
                   outbox, posts, queue, recurring, settings, works, notifications, alerts, media):
        app.register_blueprint(module.bp)

    @app.context_processor
    def _viewer():
        """Templates see the viewer when someone is signed in and belongs to a workspace."""
        shared = {"viewer": None, "max_attempts": runtime().policy.max_attempts}
        if current_user.is_authenticated:
            try:
                shared["viewer"] = viewer()
            except Forbidden:
                pass
        return shared

    @app.after_request
    def _page_policy(response):
        """Pages run only our own scripts: a typed <script> could not run even if it slipped through."""
        if response.mimetype == "text/html":
            # One URL answers a page or a fragment by these headers: caches must keep them apart.
            response.vary.update(("HX-Request", "HX-History-Restore-Request"))
            response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
            response.headers.setdefault("X-Content-Type-Options", "nosniff")
            response.headers.setdefault("Referrer-Policy", "same-origin")
        return response
