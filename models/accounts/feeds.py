"""Calendar feed tokens: the secret in a person's iCalendar feed address, stored as a hash.

A person has at most one live feed per workspace. Making one revokes the one before
(``regenerated``); the person can revoke it (``revoked``); leaving the workspace revokes it
(``left_workspace``, in :func:`models.accounts.members.remove_member`). The raw token is
shown once, when it is made, and never again.
"""

import hashlib
import secrets
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from models.accounts.tables import CalendarFeedToken, Membership, User

FEED_TOKEN_PREFIX = "twcal_"
# Longer than any token we hand out; anything longer is not worth hashing.
MAX_FEED_TOKEN = 100


def hash_feed_token(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def live_feed_token(session: Session, workspace_id: int, user_id: int) -> CalendarFeedToken | None:
    """The person's live feed token in the workspace (to say when it was made), or None."""
    return session.scalar(select(CalendarFeedToken).where(
        CalendarFeedToken.workspace_id == workspace_id, CalendarFeedToken.user_id == user_id,
        CalendarFeedToken.revoked_at.is_(None)).order_by(CalendarFeedToken.id.desc()).limit(1))


def revoke_feed_tokens(session: Session, workspace_id: int, user_id: int, *, now: datetime, why: str) -> int:
    """Revoke the person's live feed tokens in the workspace; returns how many there were."""
    result = session.execute(update(CalendarFeedToken).where(
        CalendarFeedToken.workspace_id == workspace_id, CalendarFeedToken.user_id == user_id,
        CalendarFeedToken.revoked_at.is_(None)).values(revoked_at=now, revoked_why=why))
    return result.rowcount or 0


def issue_feed_token(session: Session, workspace_id: int, user_id: int, *, now: datetime) -> str:
    """A new feed token for the person (the previous one revoked as ``regenerated``); shown only now."""
    revoke_feed_tokens(session, workspace_id, user_id, now=now, why="regenerated")
    raw = FEED_TOKEN_PREFIX + secrets.token_urlsafe(32)
    session.add(CalendarFeedToken(workspace_id=workspace_id, user_id=user_id, token_hash=hash_feed_token(raw),
                                  created_at=now))
    session.flush()
    return raw


def find_feed_token(session: Session, raw: str) -> CalendarFeedToken | None:
    """The live token matching ``raw`` whose person is active and still a member, or None."""
    if not isinstance(raw, str) or not raw.startswith(FEED_TOKEN_PREFIX) or len(raw) > MAX_FEED_TOKEN:
        return None
    token = session.scalar(select(CalendarFeedToken).where(CalendarFeedToken.token_hash == hash_feed_token(raw)))
    if token is None or token.revoked_at is not None:
        return None
    member = session.scalar(select(Membership.id).join(User, User.id == Membership.user_id).where(
        Membership.workspace_id == token.workspace_id, Membership.user_id == token.user_id, User.is_active.is_(True)))
    return token if member is not None else None
