"""Idempotency keys (the IETF Idempotency-Key draft): a create sent twice with the same key runs once.

One row per (workspace, token, key), kept ``policy.idempotency_ttl`` (24 hours by default):

| the same key arrives again ...         | the answer                                                   |
|----------------------------------------|--------------------------------------------------------------|
| with the same request, first finished  | the first answer again, with ``Idempotent-Replayed: true``   |
| with the same request, first in flight | 409 ``idempotency_key_in_flight``                            |
| with another request (body or route)   | 422 ``idempotency_key_reused``                               |
| after the key expired                  | a new request                                                |

A first request that fails (any non-2xx answer, or an error) releases its key, so a fixed
request may use it again. An in-flight record older than ``policy.idempotency_in_flight``
belongs to a request whose process died and is released too. The one window left: a process
that dies after its create committed and before it recorded the answer; its retry creates
again (a ``thing_id`` closes that window for the rows that carry one).
"""

import hashlib
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import JSON, ForeignKey, Index, Integer, String, delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Mapped, Session, mapped_column

from models.core.base import Base
from models.core.errors import Conflict, InvalidInput
from models.core.policy import Policy
from models.core.types import UTCDateTime

IN_FLIGHT = "in_flight"
DONE = "done"
MAX_KEY_LENGTH = 255


class IdempotencyKey(Base):
    """A create request remembered by its key: what it was (a fingerprint) and what it answered."""

    __tablename__ = "idempotency_keys"

    id: Mapped[int] = mapped_column(primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id", ondelete="RESTRICT"))
    token_id: Mapped[int] = mapped_column(ForeignKey("api_tokens.id", ondelete="RESTRICT"))
    key: Mapped[str] = mapped_column(String(MAX_KEY_LENGTH))
    fingerprint: Mapped[str] = mapped_column(String(64))  # SHA-256 of the method, the path and the body
    status: Mapped[str] = mapped_column(String(16))
    response_status: Mapped[int | None] = mapped_column(Integer)
    response_body: Mapped[dict | None] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())

    __table_args__ = (
        Index("ux_idempotency_keys_workspace_token_key", "workspace_id", "token_id", "key", unique=True),
        Index("ix_idempotency_keys_created_at", "created_at"),
    )


@dataclass(frozen=True)
class Replay:
    """The first answer to a request, to be sent again."""

    status: int
    body: dict


def fingerprint(method: str, path: str, body: bytes) -> str:
    """What makes two requests the same request."""
    digest = hashlib.sha256()
    for part in (method.encode(), b"\n", path.encode(), b"\n", body):
        digest.update(part)
    return digest.hexdigest()


def check_key(raw: str | None) -> str | None:
    """The Idempotency-Key header's value, or None when there is none; a 422 when it is empty or too long."""
    if raw is None:
        return None
    key = raw.strip()
    if not 0 < len(key) <= MAX_KEY_LENGTH or "\x00" in key:
        raise InvalidInput(f"Idempotency-Key must be 1 to {MAX_KEY_LENGTH} characters", field="Idempotency-Key",
                           code="bad_idempotency_key")
    return key


def _mine(workspace_id: int, token_id: int, key: str):
    return (IdempotencyKey.workspace_id == workspace_id, IdempotencyKey.token_id == token_id,
            IdempotencyKey.key == key)


def begin(session: Session, *, workspace_id: int, token_id: int, key: str, print_: str, now: datetime,
          policy: Policy) -> Replay | None:
    """Start a request under ``key`` (inside a write transaction): None to go ahead, a Replay to answer
    with, or a typed refusal (409 in flight, 422 reused)."""
    found = session.scalar(select(IdempotencyKey).where(*_mine(workspace_id, token_id, key)).with_for_update())
    if found is not None:
        stale = (found.created_at < now - policy.idempotency_ttl or
                 (found.status == IN_FLIGHT and found.created_at < now - policy.idempotency_in_flight))
        if not stale:
            if found.fingerprint != print_:
                raise InvalidInput("this Idempotency-Key was already used for another request; use a new key",
                                   field="Idempotency-Key", code="idempotency_key_reused")
            if found.status == IN_FLIGHT:
                raise Conflict("a request with this Idempotency-Key is still being processed; retry shortly",
                               field="Idempotency-Key", code="idempotency_key_in_flight")
            return Replay(found.response_status, found.response_body)
        session.delete(found)
        session.flush()
    try:
        with session.begin_nested():
            session.add(IdempotencyKey(workspace_id=workspace_id, token_id=token_id, key=key, fingerprint=print_,
                                       status=IN_FLIGHT, created_at=now))
    except IntegrityError:  # the same key, at the same moment, from another request
        raise Conflict("a request with this Idempotency-Key is still being processed; retry shortly",
                       field="Idempotency-Key", code="idempotency_key_in_flight") from None
    return None


def finish(session: Session, *, workspace_id: int, token_id: int, key: str, status: int, body: dict,
           now: datetime) -> None:
    """Record the answer of a request that succeeded, for its replays."""
    session.execute(update(IdempotencyKey).where(*_mine(workspace_id, token_id, key),
                                                 IdempotencyKey.status == IN_FLIGHT)
                    .values(status=DONE, response_status=status, response_body=body, finished_at=now))


def release(session: Session, *, workspace_id: int, token_id: int, key: str) -> None:
    """Forget a request that failed, so the key may be used again."""
    session.execute(delete(IdempotencyKey).where(*_mine(workspace_id, token_id, key),
                                                 IdempotencyKey.status == IN_FLIGHT))


def forget_expired(session: Session, *, now: datetime, policy: Policy) -> int:
    """Delete the records older than the time keys are kept; returns how many."""
    return session.execute(delete(IdempotencyKey).where(
        IdempotencyKey.created_at < now - policy.idempotency_ttl)).rowcount
