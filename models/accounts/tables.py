"""The accounts tables: workspaces, people, their memberships (with a role), API tokens and calendar feed tokens."""

import enum
from datetime import datetime

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import CheckConstraint, ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column, relationship, validates

from models.core.base import Base
from models.core.types import UTCDateTime
from models.core.errors import InvalidInput
from models.timing.wall_time import InvalidTimezone, load_zone

_hasher = PasswordHasher()


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
        try:
            load_zone(value)
        except InvalidTimezone as exc:
            raise InvalidInput(str(exc), field="timezone", code="bad_zone") from None
        return value

    @validates("name")
    def _validate_name(self, _key, value):
        value = (value or "").strip() if isinstance(value, str) else ""
        if not value or len(value) > 100 or "\x00" in value:
            raise InvalidInput("a workspace name is 1 to 100 characters", field="name")
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
        if not isinstance(password, str) or len(password) < 8:
            raise InvalidInput("a password has at least 8 characters", field="password")
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


class CalendarFeedToken(Base):
    """The secret of one person's iCalendar feed of one workspace; only its SHA-256 is stored.

    At most one is live per person and workspace: making a new one revokes the old, and so
    does the person leaving the workspace. A revoked token stays, with when and why.
    """

    __tablename__ = "calendar_feed_tokens"

    id: Mapped[int] = mapped_column(primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id", ondelete="RESTRICT"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="RESTRICT"))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    revoked_why: Mapped[str | None] = mapped_column(String(32))  # revoked, regenerated, left_workspace

    __table_args__ = (Index("ix_calendar_feed_tokens_member", "workspace_id", "user_id"),)
