"""Who is asking: sessions for people (Flask-Login), bearer tokens for the API."""

from dataclasses import dataclass
from datetime import timedelta

from flask import Flask, current_app, g, request, session
from flask_login import LoginManager, current_user

from models.accounts.sessions import find_live_session, needs_touch, touch_session
from models.accounts.permissions import can, refusal
from models.accounts.tables import Role, User, Workspace
from models.accounts.tables import ApiToken
from models.accounts.tokens import find_token, needs_touch as token_needs_touch, touch_token
from models.core.database import db, write_session
from models.core.runtime import runtime
from models.accounts.two_factor import lacks_required_two_factor
from models.core.errors import DomainError, Forbidden
from models.core.moves import Actor
from webapp.api_needs import permission_for

login_manager = LoginManager()
login_manager.login_view = "pages.login"
login_manager.login_message = "Please sign in."


class Unauthorized(DomainError):
    status = 401
    code = "unauthorized"


@dataclass(frozen=True)
class ApiCaller:
    user: User
    workspace: Workspace
    role: Role
    token_id: int

    @property
    def actor(self) -> Actor:
        return Actor(label=f"api:{self.user.email}", user_id=self.user.id)


SESSION_ID = "sid"  # the key of the session id in the signed cookie


def session_idle() -> timedelta:
    return timedelta(minutes=current_app.config["TICKWORK_SESSION_IDLE_MINUTES"])


@login_manager.user_loader
def _load_user(user_id: str):
    """The signed-in person, only while the cookie's session is live in the database (see models.accounts.sessions)."""
    if not user_id.isdecimal():
        return None
    now = runtime().now()
    live = find_live_session(db.session, session.get(SESSION_ID), now=now, idle=session_idle())
    if live is None or live.user_id != int(user_id):
        return None
    g.user_session_id = live.id
    if needs_touch(live, now):
        with write_session() as writer:
            touch_session(writer, live.id, now=now)
    user = db.session.get(User, int(user_id))
    return user if user is not None and user.is_active else None


TWO_FACTOR_NEEDED = ("This workspace requires two-factor sign-in for its admins: turn it on on your Account page "
                     "first (or switch to another workspace).")
# What an admin who lacks a required second factor may still reach: setting it up, and leaving.
REACHABLE_WITHOUT_TWO_FACTOR = ("pages.login", "pages.logout", "pages.two_factor", "pages.switch_workspace", "static")


def _admins_need_two_factor() -> None:
    """An admin of a workspace that requires two-factor sign-in, without it, may only set it up (or switch away)."""
    endpoint = request.endpoint or ""
    if (request.path.startswith("/api/") or endpoint in REACHABLE_WITHOUT_TWO_FACTOR
            or endpoint.startswith(("account.", "invitations.")) or not current_user.is_authenticated):
        return
    from webapp.public import PUBLIC_ROUTES
    from webapp.views.context import viewer

    if endpoint in PUBLIC_ROUTES:
        return
    try:
        v = viewer()
    except Forbidden:
        return
    if lacks_required_two_factor(v.user, v.workspace, v.role):
        raise Forbidden(TWO_FACTOR_NEEDED, code="two_factor_required")


def init_app(app: Flask) -> None:
    login_manager.init_app(app)
    app.before_request(_admins_need_two_factor)


def bearer_credentials() -> str | None:
    """The token of ``Authorization: Bearer <token>``: the scheme in any case, spaces around either part
    (RFC 9110 ``credentials``); None when the header says something else or nothing."""
    parts = request.headers.get("Authorization", "").split()
    if len(parts) != 2 or parts[0].lower() != "bearer":
        return None
    return parts[1]


def bearer_token() -> ApiToken | None:
    """The live token this request carries, looked up once per request (the rate limit and the view share it)."""
    if "bearer_token" not in g:
        raw = bearer_credentials()
        g.bearer_token = None if raw is None else find_token(db.session, raw, now=runtime().now())
    return g.bearer_token


def api_caller() -> ApiCaller:
    """The caller of this API request, from its bearer token; 401 when there is none."""
    if "api_caller" in g:
        return g.api_caller
    if bearer_credentials() is None:
        raise Unauthorized("send Authorization: Bearer <token>")
    token = bearer_token()
    if token is None:
        raise Unauthorized("this token is not valid: unknown, revoked or expired")
    from models.accounts.members import membership_role

    role = membership_role(db.session, token.user_id, token.workspace_id)
    if role is None:
        raise Unauthorized("this token's user is no longer a member of its workspace")
    needed = permission_for(request.method, request.endpoint)
    if not can(role, needed):
        raise Forbidden(refusal(needed, "do this"), code="forbidden")
    now = runtime().now()
    if token_needs_touch(token, now):
        with write_session() as writer:
            touch_token(writer, token.id, now=now)
    g.api_caller = ApiCaller(user=token.user, workspace=token.workspace, role=role, token_id=token.id)
    return g.api_caller
