"""What a provider accepts: the one declaration each provider module makes, read by the save, the composer and the send.

A provider module sets ``accepts = Accepts(...)``: its text rules (each a limit counted the
way the network counts, :mod:`.text_length`) and its media rules (how many items, which
kinds and formats, bytes, sides, aspect ratios, alt text, video length, and whether an
image too heavy or too large may be downscaled for it). Nothing else is needed for a new
network: the checks at save (:func:`text_breaks`, :func:`media_breaks`), the composer's
counters and the preparation at send (``models.media.preparing``) all read this.

A broken rule is a :class:`Broken`: the rule's name (``text.graphemes``, ``image.bytes``,
``media.count``...) and a sentence naming the item and the limit, which the 422 carries
with the channel's name.
"""

from dataclasses import dataclass

from models.channels.providers.text_length import COUNTERS

IMAGE, GIF, VIDEO = "image", "gif", "video"
JPEG, PNG, WEBP, GIF_MIME = "image/jpeg", "image/png", "image/webp", "image/gif"
MP4, QUICKTIME = "video/mp4", "video/quicktime"
# How a provider wants the media of a post: uploaded by Tickwork (the prepared bytes in
# ``Delivery.media``), fetched by the network from a signed URL, or only named by id in the payload.
UPLOAD, URL, BY_ID = "upload", "url", "by_id"


@dataclass(frozen=True)
class TextRule:
    """At most ``limit`` of what ``counted_as`` counts (a name in :data:`~.text_length.COUNTERS`)."""

    limit: int
    counted_as: str = "characters"
    # What a link counts for ``links_as_23`` when the instance reserves other than 23 (its own answer).
    link_length: int | None = None

    def __post_init__(self):
        if self.counted_as not in COUNTERS:
            raise ValueError(f"unknown text counter {self.counted_as!r}; one of {', '.join(COUNTERS)}")
        if self.link_length is not None and self.counted_as != "links_as_23":
            raise ValueError("only links_as_23 counts links at a length of the network's choosing")

    @property
    def name(self) -> str:
        return f"text.{self.counted_as}"

    def count(self, text: str) -> int:
        if self.link_length is not None:
            return COUNTERS[self.counted_as][0](text, self.link_length)
        return COUNTERS[self.counted_as][0](text)

    @property
    def unit(self) -> str:
        if self.link_length is not None:
            return f"characters (links {self.link_length})"
        return COUNTERS[self.counted_as][1]


@dataclass(frozen=True)
class ImageRule:
    """What a still image (or a GIF) must be on this network."""

    formats: frozenset[str] = frozenset({JPEG, PNG, WEBP})
    max_bytes: int | None = None
    max_side: int | None = None  # the longer side, in pixels
    min_side: int | None = None  # the shorter side, in pixels
    aspect: tuple[float, float] | None = None  # (min, max) of width / height
    # Whether an image too heavy, too large or of another format may be re-encoded for this
    # network (downscaled, recompressed, converted to JPEG or PNG): then those rules are
    # met at send time, not refused at save.
    may_prepare: bool = False


@dataclass(frozen=True)
class VideoRule:
    """What a video must be on this network; a length Tickwork could not read is not refused."""

    formats: frozenset[str] = frozenset({MP4, QUICKTIME})
    max_bytes: int | None = None
    max_seconds: float | None = None
    min_seconds: float | None = None


@dataclass(frozen=True)
class MediaRules:
    """How many media items, of which kinds, each under its kind's rule."""

    max_items: int = 4
    image: ImageRule | None = ImageRule()
    gif: ImageRule | None = None
    video: VideoRule | None = None
    alt_max: int | None = None  # characters of alt text per item
    video_alone: bool = True  # a video (or a GIF) is the post's only item
    delivery: str = UPLOAD
    # The network takes no post without media (Instagram): a text-only post is refused at save
    # (rule ``media.required``).
    required: bool = False
    # On a network where a post with media carries its text as the media's caption, with a limit of its own
    # (Telegram: 1,024 characters of caption against 4,096 of a message), the text must also meet this rule.
    caption: TextRule | None = None

    def rule_for(self, kind: str):
        return {IMAGE: self.image, GIF: self.gif, VIDEO: self.video}.get(kind)


