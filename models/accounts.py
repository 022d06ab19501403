"""Workspaces, people, their roles, and API tokens."""

import enum
import hashlib
import secrets
from datetime import datetime

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import CheckConstraint, ForeignKey, Index, String, select
from sqlalchemy.orm import Mapped, Session, mapped_column, relationship, validates

from models.base import Base
from models.types import UTCDateTime
from models.wall_time import load_zone

_hasher = PasswordHasher()
TOKEN_PREFIX = "tw_"


class Role(str, enum.Enum):
    """What a member may do in a workspace; each role includes the ones below it."""

    MARKETER = "marketer"  # composes, schedules and cancels posts
    OPS = "ops"  # also cancels and reschedules any action
    ADMIN = "admin"  # also retries failed actions, manages channels and members

    @property
    def rank(self) -> int:
        return {"marketer": 0, "ops": 1, "admin": 2}[self.value]

    def allows(self, needed: "Role") -> bool:
        return self.rank >= needed.rank


class Workspace(Base):
    __tablename__ = "workspaces"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    timezone: Mapped[str] = mapped_column(String(64))
    plan: Mapped[str] = mapped_column(String(32), default="free")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())

    @validates("timezone")
    def _validate_timezone(self, _key, value):
        load_zone(value)  # raises InvalidTimezone with a clear message
        return value

    @validates("name")
    def _validate_name(self, _key, value):
        value = (value or "").strip()
        if not value or len(value) > 100:
            raise ValueError("a workspace name is 1 to 100 characters")
        return value


class User(Base):
    __tablename__ = "users"

    id: Mapped[int] = mapped_column(primary_key=True)
    email: Mapped[str] = mapped_column(String(254), unique=True)
    password_hash: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    is_active: Mapped[bool] = mapped_column(default=True)

    memberships: Mapped[list["Membership"]] = relationship(back_populates="user")

    def set_password(self, password: str) -> None:
        if not password or len(password) < 8:
            raise ValueError("a password has at least 8 characters")
        self.password_hash = _hasher.hash(password)

    def check_password(self, password: str) -> bool:
        try:
            return _hasher.verify(self.password_hash, password)
        except (VerificationError, InvalidHashError):
            return False

    # Flask-Login's user protocol.
    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def is_anonymous(self) -> bool:
        return False

    def get_id(self) -> str:
        return str(self.id)


class Membership(Base):
    __tablename__ = "memberships"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="RESTRICT"))
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id", ondelete="RESTRICT"))
    role: Mapped[str] = mapped_column(String(16))

    user: Mapped[User] = relationship(back_populates="memberships")
    workspace: Mapped[Workspace] = relationship()

    __table_args__ = (
        CheckConstraint("role IN ('admin', 'ops', 'marketer')", name="role"),
        Index("ux_memberships_user_workspace", "user_id", "workspace_id", unique=True),
    )


class ApiToken(Base):
    """A bearer token bound to one workspace and one user; only its SHA-256 is stored.

    Tokens are 32 random bytes, so a fast hash is enough: there is nothing to brute-force.
    """

    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id", ondelete="RESTRICT"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="RESTRICT"))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime())

    user: Mapped[User] = relationship()
    workspace: Mapped[Workspace] = relationship()


def hash_token(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def issue_token(session: Session, user: User, workspace: Workspace, now: datetime) -> str:
    """Store a new token for ``user`` in ``workspace`` and return it; it is never shown again."""
    if membership_role(session, user.id, workspace.id) is None:
        raise ValueError(f"{user.email} is not a member of {workspace.name}")
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    session.add(ApiToken(workspace_id=workspace.id, user_id=user.id, token_hash=hash_token(raw), created_at=now))
    return raw


def find_token(session: Session, raw: str) -> ApiToken | None:
    """The live token matching ``raw``, or None."""
    token = session.scalar(select(ApiToken).where(ApiToken.token_hash == hash_token(raw)))
    if token is None or token.revoked_at is not None or not token.user.is_active:
        return None
    return token


def membership_role(session: Session, user_id: int, workspace_id: int) -> Role | None:
    role = session.scalar(
        select(Membership.role).where(Membership.user_id == user_id, Membership.workspace_id == workspace_id)
    )
    return Role(role) if role else None
