"""A workspace's members: add, change role, remove; a workspace always keeps an admin."""

import re
from datetime import datetime

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from models.accounts.feeds import revoke_feed_tokens
from models.accounts.sessions import end_sessions_of
from models.accounts.tables import ApiToken, Membership, Role, User
from models.core.errors import Conflict, InvalidInput, NotFound

EMAIL = re.compile(r"^[^@\s]{1,64}@[^@\s]{1,189}\.[^@\s]{1,63}$")


def find_user(session: Session, email: str) -> User:
    """The person with this email (compared without case), or :class:`NotFound`."""
    user = session.scalar(select(User).where(func.lower(User.email) == (email or "").strip().lower()))
    if user is None:
        raise NotFound(f"no user {email!r}", field="email")
    return user


def list_members(session: Session, workspace_id: int) -> list[Membership]:
    """The workspace's memberships with their users, by email."""
    return list(session.scalars(
        select(Membership).join(User, User.id == Membership.user_id)
        .where(Membership.workspace_id == workspace_id).order_by(User.email)
    ))


def membership_role(session: Session, user_id: int, workspace_id: int) -> Role | None:
    """The role ``user_id`` has in ``workspace_id``, or None when they are not a member."""
    role = session.scalar(
        select(Membership.role).where(Membership.user_id == user_id, Membership.workspace_id == workspace_id)
    )
    return Role(role) if role else None


def _role(value: str) -> Role:
    try:
        return Role(value)
    except ValueError:
        raise InvalidInput(f"{value!r} is not a role; one of admin, ops, marketer, reviewer", field="role") from None


def _membership(session: Session, workspace_id: int, membership_id: int) -> Membership:
    membership = session.scalar(select(Membership).where(Membership.id == membership_id,
                                                         Membership.workspace_id == workspace_id))
    if membership is None:
        raise NotFound("no such member in this workspace")
    return membership


def _admins(session: Session, workspace_id: int) -> int:
    return session.scalar(select(func.count()).select_from(Membership).where(
        Membership.workspace_id == workspace_id, Membership.role == Role.ADMIN.value)) or 0


def add_member(session: Session, workspace_id: int, *, email: str, role: str, password: str | None,
               now: datetime) -> Membership:
    """Add a person by email; someone new needs an initial password (at least 8 characters)."""
    email = (email or "").strip().lower()
    if not EMAIL.match(email):
        raise InvalidInput("give an email address like name@example.com", field="email")
    chosen = _role(role)
    user = session.scalar(select(User).where(func.lower(User.email) == email))
    if user is None:
        if not password:
            raise InvalidInput(f"{email} has no account yet: give an initial password", field="password")
        user = User(email=email, created_at=now)
        user.set_password(password)
        session.add(user)
        session.flush()
    elif session.scalar(select(Membership).where(Membership.user_id == user.id,
                                                 Membership.workspace_id == workspace_id)):
        raise Conflict(f"{email} is already a member", code="already_member", field="email")
    membership = Membership(user_id=user.id, workspace_id=workspace_id, role=chosen.value)
    session.add(membership)
    session.flush()
    return membership


def change_role(session: Session, workspace_id: int, membership_id: int, role: str) -> Membership:
    """Give a member another role; the last admin stays an admin."""
    membership = _membership(session, workspace_id, membership_id)
    chosen = _role(role)
    if membership.role == Role.ADMIN.value and chosen is not Role.ADMIN and _admins(session, workspace_id) <= 1:
        raise Conflict("this is the workspace's last admin; make someone else admin first", code="last_admin")
    membership.role = chosen.value
    session.flush()
    return membership


def remove_member(session: Session, workspace_id: int, membership_id: int, *, now: datetime) -> str:
    """Take a person out of the workspace (their history stays); returns their email.

    At once: their calendar feed and their API tokens in the workspace are revoked and every
    session of theirs ends (a browser looking at this workspace must not go on looking).
    """
    membership = _membership(session, workspace_id, membership_id)
    if membership.role == Role.ADMIN.value and _admins(session, workspace_id) <= 1:
        raise Conflict("this is the workspace's last admin; make someone else admin first", code="last_admin")
    email = membership.user.email
    revoke_feed_tokens(session, workspace_id, membership.user_id, now=now, why="left_workspace")
    session.execute(update(ApiToken).where(ApiToken.workspace_id == workspace_id,
                                           ApiToken.user_id == membership.user_id, ApiToken.revoked_at.is_(None))
                    .values(revoked_at=now, revoked_why="left_workspace"))
    end_sessions_of(session, membership.user_id, now=now, why="left_workspace")
    session.delete(membership)
    session.flush()
    return email
