"""API tokens: issued once to a member, stored as a hash, bound to one workspace."""

import hashlib
import secrets
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from models.accounts.members import membership_role
from models.accounts.tables import ApiToken, User, Workspace
from models.core.errors import InvalidInput

TOKEN_PREFIX = "tw_"


def hash_token(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def issue_token(session: Session, user: User, workspace: Workspace, now: datetime) -> str:
    """Store a new token for ``user`` in ``workspace`` and return it; it is never shown again."""
    if membership_role(session, user.id, workspace.id) is None:
        raise InvalidInput(f"{user.email} is not a member of {workspace.name}", field="email", code="not_a_member")
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    session.add(ApiToken(workspace_id=workspace.id, user_id=user.id, token_hash=hash_token(raw), created_at=now))
    return raw


def find_token(session: Session, raw: str) -> ApiToken | None:
    """The live token matching ``raw``, or None."""
    token = session.scalar(select(ApiToken).where(ApiToken.token_hash == hash_token(raw)))
    if token is None or token.revoked_at is not None or not token.user.is_active:
        return None
    return token
