"""Members (admin): who belongs to the workspace, with which role, and who is invited.

Adding someone makes an invitation (``models.accounts.invitations``): the answer is the same
whether or not the email has an account here, and the person joins only by accepting.
"""

from flask import Blueprint, flash, redirect, request, url_for

from models.accounts.permissions import Permission
from models.accounts.tables import Role
from models.core.database import db, write_session
from models.core.errors import DomainError
from models.accounts import invitations
from models.accounts.members import change_role, list_members, remove_member
from models.core.runtime import runtime
from webapp.views.context import render_page, require, viewer

bp = Blueprint("members", __name__)


def _page(*, error: DomainError | None = None, status: int = 200):
    v = viewer()
    typed = request.form if request.method == "POST" and error else {}
    from webapp.views.invitations import invitation_link

    pending = invitations.pending_in_workspace(db.session, v.workspace.id, now=runtime().now())
    return render_page("members/members.html", v=v, members=list_members(db.session, v.workspace.id), error=error,
                       roles=[r.value for r in Role], typed=typed, pending=pending, link=invitation_link), status


@bp.get("/members")
@require(Permission.ADMINISTER)
def index():
    """The workspace's members and their roles."""
    return _page()


def _change(operation, done: str):
    try:
        with write_session() as session:
            result = operation(session)
    except DomainError as error:
        return _page(error=error, status=error.status)
    flash(done.format(result=result), "ok")
    return redirect(url_for("members.index"), code=303)


@bp.post("/members")
@require(Permission.ADMINISTER)
def add():
    """Invite a person to the workspace; they join when they accept (the same answer whoever they are)."""
    v = viewer()
    form = request.form

    def operation(session):
        invitation = invitations.invite(session, v.workspace.id, email=form.get("email", ""), role=form.get("role", ""),
                                        password=form.get("password") or None, invited_by=v.user.id,
                                        now=runtime().now())
        return f"{invitation.email} as {invitation.role}"

    return _change(operation, "Invitation made for {result}. They join when they accept it: signed in, they find it "
                              "on their Account page, or pass on its link from the list of invitations.")


@bp.post("/members/invitations/<int:invitation_id>/revoke")
@require(Permission.ADMINISTER)
def revoke_invitation(invitation_id: int):
    """Withdraw a pending invitation: its link and its offer stop working."""
    v = viewer()
    return _change(lambda session: invitations.revoke(session, v.workspace.id, invitation_id,
                                                      now=runtime().now()).email,
                   "Invitation for {result} withdrawn.")


@bp.post("/members/<int:membership_id>/role")
@require(Permission.ADMINISTER)
def role(membership_id: int):
    """Give a member another role."""
    v = viewer()
    def operation(session):
        membership = change_role(session, v.workspace.id, membership_id, request.form.get("role", ""))
        return f"{membership.user.email} is now {membership.role}"

    return _change(operation, "Role changed: {result}.")


@bp.post("/members/<int:membership_id>/remove")
@require(Permission.ADMINISTER)
def remove(membership_id: int):
    """Take a person out of the workspace."""
    v = viewer()
    return _change(lambda session: remove_member(session, v.workspace.id, membership_id, now=runtime().now()),
                   "{result} removed.")
