"""How each network shows a post's text: which links it makes clickable and how it shortens them, which
``@mentions`` and ``#tags`` it marks, and what it calls itself. The composer's preview reads this.

One table for every kind (:data:`SHOWN`), beside the length rules in :mod:`.accepts`: what differs
between networks is data. A mention is marked where the network would mark it by its syntax alone;
whether the account exists is known only when the post is sent (Bluesky's facets, for one, resolve
handles then), so the preview shows what the syntax promises.
"""

from dataclasses import dataclass
from typing import Callable

import regex

from models.channels.providers.atproto import _MENTION as BLUESKY_MENTION
from models.channels.providers.atproto import _TAG as BLUESKY_TAG
from models.channels.providers.atproto import is_handle, links_in

TEXT, LINK, MENTION, TAG = "text", "link", "mention", "tag"

X_MENTION = regex.compile(r"(?<![\w@])@(\w{1,15})\b")
FEDIVERSE_MENTION = regex.compile(r"(?<![\w@/])@(\w+(?:@[\w-]+(?:\.[\w-]+)+)?)")
META_MENTION = regex.compile(r"(?<![\w@])@([\w.]{1,30})(?<!\.)")
HASHTAG = regex.compile(r"(?<![\w#&])#(\w*[^\W\d]\w*)")


@dataclass(frozen=True)
class Segment:
    """A run of a post's text as the network shows it: plain, a link (``href``), a mention or a tag."""

    kind: str
    text: str
    href: str | None = None


def _as_written(url: str) -> str:
    return url


def _without_scheme(url: str) -> str:
    return regex.sub(r"^https?://(www\.)?", "", url, flags=regex.IGNORECASE)


def _x_display(url: str) -> str:
    """X shows a t.co link's address without its scheme, cut after 23 characters with an ellipsis."""
    shown = _without_scheme(url)
    return shown if len(shown) <= 23 else shown[:23] + "…"


def _mastodon_display(url: str) -> str:
    """Mastodon shows the address without its scheme and ``www.``, cut after 30 characters with an ellipsis."""
    shown = _without_scheme(url)
    return shown if len(shown) <= 30 else shown[:30] + "…"


def _bluesky_display(url: str) -> str:
    """Bluesky's client shows host and path without the scheme, a path past 15 characters cut to 13 and "..."."""
    shown = regex.sub(r"^https?://", "", url, flags=regex.IGNORECASE)
    host, slash, path = shown.partition("/")
    path = slash + path
    return host + (path[:13] + "..." if len(path) > 15 else path)


@dataclass(frozen=True)
class Shown:
    """How one network shows text."""

    network: str  # what it calls itself
    links: bool = True  # links are clickable (Instagram's captions are not)
    link_text: Callable[[str], str] = _as_written
    mention: regex.Pattern | None = None  # what it marks as a mention, group 1 the handle
    tags: regex.Pattern | None = None  # what it marks as a hashtag
    handle_check: Callable[[str], bool] | None = None


SHOWN: dict[str, Shown] = {
    "x": Shown("X", link_text=_x_display, mention=X_MENTION, tags=HASHTAG),
    "bluesky": Shown("Bluesky", link_text=_bluesky_display, mention=BLUESKY_MENTION, tags=BLUESKY_TAG,
                     handle_check=is_handle),
    "mastodon": Shown("Mastodon", link_text=_mastodon_display, mention=FEDIVERSE_MENTION, tags=HASHTAG),
    "threads": Shown("Threads", link_text=_without_scheme, mention=META_MENTION, tags=HASHTAG),
    "instagram": Shown("Instagram", links=False, mention=META_MENTION, tags=HASHTAG),
    "facebook": Shown("Facebook", tags=HASHTAG),  # a mention needs a tag made in Facebook's own editor
    "linkedin": Shown("LinkedIn", tags=HASHTAG),  # a mention needs LinkedIn's markup, not an @name
    "telegram": Shown("Telegram", mention=X_MENTION, tags=HASHTAG),
    "discord": Shown("Discord"),
    "slack": Shown("Slack"),
    "smtp": Shown("Email"),
    "postmark": Shown("Email"),
    "twilio": Shown("SMS", links=False),
    "webhook": Shown("Webhook", links=False),
    "log": Shown("Log", links=False),
}
PLAIN = Shown("Text")


def shown_for(kind: str) -> Shown:
    """How a channel of ``kind`` shows text (plain, links clickable, for a kind not listed)."""
    return SHOWN.get(kind, PLAIN)


def segments_of(text: str, kind: str) -> list[Segment]:
    """``text`` cut into the runs the network ``kind`` shows: plain text, links, mentions and tags, in order."""
    shown = shown_for(kind)
    found: list[tuple[int, int, Segment]] = []
    if shown.links:
        found += [(start, end, Segment(LINK, shown.link_text(uri), uri)) for start, end, uri in links_in(text)]
    if shown.mention is not None:
        for match in shown.mention.finditer(text):
            handle = match.group(1)
            if shown.handle_check is None or shown.handle_check(handle):
                start = text.rfind("@", 0, match.start(1))
                found.append((start, match.end(1), Segment(MENTION, text[start:match.end(1)])))
    if shown.tags is not None:
        for match in shown.tags.finditer(text):
            if match.group(1):
                tag = regex.sub(r"\p{P}+$", "", match.group(1))
                if tag:
                    start = match.start()
                    found.append((start, start + 1 + len(tag), Segment(TAG, text[start:start + 1 + len(tag)])))
    found.sort(key=lambda item: (item[0], -item[1]))
    segments, position = [], 0
    for start, end, segment in found:
        if start < position:
            continue  # inside a link already marked (an @ or a # in its address)
        if start > position:
            segments.append(Segment(TEXT, text[position:start]))
        segments.append(segment)
        position = end
    if position < len(text):
        segments.append(Segment(TEXT, text[position:]))
    return segments
