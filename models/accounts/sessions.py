"""Sign-in sessions with a server-side side: a row per signed-in browser, ended for good.

The session cookie (signed by Flask) carries a random session id; the database keeps its
SHA-256 in ``user_sessions``. A request is signed in only while that row is live:

| ends it                                   | ``ended_why``        | which rows               |
|-------------------------------------------|----------------------|--------------------------|
| signing out                               | ``signed_out``       | this browser's           |
| signing in again in the same browser      | ``replaced``         | this browser's old one   |
| no use for the idle time                  | ``idle``             | this browser's           |
| a password change (dashboard or CLI)      | ``password_changed`` | all of the person's      |
| "sign out everywhere"                     | ``everywhere``       | all of the person's      |
| being removed from a workspace            | ``left_workspace``   | all of the person's      |
| being deactivated                         | ``deactivated``      | all of the person's      |

A cookie saved before any of these opens nothing afterwards, whatever its signature says.
"""

import hashlib
import secrets
from datetime import datetime, timedelta

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from models.accounts.tables import ApiToken, User, UserSession
from models.core.errors import InvalidInput, NotFound

# How stale ``last_seen_at`` may get before a request writes it again: one write a minute per
# browser at most, not one per request.
TOUCH_EVERY = timedelta(minutes=1)
MAX_SESSION_ID = 100


def hash_session_id(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def start_session(session: Session, user_id: int, *, now: datetime, user_agent: str | None = None) -> str:
    """A new live session for the person; returns the raw id for the cookie (never stored)."""
    raw = secrets.token_urlsafe(32)
    session.add(UserSession(user_id=user_id, token_hash=hash_session_id(raw), created_at=now, last_seen_at=now,
                            user_agent=(user_agent or "")[:200] or None))
    session.flush()
    return raw


def find_live_session(session: Session, raw, *, now: datetime, idle: timedelta) -> UserSession | None:
    """The live session whose id is ``raw``, used within ``idle`` and whose person is active; else None."""
    if not isinstance(raw, str) or not raw or len(raw) > MAX_SESSION_ID:
        return None
    found = session.scalar(select(UserSession).where(UserSession.token_hash == hash_session_id(raw)))
    if found is None or found.ended_at is not None or found.last_seen_at <= now - idle:
        return None
    active = session.scalar(select(User.is_active).where(User.id == found.user_id))
    return found if active else None


def needs_touch(found: UserSession, now: datetime) -> bool:
    return found.last_seen_at <= now - TOUCH_EVERY


def touch_session(session: Session, session_id: int, *, now: datetime) -> None:
    """Record that the session was used now (only while it is still live)."""
    session.execute(update(UserSession).where(UserSession.id == session_id, UserSession.ended_at.is_(None))
                    .values(last_seen_at=now))


def end_session(session: Session, raw, *, now: datetime, why: str) -> bool:
    """End the session whose id is ``raw``; True when it was live."""
    if not isinstance(raw, str) or not raw or len(raw) > MAX_SESSION_ID:
        return False
    result = session.execute(update(UserSession).where(UserSession.token_hash == hash_session_id(raw),
                                                       UserSession.ended_at.is_(None))
                             .values(ended_at=now, ended_why=why))
    return bool(result.rowcount)


def end_sessions_of(session: Session, user_id: int, *, now: datetime, why: str) -> int:
    """End every live session of the person; returns how many there were."""
    result = session.execute(update(UserSession).where(UserSession.user_id == user_id,
                                                       UserSession.ended_at.is_(None))
                             .values(ended_at=now, ended_why=why))
    return result.rowcount or 0


def live_sessions_of(session: Session, user_id: int, *, now: datetime, idle: timedelta) -> list[UserSession]:
    """The person's live sessions, most recently used first."""
    return list(session.scalars(select(UserSession).where(
        UserSession.user_id == user_id, UserSession.ended_at.is_(None), UserSession.last_seen_at > now - idle)
        .order_by(UserSession.last_seen_at.desc(), UserSession.id.desc())))


def set_password(session: Session, user_id: int, password: str, *, now: datetime) -> int:
    """Give the person a new password and end all their sessions; returns how many were ended."""
    user = session.get(User, user_id)
    if user is None:
        raise NotFound("no such person")
    user.set_password(password)  # at least 8 characters, else a 422 naming ``password``
    user.password_changed_at = now
    session.flush()
    return end_sessions_of(session, user_id, now=now, why="password_changed")


def change_own_password(session: Session, user_id: int, *, current: str, new: str, confirm: str,
                        now: datetime) -> int:
    """A person changes their own password: the current one first, the new one twice."""
    user = session.get(User, user_id)
    if user is None or not user.check_password(current or ""):
        raise InvalidInput("that is not your current password", field="current_password")
    if (new or "") != (confirm or ""):
        raise InvalidInput("the new password and its confirmation differ", field="confirm_password")
    if new == current:
        raise InvalidInput("choose a password other than the current one", field="password")
    return set_password(session, user_id, new, now=now)


def deactivate_user(session: Session, user_id: int, *, now: datetime) -> None:
    """The person can no longer sign in or use a token: their sessions end and their tokens are revoked."""
    user = session.get(User, user_id)
    if user is None:
        raise NotFound("no such person")
    user.is_active = False
    end_sessions_of(session, user_id, now=now, why="deactivated")
    session.execute(update(ApiToken).where(ApiToken.user_id == user_id, ApiToken.revoked_at.is_(None))
                    .values(revoked_at=now, revoked_why="deactivated"))
    session.flush()
