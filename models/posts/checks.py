"""What a post must satisfy: its body and its media on each target (as that target's provider declares), its
targets, its wall time."""

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from models.channels.providers import accepts_for
from models.channels.providers.accepts import Broken, Count, media_breaks, text_breaks, text_counts, text_rules
from models.channels.tables import CHANNEL_NAME, Channel
from models.core.errors import InvalidInput
from models.core.policy import Policy
from models.core.time_input import resolve_typed
from models.media.library import facts_of, media_in_order
from models.posts.tables import MAX_ID
from models.timing.wall_time import ResolvedTime

MAX_TARGETS = 20
MAX_MEDIA = 10
MAX_MEDIA_URL = 2048
MEDIA_URL = re.compile(r"^https?://[^\s/\x00-\x1f]+[^\s\x00-\x1f]*$")
# How far ahead a post may be scheduled.
MAX_AHEAD = timedelta(days=3660)


def body_limit(channel: Channel) -> int:
    """How much of its first measure (characters, graphemes...) a post body may have on ``channel``."""
    return text_rules(accepts_for(channel.kind), channel.config)[0].limit


def check_body(body, channels: list[Channel]) -> str:
    """The body, if every target takes it as its provider counts text; else a 422 naming the channel and the rule."""
    if not isinstance(body, str):
        raise InvalidInput("body must be a string", field="body", code="wrong_type")
    if not body.strip():
        raise InvalidInput("body must not be empty", field="body", code="missing")
    if "\x00" in body:
        raise InvalidInput("body must not contain NUL characters", field="body", code="bad_character")
    for channel in channels:
        broken = text_breaks(accepts_for(channel.kind), channel.config, body)
        if broken is not None:
            raise InvalidInput(f"{channel.name} ({channel.kind}) refuses the body: {broken.message}", field="body",
                               code="too_long", channel=channel.name, rule=broken.rule)
    return body


def media_ids(media) -> list[int]:
    """The media ids a post names (numbers, or their decimal text as a CSV holds them), checked for shape only."""
    if media is None:
        return []
    if not isinstance(media, list):
        raise InvalidInput("media must be a list of media ids", field="media", code="wrong_type")
    if len(media) > MAX_MEDIA:
        raise InvalidInput(f"a post has at most {MAX_MEDIA} media items", field="media", code="too_many")
    ids = []
    for item in media:
        if isinstance(item, str) and item.strip().isdecimal() and item.strip().isascii():
            item = int(item.strip())
        if isinstance(item, str) and MEDIA_URL.match(item[:MAX_MEDIA_URL + 1]):
            raise InvalidInput(f"{item[:80]!r} is a link: put it in the media library first (the API and the "
                               "composer fetch links when the post is saved) and name its id",
                               field="media", code="bad_link")
        if isinstance(item, bool) or not isinstance(item, int) or not 1 <= item <= MAX_ID:
            raise InvalidInput(f"{str(item)[:80]!r} is not a media id", field="media", code="bad_media_id")
        ids.append(item)
    if len(set(ids)) != len(ids):
        raise InvalidInput("a media item is named twice", field="media", code="duplicate")
    return ids


def check_media(session: Session, workspace_id: int, media, channels: list[Channel],
                body: str | None = None) -> list[int]:
    """The post's media ids, if each is in the library and every target takes them as its provider declares.

    A rule broken on one target is a 422 on ``media`` naming the channel and the rule
    (``image.bytes``, ``media.count``...); an image a provider may have prepared (downscaled,
    converted) is not refused for what preparing it fixes. With ``body``, a target whose
    network makes the text the media's caption checks it too (a 422 on ``body``, ``caption.*``).
    """
    ids = media_ids(media)
    facts = [facts_of(item) for item in media_in_order(session, workspace_id, ids)]
    for channel in channels:
        broken = media_breaks(accepts_for(channel.kind), facts, body, channel.config)
        if broken is not None and broken.rule.startswith("caption."):
            raise InvalidInput(f"{channel.name} ({channel.kind}) refuses the body as a caption: {broken.message}",
                               field="body", code="too_long", channel=channel.name, rule=broken.rule)
        if broken is not None:
            raise InvalidInput(f"{channel.name} ({channel.kind}) refuses the media: {broken.message}", field="media",
                               code="media_refused", channel=channel.name, rule=broken.rule)
    return ids


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


@dataclass(frozen=True)
class TargetFit:
    """How a post's body and media fit one target, for the composer's counter beside it."""

    channel: Channel
    counts: list[Count]
    broken: Broken | None  # the first rule the body or the media break on this target


def fit_on_targets(session: Session, workspace_id: int, body: str, channels: list[Channel], media) -> list[TargetFit]:
    """Each target's counts of ``body`` (as its network counts) and the first rule the post breaks there.

    What the composer shows live; the save runs :func:`check_body` and :func:`check_media`, the same
    declarations, so a counter in the red is exactly a save that would be refused.
    """
    try:
        facts = [facts_of(item) for item in media_in_order(session, workspace_id, media_ids(media))]
    except InvalidInput:
        facts = []  # the save names the bad id; the counters speak of what is known
    fits = []
    for channel in channels:
        accepts = accepts_for(channel.kind)
        fits.append(TargetFit(channel, text_counts(accepts, channel.config, body or ""),
                              text_breaks(accepts, channel.config, body or "")
                              or media_breaks(accepts, facts, body or "", channel.config)))
    return fits
