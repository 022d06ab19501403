"""What a post must satisfy: its body on each target, its media links, its targets, its wall time."""

import re
from datetime import date, datetime, time, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from models.channels.tables import CHANNEL_NAME, Channel
from models.core.errors import InvalidInput
from models.core.policy import Policy
from models.core.time_input import resolve_typed
from models.timing.wall_time import ResolvedTime

MAX_TARGETS = 20
MAX_MEDIA = 10
MAX_MEDIA_URL = 2048
# Characters a body may have on each kind of channel; a channel's config may lower it
# with ``max_length``. Kinds not listed take the default.
BODY_LIMITS = {"mastodon": 500, "twilio": 1600}
DEFAULT_BODY_LIMIT = 10_000
MEDIA_URL = re.compile(r"^https?://[^\s/\x00-\x1f]+[^\s\x00-\x1f]*$")
# How far ahead a post may be scheduled.
MAX_AHEAD = timedelta(days=3660)


def body_limit(channel: Channel) -> int:
    """How many characters a post body may have on ``channel``."""
    limit = BODY_LIMITS.get(channel.kind, DEFAULT_BODY_LIMIT)
    configured = (channel.config or {}).get("max_length")
    if isinstance(configured, int) and not isinstance(configured, bool) and configured > 0:
        limit = min(limit, configured)
    return limit


def check_body(body, channels: list[Channel]) -> str:
    if not isinstance(body, str):
        raise InvalidInput("body must be a string", field="body", code="wrong_type")
    if not body.strip():
        raise InvalidInput("body must not be empty", field="body", code="missing")
    if "\x00" in body:
        raise InvalidInput("body must not contain NUL characters", field="body", code="bad_character")
    for channel in channels:
        limit = body_limit(channel)
        if len(body) > limit:
            raise InvalidInput(
                f"body is {len(body)} characters; {channel.name} ({channel.kind}) takes at most {limit}",
                field="body",
                code="too_long",
                channel=channel.name,
            )
    return body


def check_media(media) -> list[str]:
    if media is None:
        return []
    if not isinstance(media, list) or not all(isinstance(url, str) for url in media):
        raise InvalidInput("media must be a list of links", field="media", code="wrong_type")
    if len(media) > MAX_MEDIA:
        raise InvalidInput(f"a post has at most {MAX_MEDIA} media links", field="media", code="too_many")
    for url in media:
        if len(url) > MAX_MEDIA_URL or not MEDIA_URL.match(url):
            raise InvalidInput(f"{url[:80]!r} is not an http(s) link", field="media", code="bad_link")
    return list(media)


def check_targets(session: Session, workspace_id: int, names) -> list[Channel]:
    """The channels named ``names`` in this workspace, in order; InvalidInput otherwise."""
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        raise InvalidInput("targets must be a list of channel names", field="targets", code="wrong_type")
    names = [name.strip() for name in names]
    for name in names:
        if not CHANNEL_NAME.match(name):
            raise InvalidInput(f"no channel named {name[:63]!r} in this workspace", field="targets",
                               code="unknown_channel")
    if not names:
        raise InvalidInput("a post needs at least one target", field="targets", code="missing")
    if len(names) > MAX_TARGETS:
        raise InvalidInput(f"a post has at most {MAX_TARGETS} targets", field="targets", code="too_many")
    if len(set(names)) != len(names):
        raise InvalidInput("a target is named twice", field="targets", code="duplicate")
    found = {
        channel.name: channel
        for channel in session.scalars(
            select(Channel).where(Channel.workspace_id == workspace_id, Channel.name.in_(names))
        )
    }
    missing = [name for name in names if name not in found]
    if missing:
        raise InvalidInput(
            f"no channel named {missing[0]!r} in this workspace", field="targets", code="unknown_channel"
        )
    return [found[name] for name in names]


def check_wall_time(day: date, at: time, zone: str, now: datetime, policy: Policy) -> ResolvedTime:
    """The wall time resolved in ``zone``; refused if the zone is broken or the time is past."""
    resolved = resolve_typed(day, at, zone, "local_time")
    if resolved.instant > now + MAX_AHEAD:
        raise InvalidInput("local_time is more than 10 years ahead", field="local_time", code="too_far")
    if resolved.instant < now - policy.past_tolerance:
        raise InvalidInput(
            "local_time is in the past; pick a later time, or use Post now",
            field="local_time",
            code="in_the_past",
        )
    return resolved
