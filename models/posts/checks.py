"""What a post must satisfy: its body and its media on each target (as that target's provider declares), its
targets, its wall time, and each target's variant (checked on that target's own text and media)."""

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from models.channels.providers import accepts_for
from models.channels.providers.accepts import Broken, Count, MediaFacts, media_breaks, text_breaks, text_counts, text_rules
from models.channels.tables import CHANNEL_NAME, Channel
from models.core.errors import InvalidInput
from models.core.policy import Policy
from models.core.time_input import resolve_typed
from models.media.library import facts_of, media_in_order
from models.posts.content import VARIANT_FIELDS, content_of
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


def check_body(body, channels: list[Channel], *, field: str = "body") -> str:
    """The body, if every target takes it as its provider counts text; else a 422 naming the channel and the rule."""
    if not isinstance(body, str):
        raise InvalidInput(f"{field} must be a string", field=field, code="wrong_type")
    if not body.strip():
        raise InvalidInput(f"{field} must not be empty", field=field, code="missing")
    if "\x00" in body:
        raise InvalidInput(f"{field} must not contain NUL characters", field=field, code="bad_character")
    for channel in channels:
        broken = text_breaks(accepts_for(channel.kind), channel.config, body)
        if broken is not None:
            raise InvalidInput(f"{channel.name} ({channel.kind}) refuses the {_words(field)}: {broken.message}",
                               field=field, code="too_long", channel=channel.name, rule=broken.rule)
    return body


def _words(field: str) -> str:
    """How a 422 names a field: "body", or "variant's body" for ``variants.<name>.body``."""
    return f"variant's {field.rsplit('.', 1)[1]}" if field.startswith("variants.") else field


def media_ids(media, *, field: str = "media") -> list[int]:
    """The media ids a post names (numbers, or their decimal text as a CSV holds them), checked for shape only."""
    if media is None:
        return []
    if not isinstance(media, list):
        raise InvalidInput(f"{field} must be a list of media ids", field=field, code="wrong_type")
    if len(media) > MAX_MEDIA:
        raise InvalidInput(f"a post has at most {MAX_MEDIA} media items", field=field, code="too_many")
    ids = []
    for item in media:
        if isinstance(item, str) and item.strip().isdecimal() and item.strip().isascii():
            item = int(item.strip())
        if isinstance(item, str) and MEDIA_URL.match(item[:MAX_MEDIA_URL + 1]):
            raise InvalidInput(f"{item[:80]!r} is a link: put it in the media library first (the API and the "
                               "composer fetch links when the post is saved) and name its id",
                               field=field, code="bad_link")
        if isinstance(item, bool) or not isinstance(item, int) or not 1 <= item <= MAX_ID:
            raise InvalidInput(f"{str(item)[:80]!r} is not a media id", field=field, code="bad_media_id")
        ids.append(item)
    if len(set(ids)) != len(ids):
        raise InvalidInput("a media item is named twice", field=field, code="duplicate")
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


def check_variants(session: Session, workspace_id: int, variants, channels: list[Channel]) -> dict | None:
    """The variants' shape, in target order: an object keyed by the name of a target, each ``{"body"?, "media"?}``
    (at least one), the media in this workspace's library. None when there are none.

    Only the shape is checked here; :func:`check_content` holds each target's own text and media to its rules.
    """
    if variants is None:
        return None
    if not isinstance(variants, dict):
        raise InvalidInput("variants must be an object keyed by target channel name", field="variants",
                           code="wrong_type")
    names = [channel.name for channel in channels]
    checked = {}
    for name, variant in variants.items():
        if name not in names:
            raise InvalidInput(f"variants names {str(name)[:63]!r}, which is not a target of this post; "
                               f"its targets are {', '.join(names)}", field="variants", code="unknown_target",
                               channel=str(name)[:63])
        field = f"variants.{name}"
        if not isinstance(variant, dict):
            raise InvalidInput(f"{field} must be an object with a body, media or both", field=field,
                               code="wrong_type")
        unknown = sorted(set(variant) - set(VARIANT_FIELDS))
        if unknown:
            raise InvalidInput(f"unknown field {str(unknown[0])[:40]!r} in {field}; expected body, media",
                               field=f"{field}.{str(unknown[0])[:40]}", code="unknown_field")
        own = {}
        if "body" in variant:
            own["body"] = check_body(variant["body"], [], field=f"{field}.body")
        if "media" in variant:
            if variant["media"] is None:
                raise InvalidInput(f"{field}.media must be a list of media ids", field=f"{field}.media",
                                   code="wrong_type")
            own["media"] = media_ids(variant["media"], field=f"{field}.media")
            media_in_order(session, workspace_id, own["media"], field=f"{field}.media")
        if not own:
            raise InvalidInput(f"{field} gives neither a body nor media; leave the target out of variants to send it "
                               "the main post", field=field, code="missing")
        checked[name] = own
    return {name: checked[name] for name in names if name in checked} or None