@dataclass(frozen=True)
class Accepts:
    """One provider's declaration. ``media=None``: the network takes no media (a post with some is refused)."""

    text: tuple[TextRule, ...] = (TextRule(10_000),)
    media: MediaRules | None = None
    # A channel's config may lower the first text rule's limit with this key (never raise it)...
    config_limit: str = "max_length"
    # ...unless the setting is the network's own answer (a Mastodon instance's limit, read when the channel
    # is saved), which may raise it as well.
    config_limit_may_raise: bool = False
    # A channel's config may lower the media rules' ``max_items`` with this key.
    config_media_limit: str = "max_media_attachments"
    # With this key a channel's config says what a link counts (Mastodon's ``characters_reserved_per_url``),
    # for a first text rule counted ``links_as_23``.
    config_link_length: str = "characters_reserved_per_url"


# Kinds whose module declares nothing: text up to 10,000 characters, media only named by id.
DEFAULT = Accepts(media=MediaRules(max_items=10, image=ImageRule(formats=frozenset({JPEG, PNG, WEBP, GIF_MIME})),
                                   gif=ImageRule(formats=frozenset({GIF_MIME})), video=VideoRule(), video_alone=False,
                                   delivery=BY_ID))


@dataclass(frozen=True)
class Broken:
    """A rule a post breaks on one channel."""

    rule: str
    message: str


@dataclass(frozen=True)
class MediaFacts:
    """What the checks need of one media item (the library's row, or what preparing it will produce)."""

    media_id: int
    kind: str
    mime: str
    bytes: int
    width: int | None = None
    height: int | None = None
    duration: float | None = None  # seconds, when it could be read
    alt: str = ""


def text_rules(accepts: Accepts, config: dict | None) -> tuple[TextRule, ...]:
    """The declaration's text rules, the first lowered by the channel's ``config_limit`` setting if it sets one."""
    rules = accepts.text
    configured = (config or {}).get(accepts.config_limit)
    if (rules and _whole(configured) and 0 < configured != rules[0].limit
            and (configured < rules[0].limit or accepts.config_limit_may_raise)):
        rules = (TextRule(configured, rules[0].counted_as, rules[0].link_length), *rules[1:])
    link_length = (config or {}).get(accepts.config_link_length)
    if (rules and rules[0].counted_as == "links_as_23" and _whole(link_length) and 0 < link_length <= 1000
            and link_length != rules[0].link_length):
        rules = (TextRule(rules[0].limit, rules[0].counted_as, link_length), *rules[1:])
    return rules


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def max_items(accepts: Accepts, config: dict | None) -> int:
    """How many media items a post may have on a channel: the declaration's, lowered by the channel's setting."""
    declared = accepts.media.max_items if accepts.media is not None else 0
    configured = (config or {}).get(accepts.config_media_limit)
    return configured if _whole(configured) and 0 < configured < declared else declared


@dataclass(frozen=True)
class Count:
    """One text rule's count of a text, for the composer: ``used`` of ``limit``."""

    rule: TextRule
    used: int

    @property
    def over(self) -> bool:
        return self.used > self.rule.limit

    @property
    def left(self) -> int:
        return self.rule.limit - self.used


def text_counts(accepts: Accepts, config: dict | None, text: str) -> list[Count]:
    return [Count(rule, rule.count(text)) for rule in text_rules(accepts, config)]


def text_breaks(accepts: Accepts, config: dict | None, text: str) -> Broken | None:
    """The first text rule ``text`` breaks, or None."""
    for counted in text_counts(accepts, config, text):
        if counted.over:
            return Broken(counted.rule.name, f"the text is {counted.used:,} {counted.rule.unit}; "
                                             f"at most {counted.rule.limit:,}")
    return None


