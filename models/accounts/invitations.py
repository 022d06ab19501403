"""Invitations: an admin asks a person to join a workspace; they join only by accepting.

The admin's answer is the same whether or not the email has an account on this Tickwork (and
takes the same time): an invitation is made either way. An initial password, when given,
makes the account of an email that has none, so a newcomer can sign in and accept; an
existing account's password is never touched. The invited person sees their pending
invitations on their Account page (and through the signed link the admin may pass on), and
accepts or declines there, signed in as that email. Lifecycle:

| from    | to         | by                              |
|---------|------------|---------------------------------|
| pending | accepted   | the invited person (a membership with the role is made) |
| pending | declined   | the invited person              |
| pending | revoked    | an admin of the workspace       |
| pending | (expired)  | time: ``expires_at`` passes      |
"""

from datetime import datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from models.accounts.members import EMAIL, _role
from models.accounts.tables import Invitation, Membership, User, spend_a_password_hash
from models.core.errors import Conflict, InvalidInput, NotFound

INVITATION_DAYS = 7


def _user_by_email(session: Session, email: str) -> User | None:
    return session.scalar(select(User).where(func.lower(User.email) == email))


def invite(session: Session, workspace_id: int, *, email: str, role: str, password: str | None, invited_by: int | None,
           now: datetime) -> Invitation:
    """Invite ``email`` to the workspace with ``role``; inviting again renews the pending invitation."""
    email = (email or "").strip().lower()
    if not EMAIL.match(email):
        raise InvalidInput("give an email address like name@example.com", field="email")
    chosen = _role(role)
    if password and (not isinstance(password, str) or len(password) < 8):
        raise InvalidInput("a password has at least 8 characters", field="password")
    user = _user_by_email(session, email)
    if user is not None and session.scalar(select(Membership.id).where(Membership.user_id == user.id,
                                                                       Membership.workspace_id == workspace_id)):
        raise Conflict(f"{email} is already a member", code="already_member", field="email")
    if password:
        if user is None:
            user = User(email=email, created_at=now)
            user.set_password(password)
            session.add(user)
        else:
            spend_a_password_hash(password)  # the same time as making the account: timing tells nothing
    found = session.scalar(select(Invitation).where(
        Invitation.workspace_id == workspace_id, Invitation.email == email, Invitation.accepted_at.is_(None),
        Invitation.declined_at.is_(None), Invitation.revoked_at.is_(None), Invitation.expires_at > now))
    if found is None:
        found = Invitation(workspace_id=workspace_id, email=email, created_at=now)
        session.add(found)
    found.role, found.invited_by, found.expires_at = chosen.value, invited_by, now + timedelta(days=INVITATION_DAYS)
    session.flush()
    return found


def pending_in_workspace(session: Session, workspace_id: int, *, now: datetime) -> list[Invitation]:
    """The workspace's invitations still waiting for an answer, by email."""
    return list(session.scalars(select(Invitation).where(
        Invitation.workspace_id == workspace_id, Invitation.accepted_at.is_(None), Invitation.declined_at.is_(None),
        Invitation.revoked_at.is_(None), Invitation.expires_at > now).order_by(Invitation.email, Invitation.id)))


def pending_for(session: Session, email: str, *, now: datetime) -> list[Invitation]:
    """The invitations waiting for this person's answer, oldest first."""
    return list(session.scalars(select(Invitation).where(
        Invitation.email == (email or "").strip().lower(), Invitation.accepted_at.is_(None),
        Invitation.declined_at.is_(None), Invitation.revoked_at.is_(None), Invitation.expires_at > now)
        .order_by(Invitation.id)))


def find_invitation(session: Session, invitation_id) -> Invitation | None:
    if not isinstance(invitation_id, int) or not 0 < invitation_id < 2**31:
        return None
    return session.get(Invitation, invitation_id)


def _yours(session: Session, invitation_id: int, user: User, now: datetime) -> Invitation:
    invitation = find_invitation(session, invitation_id)
    if invitation is None or invitation.email != user.email.lower():
        raise NotFound("no such invitation for you")
    if not invitation.pending(now):
        raise Conflict("this invitation was answered, revoked or has expired; ask an admin for a new one",
                       code="invitation_closed")
    return invitation


def accept(session: Session, invitation_id: int, user: User, *, now: datetime) -> Membership:
    """The invited person joins the workspace with the invitation's role."""
    invitation = _yours(session, invitation_id, user, now)
    invitation.accepted_at = now
    membership = session.scalar(select(Membership).where(Membership.user_id == user.id,
                                                         Membership.workspace_id == invitation.workspace_id))
    if membership is None:
        membership = Membership(user_id=user.id, workspace_id=invitation.workspace_id, role=invitation.role)
        session.add(membership)
    session.flush()
    return membership


def decline(session: Session, invitation_id: int, user: User, *, now: datetime) -> Invitation:
    """The invited person says no; nothing else changes."""
    invitation = _yours(session, invitation_id, user, now)
    invitation.declined_at = now
    session.flush()
    return invitation


def revoke(session: Session, workspace_id: int, invitation_id: int, *, now: datetime) -> Invitation:
    """An admin withdraws a pending invitation of their workspace."""
    invitation = find_invitation(session, invitation_id)
    if invitation is None or invitation.workspace_id != workspace_id:
        raise NotFound("no such invitation in this workspace")
    if invitation.pending(now):
        invitation.revoked_at = now
        session.flush()
    return invitation
