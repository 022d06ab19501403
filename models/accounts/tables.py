"""The accounts tables: workspaces, people, their memberships (with a role), API tokens and calendar feed tokens."""

import enum
from datetime import datetime

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import Boolean, CheckConstraint, ForeignKey, Index, Integer, String, Text, false
from sqlalchemy.orm import Mapped, mapped_column, relationship, validates

from models.core.base import Base
from models.core.types import UTCDateTime
from models.core.errors import InvalidInput
from models.timing.wall_time import InvalidTimezone, load_zone

_hasher = PasswordHasher()
_dummy_hash: list[str] = []


def spend_a_password_check(password: str) -> None:
    """Verify ``password`` against a hash nobody has, at the cost of a real one: a sign-in for an email
    without an account takes as long as one with a wrong password, so timing tells nothing."""
    if not _dummy_hash:
        _dummy_hash.append(_hasher.hash("no account has this password"))
    try:
        _hasher.verify(_dummy_hash[0], password if isinstance(password, str) else "")
    except (VerificationError, InvalidHashError):
        pass


def spend_a_password_hash(password: str) -> None:
    """Hash ``password`` and drop it: an answer that would otherwise skip a hash costs the same."""
    _hasher.hash(password if isinstance(password, str) else "")


class Role(str, enum.Enum):
    """A member's role in a workspace; what each may do is the table in :mod:`models.accounts.permissions`."""

    MARKETER = "marketer"  # composes, schedules and cancels posts
    OPS = "ops"  # also cancels and reschedules any action
    ADMIN = "admin"  # also retries failed actions, manages channels and members, reviews
    REVIEWER = "reviewer"  # reads what a marketer reads; approves, requests changes, comments


class Workspace(Base):
    __tablename__ = "workspaces"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    timezone: Mapped[str] = mapped_column(String(64))
    plan: Mapped[str] = mapped_column(String(32), default="free")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    # Admins of this workspace sign in with a second factor (TOTP) before they may act in it.
    admins_need_two_factor: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # "required": a marketer's post goes through review before it is approved; "off": it does not.
    review: Mapped[str] = mapped_column(String(16), default="off", server_default="off")
    # The author of a post may make review links for outside approvers (a link is a bearer secret).
    outside_approval: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())

    __table_args__ = (CheckConstraint("review IN ('off', 'required')", name="review"),)

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
    password_changed_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    totp_secret: Mapped[str | None] = mapped_column(Text)  # sealed with the app's secret box
    totp_enabled_at: Mapped[datetime | None] = mapped_column(UTCDateTime())  # None: no second factor (yet)
    totp_last_step: Mapped[int | None] = mapped_column(Integer)  # the last code's time step: a code works once

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
        CheckConstraint("role IN ('admin', 'ops', 'marketer', 'reviewer')", name="role"),
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
    name: Mapped[str | None] = mapped_column(String(100))  # None on tokens made before tokens had names
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime())  # None: until revoked
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    revoked_why: Mapped[str | None] = mapped_column(String(32))  # revoked, left_workspace, deactivated

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


class UserSession(Base):
    """One signed-in browser: the session cookie carries a random id whose SHA-256 is stored here.

    A request is signed in only while its row is live: not ended (sign-out, a password change,
    "sign out everywhere", leaving a workspace, deactivation) and used within the idle time.
    """

    __tablename__ = "user_sessions"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="RESTRICT"))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    user_agent: Mapped[str | None] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    last_seen_at: Mapped[datetime] = mapped_column(UTCDateTime())
    ended_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    ended_why: Mapped[str | None] = mapped_column(String(32))  # signed_out, password_changed, everywhere, ...

    __table_args__ = (Index("ix_user_sessions_user_live", "user_id", "ended_at"),)


class RecoveryCode(Base):
    """A one-time code that stands in for the second factor; only its SHA-256 is stored."""

    __tablename__ = "recovery_codes"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="RESTRICT"))
    code_hash: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    used_at: Mapped[datetime | None] = mapped_column(UTCDateTime())

    __table_args__ = (Index("ix_recovery_codes_user_id", "user_id"),)


class Invitation(Base):
    """An invitation to join a workspace with a role, for an email; the person joins only by accepting it."""

    __tablename__ = "invitations"

    id: Mapped[int] = mapped_column(primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id", ondelete="RESTRICT"))
    email: Mapped[str] = mapped_column(String(254))
    role: Mapped[str] = mapped_column(String(16))
    invited_by: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="RESTRICT"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
    accepted_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    declined_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime())

    workspace: Mapped[Workspace] = relationship()
    inviter: Mapped[User | None] = relationship(foreign_keys=[invited_by])

    __table_args__ = (Index("ix_invitations_workspace_email", "workspace_id", "email"),
                      Index("ix_invitations_email", "email"))

    def pending(self, now: datetime) -> bool:
        return (self.accepted_at is None and self.declined_at is None and self.revoked_at is None
                and self.expires_at > now)