def media_breaks(accepts: Accepts, items: list[MediaFacts], text: str | None = None,
                 config: dict | None = None) -> Broken | None:
    """The first media rule ``items`` break on this network (with ``text`` as their caption, if given), or None
    (no items break only ``required``).

    An image rule the network lets Tickwork meet by preparing the image (bytes, sides,
    format) is not broken: the send prepares it. Aspect ratio and alt text are never fixed.
    """
    rules = accepts.media
    if not items:
        if rules is not None and rules.required:
            return Broken("media.required", "this channel takes no post without an image or a video")
        return None
    if rules is None:
        return Broken("media.none", "this channel takes no media")
    most = max_items(accepts, config)
    if len(items) > most:
        return Broken("media.count", f"{len(items)} media items; at most {most}")
    if text is not None and rules.caption is not None:
        used = rules.caption.count(text)
        if used > rules.caption.limit:
            return Broken(f"caption.{rules.caption.counted_as}",
                          f"with media the text is their caption: {used:,} {rules.caption.unit}; "
                          f"at most {rules.caption.limit:,}")
    if rules.video_alone and len(items) > 1 and any(item.kind in (VIDEO, GIF) for item in items):
        return Broken("media.video_alone", "a video or a GIF must be the post's only media item")
    for number, item in enumerate(items, 1):
        broken = _item_breaks(rules, item)
        if broken is not None:
            return Broken(broken.rule, f"media item {number} (id {item.media_id}): {broken.message}")
    return None


def _item_breaks(rules: MediaRules, item: MediaFacts) -> Broken | None:
    if rules.alt_max is not None and len(item.alt or "") > rules.alt_max:
        return Broken("alt.length", f"its alt text is {len(item.alt):,} characters; at most {rules.alt_max:,}")
    rule = rules.rule_for(item.kind)
    if rule is None:
        return Broken(f"{item.kind}.kind", f"this channel takes no {item.kind}")
    if isinstance(rule, VideoRule):
        return _video_breaks(rule, item)
    return _image_breaks(rule, item)


def _video_breaks(rule: VideoRule, item: MediaFacts) -> Broken | None:
    if item.mime not in rule.formats:
        return Broken("video.format", f"{item.mime} is not one of {', '.join(sorted(rule.formats))}")
    if rule.max_bytes is not None and item.bytes > rule.max_bytes:
        return Broken("video.bytes", f"{item.bytes:,} bytes; at most {rule.max_bytes:,}")
    if item.duration is not None:
        if rule.max_seconds is not None and item.duration > rule.max_seconds:
            return Broken("video.duration", f"{item.duration:.1f} s long; at most {rule.max_seconds:g} s")
        if rule.min_seconds is not None and item.duration < rule.min_seconds:
            return Broken("video.duration", f"{item.duration:.1f} s long; at least {rule.min_seconds:g} s")
    return None


def _image_breaks(rule: ImageRule, item: MediaFacts) -> Broken | None:
    kind = item.kind
    if rule.aspect is not None and item.width and item.height:
        ratio = item.width / item.height
        low, high = rule.aspect
        if not low <= ratio <= high:
            return Broken(f"{kind}.aspect_ratio", f"its aspect ratio is {ratio:.2f}; between {low:g} and {high:g}")
    if rule.min_side is not None and item.width and item.height and min(item.width, item.height) < rule.min_side:
        return Broken(f"{kind}.min_side", f"{item.width}×{item.height} px; each side at least {rule.min_side} px")
    preparable = rule.may_prepare and kind == IMAGE
    if item.mime not in rule.formats and not preparable:
        return Broken(f"{kind}.format", f"{item.mime} is not one of {', '.join(sorted(rule.formats))}")
    if rule.max_bytes is not None and item.bytes > rule.max_bytes and not preparable:
        return Broken(f"{kind}.bytes", f"{item.bytes:,} bytes; at most {rule.max_bytes:,}")
    if (rule.max_side is not None and item.width and item.height and max(item.width, item.height) > rule.max_side
            and not preparable):
        return Broken(f"{kind}.max_side", f"{item.width}×{item.height} px; the longer side at most {rule.max_side} px")
    return None


__all__ = ["Accepts", "Broken", "Count", "DEFAULT", "ImageRule", "MediaFacts", "MediaRules", "TextRule", "VideoRule",
           "max_items", "media_breaks", "text_breaks", "text_counts", "text_rules"]
