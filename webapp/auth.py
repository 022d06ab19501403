"""Who is asking: sessions for people (Flask-Login), bearer tokens for the API."""

from dataclasses import dataclass

from flask import Flask, g, request
from flask_login import LoginManager

from models.accounts.tables import Role, User, Workspace
from models.accounts.tokens import find_token
from models.core.database import db
from models.core.errors import DomainError
from models.core.moves import Actor

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


@login_manager.user_loader
def _load_user(user_id: str):
    if not user_id.isdecimal():
        return None
    user = db.session.get(User, int(user_id))
    return user if user is not None and user.is_active else None


def init_app(app: Flask) -> None:
    login_manager.init_app(app)


def api_caller() -> ApiCaller:
    """The caller of this API request, from its bearer token; 401 when there is none."""
    if "api_caller" in g:
        return g.api_caller
    header = request.headers.get("Authorization", "")
    scheme, _, raw = header.partition(" ")
    if scheme.lower() != "bearer" or not raw.strip():
        raise Unauthorized("send Authorization: Bearer <token>")
    token = find_token(db.session, raw.strip())
    if token is None:
        raise Unauthorized("this token is not valid")
    from models.accounts.members import membership_role

    role = membership_role(db.session, token.user_id, token.workspace_id)
    if role is None:
        raise Unauthorized("this token's user is no longer a member of its workspace")
    g.api_caller = ApiCaller(user=token.user, workspace=token.workspace, role=role, token_id=token.id)
    return g.api_caller
