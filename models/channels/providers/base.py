"""The one interface every provider speaks, and the outcomes a send can end in.

A provider turns a :class:`Delivery` into exactly one :class:`SendResult`. It never
touches a scheduled row's status (the dispatcher does that, through the lifecycle), and
it never raises for something a provider or a network can do: every such case is one of
the :class:`SendOutcome` classes of the brief's outcome table.
"""

import enum
import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Callable, Protocol


class SendOutcome(str, enum.Enum):
    """How a send ended, and so what happens to the row."""

    SUCCESS = "success"  # accepted: the row is published with the provider's id
    NOT_SENT = "not_sent"  # never reached the provider (validation, DNS, refused connection): back off, retry
    RETRY_LATER = "retry_later"  # reached it, and it said "not now" (429, 503): back off, honour Retry-After
    PERMANENT = "permanent"  # refused for good (bad token, bad recipient): failed
    UNKNOWN = "unknown"  # may or may not have gone out (timeout after sending, 500/502/504, reset)


@dataclass(frozen=True)
class MediaFile:
    """One media item as this network gets it: prepared for its rules at send time (resized, re-encoded) or whole."""

    media_id: int
    kind: str  # image, gif, video
    mime: str
    data: bytes = field(repr=False)
    width: int | None = None
    height: int | None = None
    alt: str = ""
    duration: float | None = None  # seconds, when it could be read
    prepared: bool = False  # re-encoded for this network (else the library's bytes as stored)
    # For a network that fetches media itself (``delivery = "url"``): a signed link to this one file,
    # good for a few hours, under TICKWORK_BASE_URL; ``data`` is then empty.
    url: str | None = None

    @property
    def filename(self) -> str:
        """A name for the file as a network shows it: the media id and the extension its type calls for."""
        return f"{self.media_id}.{_EXTENSIONS.get(self.mime, 'bin')}"


_EXTENSIONS = {"image/jpeg": "jpg", "image/png": "png", "image/webp": "webp", "image/gif": "gif", "video/mp4": "mp4",
               "video/quicktime": "mov", "video/webm": "webm"}


@dataclass(frozen=True)
class Delivery:
    """Everything a provider needs for one send; the secret is plaintext, so never log this."""

    action_id: int
    workspace_id: int
    channel_id: int
    channel_name: str
    action_type: str
    target_key: str
    payload: dict
    publish_at: datetime
    attempt: int
    config: dict
    secret: str | None = field(default=None, repr=False)
    # The payload's media, in order, as the provider's declaration asks (``accepts.media.delivery``
    # is ``upload``: the bytes; ``url``: a signed link each): filled at send time; empty for a payload
    # without media or a provider that takes ids.
    media: tuple[MediaFile, ...] = ()
    # When the row was created: stable across its attempts, so a provider may derive a key the far
    # end de-duplicates on from it (Bluesky's record key).
    created_at: datetime | None = None

    @property
    def idempotency_key(self) -> str:
        """Stable across attempts, so a provider that honours it de-duplicates our retries."""
        return str(self.action_id)


@dataclass(frozen=True)
class SendResult:
    outcome: SendOutcome
    message: str = ""
    provider_id: str | None = None
    retry_after: timedelta | None = None
    # The network refused the channel's token as expired or revoked: the channel needs reconnecting
    # (the outcome is then PERMANENT; the dispatcher marks the channel "reconnect needed").
    reconnect_needed: bool = False
    # What asking the provider about an unknown outcome found (``settle``): written in the row's events.
    asked: str | None = None

    @classmethod
    def success(cls, provider_id: str | None, message: str = "accepted") -> "SendResult":
        return cls(SendOutcome.SUCCESS, message, provider_id)


@dataclass(frozen=True)
class SendContext:
    """What a provider may use besides the delivery: the time, timeouts, a shared HTTP client, the database."""

    now: datetime
    timeout: float
    http: Any = None  # an egress httpx.Client (models.core.egress) shared by the process, for providers that call out
    session: Any = None  # the dispatch's write transaction, for a local provider
    # How a provider waits between polls (Mastodon's media processing, Meta's containers): tests pass
    # one that records the wait and returns at once. A provider never waits longer than ``timeout`` in all.
    sleep: Callable[[float], None] = time.sleep


class Provider(Protocol):
    """A provider that calls out: one send per claimed row, with no transaction open."""

    kind: str
    # Whether the far end de-duplicates on our Idempotency-Key: then an unknown outcome is
    # retried with the same key instead of failing as "outcome unknown".
    honours_idempotency_key: bool

    def send(self, delivery: Delivery, context: SendContext) -> SendResult: ...

    # Optional: ``settle(delivery, context) -> SendResult | None`` answers "did my earlier attempt
    # land?" after an unknown outcome: SUCCESS with the provider id (it did), NOT_SENT (it provably
    # did not, and another attempt cannot make a second one), or None (the provider cannot tell yet).
    # A provider whose answer may lag behind its sends declares ``settle_delay`` (a timedelta): until
    # then "not found" means "ask again later". See models/clock/settling.py.


class LocalProvider(Protocol):
    """A provider whose delivery is a write to Tickwork's own database (``local = True``).

    It writes inside the dispatch's transaction (``context.session``), beside the claim
    and the outcome, so a delivery exists exactly when its row is published.
    """

    kind: str
    local: bool
    honours_idempotency_key: bool

    def deliver(self, deliveries: list[Delivery], context: SendContext) -> list[SendResult]: ...


def payload_text(payload: dict, *keys: str) -> str | None:
    """The first non-empty string among ``keys`` of the payload."""
    for key in keys:
        value = payload.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


_HEADER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,63}$")
# Set by the provider from the delivery itself; a payload may not replace them.
_RESERVED_HEADERS = frozenset({"from", "to", "cc", "bcc", "subject", "date", "message-id", "content-type",
                               "content-transfer-encoding", "mime-version", "reply-to", "sender", "return-path"})


class BadHeaders(ValueError):
    """A payload's ``headers`` that cannot go on a message."""


def payload_headers(payload: dict) -> list[tuple[str, str]]:
    """The extra email headers a payload asks for (``{"headers": {"List-Unsubscribe": "<...>"}}``), checked.

    Names are header tokens and not ones the provider sets itself; values are one line each, so
    nothing can smuggle a header in. Raises :class:`BadHeaders` saying what is wrong.
    """
    headers = payload.get("headers")
    if headers is None:
        return []
    if not isinstance(headers, dict) or len(headers) > 20:
        raise BadHeaders("the payload's 'headers' must be an object of at most 20 names to text values")
    checked = []
    for name, value in headers.items():
        if not isinstance(name, str) or not _HEADER_NAME.match(name) or name.lower() in _RESERVED_HEADERS:
            raise BadHeaders(f"the payload's header {str(name)[:64]!r} is not a header Tickwork may set")
        if not isinstance(value, str) or "\r" in value or "\n" in value or len(value) > 2000:
            raise BadHeaders(f"the payload's header {name!r} must be one line of text")
        checked.append((name, value))
    return checked
