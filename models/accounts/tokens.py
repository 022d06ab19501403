"""API tokens: issued once to a member, stored as a hash, bound to one workspace.

A token has a name (what it is for), an optional expiry and a last-used time, and is listed
without its secret (the raw token is printed once, when it is made). It stops working when
it is revoked (by its person, an admin of its workspace, ``tickwork token revoke``), when it
expires, when its person leaves the workspace (``left_workspace``) or is deactivated.
"""

import hashlib
import secrets
from datetime import datetime, timedelta

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from models.accounts.members import membership_role
from models.accounts.permissions import Permission, can
from models.accounts.tables import ApiToken, Role, User, Workspace
from models.core.errors import InvalidInput, NotFound

TOKEN_PREFIX = "tw_"
MAX_TOKEN = 100  # longer than any token we hand out; anything longer is not worth hashing
MAX_NAME = 100
MAX_EXPIRY_DAYS = 3650
# How stale ``last_used_at`` may get before a request writes it again: a write a minute per token at most.
TOUCH_EVERY = timedelta(minutes=1)


def hash_token(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def check_token_name(name) -> str:
    name = name.strip() if isinstance(name, str) else ""
    if not name or len(name) > MAX_NAME or "\x00" in name:
        raise InvalidInput(f"a token's name says what it is for, 1 to {MAX_NAME} characters", field="name")
    return name


def expiry_after(days, *, now: datetime) -> datetime | None:
    """``now`` plus ``days`` whole days (None, "" or "never": no expiry), else a 422 naming ``expires_in_days``."""
    if days is None or (isinstance(days, str) and days.strip() in ("", "never")):
        return None
    try:
        whole = int(str(days).strip()) if not isinstance(days, bool) else 0
    except ValueError:
        whole = 0
    if not 1 <= whole <= MAX_EXPIRY_DAYS:
        raise InvalidInput(f"a token expires after 1 to {MAX_EXPIRY_DAYS} whole days, or never",
                           field="expires_in_days")
    return now + timedelta(days=whole)


def issue_token(session: Session, user: User, workspace: Workspace, now: datetime, *, name: str = "token",
                expires_at: datetime | None = None) -> str:
    """Store a new token for ``user`` in ``workspace`` and return it; it is never shown again."""
    if membership_role(session, user.id, workspace.id) is None:
        raise InvalidInput(f"{user.email} is not a member of {workspace.name}", field="email", code="not_a_member")
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    session.add(ApiToken(workspace_id=workspace.id, user_id=user.id, token_hash=hash_token(raw), created_at=now,
                         name=check_token_name(name), expires_at=expires_at))
    session.flush()
    return raw


def token_state(token: ApiToken, now: datetime) -> str:
    """``live``, ``expired`` or ``revoked``."""
    if token.revoked_at is not None:
        return "revoked"
    if token.expires_at is not None and token.expires_at <= now:
        return "expired"
    return "live"


def find_token(session: Session, raw, *, now: datetime) -> ApiToken | None:
    """The live token matching ``raw`` (not revoked, not expired, its person active), or None."""
    if not isinstance(raw, str) or not raw.startswith(TOKEN_PREFIX) or len(raw) > MAX_TOKEN:
        return None
    token = session.scalar(select(ApiToken).where(ApiToken.token_hash == hash_token(raw)))
    if token is None or token_state(token, now) != "live" or not token.user.is_active:
        return None
    return token


def needs_touch(token: ApiToken, now: datetime) -> bool:
    return token.last_used_at is None or token.last_used_at <= now - TOUCH_EVERY


def touch_token(session: Session, token_id: int, *, now: datetime) -> None:
    """Record that the token was used now."""
    session.execute(update(ApiToken).where(ApiToken.id == token_id).values(last_used_at=now))


def list_tokens(session: Session, workspace_id: int, *, user_id: int | None = None) -> list[ApiToken]:
    """The workspace's tokens that were not revoked (one person's when ``user_id`` is given), newest first."""
    query = select(ApiToken).where(ApiToken.workspace_id == workspace_id, ApiToken.revoked_at.is_(None))
    if user_id is not None:
        query = query.where(ApiToken.user_id == user_id)
    return list(session.scalars(query.order_by(ApiToken.id.desc())))


def revoke_token(session: Session, workspace_id: int, token_id: int, *, user_id: int, role: Role,
                 now: datetime) -> ApiToken:
    """Revoke one of the workspace's tokens: a person's own, or any when they are its admin.

    Anyone else's token, or another workspace's, is :class:`NotFound` (they cannot see it in the
    list either). Revoking a revoked token is a no-op.
    """
    token = session.scalar(select(ApiToken).where(ApiToken.id == token_id, ApiToken.workspace_id == workspace_id))
    if token is None or (token.user_id != user_id and not can(role, Permission.ADMINISTER)):
        raise NotFound(f"no token #{token_id} of yours in this workspace")
    if token.revoked_at is None:
        token.revoked_at, token.revoked_why = now, "revoked"
        session.flush()
    return token


def revoke_token_by_id(session: Session, token_id: int, *, now: datetime) -> ApiToken:
    """The operator's revoke (``tickwork token revoke ID``): any token of the instance."""
    token = session.get(ApiToken, token_id)
    if token is None:
        raise NotFound(f"no token #{token_id}", field="token_id")
    if token.revoked_at is None:
        token.revoked_at, token.revoked_why = now, "revoked"
        session.flush()
    return token