def check_content(session: Session, workspace_id: int, body, media, variants, channels: list[Channel],
                  ) -> tuple[str, list[int], dict | None]:
    """The main body and media and the variants, each target held to its rules on its own content.

    A target with a variant is checked on what goes there (:func:`~models.posts.content.content_of`)
    and not on what it replaces, so a variant too long for one network is refused for that target
    only: a 422 on ``variants.<name>.body`` (or ``.media``) naming the channel and the rule.
    """
    own = check_variants(session, workspace_id, variants, channels)
    tailored = own or {}
    main_text = [channel for channel in channels if "body" not in tailored.get(channel.name, {})]
    untouched = [channel for channel in main_text if channel.name not in tailored]
    body = check_body(body, main_text)
    media = check_media(session, workspace_id, media, untouched, body)
    for channel in channels:
        variant = tailored.get(channel.name)
        if variant is not None:
            _check_tailored(session, workspace_id, channel, body, media, variant)
    return body, media, own


def _check_tailored(session: Session, workspace_id: int, channel: Channel, body: str, media: list[int],
                    variant: dict) -> None:
    """One target's own text and media (its variant's, the main post's for what the variant leaves out)."""
    text, items = content_of(body, media, {channel.name: variant}, channel.name)
    body_field = f"variants.{channel.name}.body" if "body" in variant else "body"
    media_field = f"variants.{channel.name}.media" if "media" in variant else "media"
    check_body(text, [channel], field=body_field)
    facts = [facts_of(item) for item in media_in_order(session, workspace_id, items, field=media_field)]
    broken = media_breaks(accepts_for(channel.kind), facts, text, channel.config)
    if broken is not None and broken.rule.startswith("caption."):
        raise InvalidInput(f"{channel.name} ({channel.kind}) refuses the {_words(body_field)} as a caption: "
                           f"{broken.message}", field=body_field, code="too_long", channel=channel.name,
                           rule=broken.rule)
    if broken is not None:
        raise InvalidInput(f"{channel.name} ({channel.kind}) refuses the {_words(media_field)}: {broken.message}",
                           field=media_field, code="media_refused", channel=channel.name, rule=broken.rule)


def check_texts(body: str, variants: dict | None, channels: list[Channel]) -> None:
    """Each target's own text against its rules again (approve, Post now: a channel's limit may have changed)."""
    for channel in channels:
        text, _ = content_of(body, [], variants, channel.name)
        tailored = "body" in ((variants or {}).get(channel.name) or {})
        check_body(text, [channel], field=f"variants.{channel.name}.body" if tailored else "body")


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


def fit_on_targets(session: Session, workspace_id: int, body: str, channels: list[Channel], media,
                   variants: dict | None = None) -> list[TargetFit]:
    """Each target's counts of its own text (as its network counts) and the first rule the post breaks there.

    What the composer shows live; the save runs :func:`check_content`, the same declarations on the
    same content (:func:`~models.posts.content.content_of`: the target's variant, else the main
    post), so a counter in the red is exactly a save that would be refused.
    """
    fits = []
    for channel in channels:
        text, items = content_of(body or "", media, variants, channel.name)
        facts = known_facts(session, workspace_id, items)
        accepts = accepts_for(channel.kind)
        fits.append(TargetFit(channel, text_counts(accepts, channel.config, text),
                              text_breaks(accepts, channel.config, text)
                              or media_breaks(accepts, facts, text, channel.config)))
    return fits


def known_facts(session: Session, workspace_id: int, media) -> list[MediaFacts]:
    """The facts of the media a composer names, in order; nothing while one is not a library id (the save names it)."""
    try:
        return [facts_of(item) for item in media_in_order(session, workspace_id, media_ids(media))]
    except InvalidInput:
        return []
