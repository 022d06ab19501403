"""The dashboard's front door: sign-in, sign-out, the workspace switcher; and its blueprints."""

from flask import Blueprint, Flask, flash, make_response, redirect, render_template, request, session, url_for
from flask_login import current_user, login_required, login_user, logout_user
from sqlalchemy import func, select

from models.accounts.permissions import Permission
from models.accounts.sessions import end_session, start_session
from models.accounts.two_factor import check_second_factor
from models.accounts.tables import User, spend_a_password_check
from models.core.database import db, write_session
from models.core.errors import Forbidden
from webapp.auth import SESSION_ID, login_manager
from webapp.limits import remember_device
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
        password = request.form.get("password") or ""
        if user is None or not user.is_active:
            spend_a_password_check(password)  # as long as a wrong password: timing tells no one who has an account
        elif user.check_password(password):
            back = same_site_path(request.form.get("next")) or url_for("pages.index")
            if user.totp_enabled_at is not None:
                # The password was right; the second factor decides. Nothing is signed in until it does.
                session.clear()
                session[TWO_FACTOR_PENDING] = {"u": user.id, "e": email, "at": runtime().now().timestamp(),
                                               "next": back}
                return redirect(url_for("pages.two_factor"), code=303)
            return _signed_in(user, email, back)
        flash("That email and password do not match.", "error")
        return render_template("pages/login.html", email=email, next=same_site_path(request.form.get("next")) or ""), 401
    if current_user.is_authenticated:
        return redirect(url_for("pages.index"))
    return render_template("pages/login.html", email="", next=same_site_path(request.args.get("next")) or "")


TWO_FACTOR_PENDING = "two_factor"
TWO_FACTOR_SECONDS = 300  # how long the code may take after the password
WRONG_CODE = "That code does not match. Type the six digits your app shows now, or one of your recovery codes."


def _signed_in(user: User, email: str, back: str):
    # A fresh session on sign-in, so a session id planted before it is worth nothing.
    sign_in(user)
    response = redirect(back, code=303)
    remember_device(response, email)
    return response


def _pending_two_factor() -> dict | None:
    """The sign-in waiting for its second factor in this browser (a password given < 5 minutes ago), or None."""
    pending = session.get(TWO_FACTOR_PENDING)
    if not isinstance(pending, dict) or not isinstance(pending.get("u"), int):
        return None
    if not isinstance(pending.get("at"), (int, float)) or runtime().now().timestamp() - pending["at"] > TWO_FACTOR_SECONDS:
        return None
    return pending


@bp.route("/login/two-factor", methods=["GET", "POST"])
def two_factor():
    """The second step of signing in, for a person with two-factor on: a code from their app or a recovery code."""
    pending = _pending_two_factor()
    if pending is None:
        # Nothing waits for a code here: sign in first (a 302, as for any page that needs a session).
        return redirect(url_for("pages.index" if current_user.is_authenticated else "pages.login"))
    if request.method == "GET":
        return render_template("pages/two_factor.html")
    user = db.session.get(User, pending["u"])
    if user is None or not user.is_active:
        session.pop(TWO_FACTOR_PENDING, None)
        return redirect(url_for("pages.login"), code=303)
    with write_session() as writer:
        passed = check_second_factor(writer, user.id, request.form.get("code") or "", box=runtime().secret_box,
                                     now=runtime().now())
    if not passed:
        flash(WRONG_CODE, "error")
        return render_template("pages/two_factor.html"), 401
    return _signed_in(user, pending.get("e") or user.email, same_site_path(pending.get("next")) or url_for("pages.index"))


def sign_in(user: User) -> None:
    """Start a session for ``user`` in this browser: a new row in the database, its id in a fresh cookie.

    A session this browser had before (another person's, say) ends: its cookie is replaced, and a
    copy of it must open nothing either.
    """
    replaced = session.get(SESSION_ID)
    session.clear()
    with write_session() as writer:
        if replaced:
            end_session(writer, replaced, now=runtime().now(), why="replaced")
        raw = start_session(writer, user.id, now=runtime().now(), user_agent=request.headers.get("User-Agent"))
    login_user(user)
    session[SESSION_ID] = raw


def sign_out(why: str = "signed_out") -> None:
    """End this browser's session for good (a saved copy of its cookie opens nothing after this)."""
    raw = session.get(SESSION_ID)
    if raw:
        with write_session() as writer:
            end_session(writer, raw, now=runtime().now(), why=why)
    logout_user()
    session.clear()


@bp.post("/logout")
@login_required
def logout():
    """Sign out: this browser's session ends in the database, not only in its cookie."""
    sign_out()
    return redirect(url_for("pages.login"), code=303)


@bp.get("/")
@login_required
def index():
    """Marketers start on the calendar, everyone else on the queue; a member of no workspace on their account."""
    try:
        v = viewer()
    except Forbidden:
        return redirect(url_for("account.index"))
    return redirect(url_for("queue.queue" if v.can(Permission.OPERATE) else "calendar.calendar"))


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
        account, actions, alerts, calendar, campaigns, channels, contacts, drip_public, feeds, health, history,
        invitations, media, members, notifications, outbox, post_list, post_review, posts, queue, recurring, settings,
        works,
    )

    app.register_blueprint(bp)
    for module in (account, actions, calendar, campaigns, channels, contacts, drip_public, feeds, health, history,
                   invitations, members, outbox, posts, queue, recurring, settings, works, notifications, alerts,
                   media, post_review, post_list):
        app.register_blueprint(module.bp)
    app.register_blueprint(post_review.public)

    @app.context_processor
    def _viewer():
        """Templates see the viewer when someone is signed in and belongs to a workspace."""
        shared = {"viewer": None, "max_attempts": runtime().policy.max_attempts,
                  # How often the queue, failures and health pages refresh themselves (tests shorten it).
                  "refresh_seconds": app.config.get("DASHBOARD_REFRESH_SECONDS", 15)}
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
