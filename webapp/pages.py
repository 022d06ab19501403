"""The human-facing pages: sign-in and the workspace's actions."""

from flask import Blueprint, Flask, flash, redirect, render_template, request, session, url_for
from flask_login import current_user, login_required, login_user, logout_user
from sqlalchemy import func, select

from models.accounts import Membership, User, Workspace
from models.actions import ScheduledAction
from models.channels import Channel
from models.database import db
from models.scheduling import list_actions
from models.wall_time import to_local
from webapp.runtime import runtime

bp = Blueprint("pages", __name__)


def current_workspace() -> Workspace | None:
    """The workspace the signed-in person is looking at (their first, unless they switched)."""
    memberships = db.session.scalars(
        select(Membership).where(Membership.user_id == current_user.id).order_by(Membership.workspace_id)
    ).all()
    chosen = session.get("workspace_id")
    for membership in memberships:
        if membership.workspace_id == chosen:
            return membership.workspace
    return memberships[0].workspace if memberships else None


@bp.route("/login", methods=["GET", "POST"])
def login():
    """Sign in with email and password."""
    if request.method == "POST":
        email = (request.form.get("email") or "").strip().lower()
        user = db.session.scalar(select(User).where(func.lower(User.email) == email))
        if user is not None and user.is_active and user.check_password(request.form.get("password") or ""):
            login_user(user)
            return redirect(url_for("pages.index"))
        flash("That email and password do not match.")
        return render_template("login.html", email=email), 401
    return render_template("login.html", email="")


@bp.post("/logout")
@login_required
def logout():
    """Sign out."""
    logout_user()
    return redirect(url_for("pages.login"))


@bp.get("/")
@login_required
def index():
    """The workspace's actions in (publish_at, id) order."""
    workspace = current_workspace()
    if workspace is None:
        return render_template("error.html", status=403, message="You are not a member of any workspace."), 403
    rows = list_actions(db.session, workspace.id, start=runtime().now().replace(hour=0, minute=0, second=0),
                        limit=200)
    channels = {c.id: c.name for c in db.session.scalars(select(Channel).where(Channel.workspace_id == workspace.id))}
    counts = dict(db.session.execute(
        select(ScheduledAction.status, func.count()).where(ScheduledAction.workspace_id == workspace.id)
        .group_by(ScheduledAction.status)
    ).all())
    return render_template("actions.html", workspace=workspace, rows=rows, channels=channels, counts=counts,
                           local=lambda at: to_local(at, workspace.timezone))


def init_app(app: Flask) -> None:
    app.register_blueprint(bp)
