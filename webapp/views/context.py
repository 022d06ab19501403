"""Who is looking, in which workspace, with which role; and whether htmx asked.

Every dashboard view starts from :func:`viewer`. Roles are checked here, on the server,
for every request: a hidden button is a courtesy, never the protection.
"""

from dataclasses import dataclass
from datetime import datetime
from functools import wraps

from flask import g, request, session
from flask_login import current_user, login_required
from sqlalchemy import select

from models.accounts.permissions import Permission, can, refusal
from models.accounts.tables import Membership, Role, User, Workspace
from models.core.database import db
from models.core.errors import Forbidden
from models.core.moves import Actor
from models.timing.wall_time import is_known_zone, to_local


class NoWorkspace(Forbidden):
    """The signed-in person belongs to no workspace."""


@dataclass(frozen=True)
class Viewer:
    """The signed-in person, the workspace they are looking at, and their role in it."""

    user: User
    workspace: Workspace
    role: Role
    memberships: tuple[Membership, ...]

    @property
    def actor(self) -> Actor:
        return Actor.person(self.user)

    @property
    def zone(self) -> str:
        """The zone pages read and show times in: the workspace's, or UTC while the stored one is garbage."""
        return "UTC" if self.zone_problem else self.workspace.timezone

    @property
    def zone_problem(self) -> str | None:
        """The stored zone when it is no zone at all (written around the checks), for the page's banner."""
        return None if is_known_zone(self.workspace.timezone) else str(self.workspace.timezone)

    def can(self, needed: Permission | str) -> bool:
        """Whether this member holds the permission (templates name it: ``v.can('operate')``)."""
        return can(self.role, Permission(needed))

    def local(self, instant: datetime | None) -> datetime | None:
        return None if instant is None else to_local(instant, self.zone)


def is_htmx() -> bool:
    """True when htmx sent this request and wants a fragment, not a page.

    Going back or forward, htmx 4 asks for the page it restores with
    ``HX-History-Restore-Request: true`` and needs the whole page, not a fragment.
    """
    return (request.headers.get("HX-Request") == "true"
            and request.headers.get("HX-History-Restore-Request") != "true")


def render_page(template: str, **context) -> str:
    """The whole page, or for htmx only its ``content`` block (the page minus header and nav)."""
    if is_htmx():
        from jinja2_fragments.flask import render_block

        return render_block(template, "content", **context)
    from flask import render_template

    return render_template(template, **context)


def memberships_of(user_id: int) -> list[Membership]:
    return list(db.session.scalars(
        select(Membership).where(Membership.user_id == user_id).order_by(Membership.workspace_id)
    ))


def viewer() -> Viewer:
    """The current viewer; the chosen workspace if they still belong to it, else their first."""
    if "viewer" in g:
        return g.viewer
    memberships = memberships_of(current_user.id)
    if not memberships:
        raise NoWorkspace("You are not a member of any workspace yet; ask an admin to add you.")
    chosen = session.get("workspace_id")
    membership = next((m for m in memberships if m.workspace_id == chosen), memberships[0])
    g.viewer = Viewer(user=current_user._get_current_object(), workspace=membership.workspace,
                      role=Role(membership.role), memberships=tuple(memberships))
    return g.viewer


def require(needed: Permission):
    """Decorator: a signed-in member whose role holds ``needed`` in the current workspace."""

    def decorate(view):
        @wraps(view)
        @login_required
        def wrapper(*args, **kwargs):
            if not viewer().can(needed):
                raise Forbidden(refusal(needed, "do this"), code="forbidden")
            return view(*args, **kwargs)

        wrapper.required_permission = needed
        return wrapper

    return decorate
