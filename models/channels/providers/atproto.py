"""What a Bluesky post is made of, without the network: its record key (a TID) and its rich-text facets.

A **TID** (timestamp identifier) is AT Protocol's record key for posts: 64 bits, the top one
zero, then 53 bits of microseconds since the Unix epoch and 10 bits of "clock id", written as 13
characters of base32-sortable (``234567abcdefghijklmnopqrstuvwxyz``). Tickwork derives its own
from the row, :func:`tid_for` (its ``created_at`` in microseconds, its id modulo 1024 as the clock
id), so every attempt at a row names the same record and a second create of it cannot make a
second post.

**Facets** mark links, mentions and hashtags in a post's text, by **UTF-8 byte** offsets
(``app.bsky.richtext.facet``: start inclusive, end exclusive). :func:`facets_of` finds them the
way Bluesky's own client does (``@atproto/api``'s ``detectFacets``): ``http(s)://`` links with a
trailing ``.,;:!?`` (and an unmatched ``)``) left out, ``@handle`` mentions whose handle the
given resolver turns into a DID (an unresolved one stays plain text), and ``#tags`` of at most
64 graphemes without their trailing punctuation. Bare domains without a scheme are not linked.
"""

from collections.abc import Callable
from datetime import datetime, timezone

import regex

S32 = "234567abcdefghijklmnopqrstuvwxyz"
TID_PATTERN = regex.compile(r"^[234567abcdefghij][234567abcdefghijklmnopqrstuvwxyz]{12}$")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
CLOCK_IDS = 1024  # 10 bits


def tid(microseconds: int, clock_id: int) -> str:
    """The TID of a timestamp (microseconds since the epoch, 53 bits) and a clock id (10 bits)."""
    if not 0 <= microseconds < 2**53:
        raise ValueError("a TID's timestamp is 0 to 2**53 - 1 microseconds since the epoch")
    if not 0 <= clock_id < CLOCK_IDS:
        raise ValueError("a TID's clock id is 0 to 1023")
    value = (microseconds << 10) | clock_id
    return "".join(S32[(value >> (5 * place)) & 31] for place in range(12, -1, -1))


def tid_parts(text: str) -> tuple[int, int]:
    """(microseconds, clock id) of a TID; raises ValueError for a string that is not one."""
    if not TID_PATTERN.match(text):
        raise ValueError(f"{text!r} is not a TID")
    value = 0
    for char in text:
        value = value * 32 + S32.index(char)
    return value >> 10, value & (CLOCK_IDS - 1)


def tid_for(created_at: datetime, action_id: int) -> str:
    """The record key of a row's post: the same for every attempt at it."""
    if created_at.tzinfo is None:
        raise ValueError("created_at must be timezone-aware (UTC)")
    delta = created_at - _EPOCH
    microseconds = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    return tid(microseconds, action_id % CLOCK_IDS)


# As @atproto/api's rich-text/util.ts.
_MENTION = regex.compile(r"(?:^|(?<=[\s(]))@([a-zA-Z0-9.-]+)\b")
_LINK = regex.compile(r"(?:^|(?<=[\s(]))(https?://\S+)", regex.IGNORECASE)
_ZW = "\u00AD\u2060\u200A\u200B\u200C\u200D\u20e2"
_TAG = regex.compile(rf"(?:^|(?<=\s))[#＃]((?!\ufe0f)[^\s{_ZW}]*[^\d\s\p{{P}}{_ZW}]+[^\s{_ZW}]*)?")
_TRAILING_PUNCTUATION = regex.compile(r"\p{P}+$")
_HANDLE = regex.compile(r"^([a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\.)+[a-zA-Z]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?$")
_GRAPHEME = regex.compile(r"\X")
FACET = "app.bsky.richtext.facet"
MAX_TAG_GRAPHEMES = 64


def is_handle(text: str) -> bool:
    """A syntactically valid handle (a domain name of two labels or more), as a mention names one."""
    return len(text) <= 253 and bool(_HANDLE.match(text))


def byte_offset(text: str, index: int) -> int:
    """The UTF-8 byte offset of the character at ``index`` (a Python string index)."""
    return len(text[:index].encode("utf-8"))


def mentioned_handles(text: str) -> list[str]:
    """The handles the text mentions (``@alice.bsky.social``), in order, each once."""
    return list(dict.fromkeys(match.group(1) for match in _MENTION.finditer(text) if is_handle(match.group(1))))


def links_in(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, uri)`` of each link, as Python string indexes, trailing punctuation left out."""
    found = []
    for match in _LINK.finditer(text):
        uri, start = match.group(1), match.start(1)
        if uri[-1] in ".,;:!?":
            uri = uri[:-1]
        if uri.endswith(")") and "(" not in uri:
            uri = uri[:-1]
        found.append((start, start + len(uri), uri))
    return found


def _facet(text: str, start: int, end: int, feature: dict) -> dict:
    return {"index": {"byteStart": byte_offset(text, start), "byteEnd": byte_offset(text, end)}, "features": [feature]}


def facets_of(text: str, resolve: Callable[[str], str | None] = lambda handle: None) -> list[dict]:
    """The post's facets, in the order of their place in the text; ``resolve(handle)`` gives a mention's DID or None."""
    facets: list[tuple[int, dict]] = []
    dids: dict[str, str | None] = {}
    for match in _MENTION.finditer(text):
        handle = match.group(1)
        if not is_handle(handle):
            continue
        if handle not in dids:
            dids[handle] = resolve(handle)
        if dids[handle]:
            start = match.start()  # the "@"
            facets.append((start, _facet(text, start, match.end(1), {"$type": f"{FACET}#mention", "did": dids[handle]})))
    for start, end, uri in links_in(text):
        facets.append((start, _facet(text, start, end, {"$type": f"{FACET}#link", "uri": uri})))
    for match in _TAG.finditer(text):
        tag = match.group(1)
        if not tag:
            continue
        tag = _TRAILING_PUNCTUATION.sub("", tag.strip())
        if not tag or len(_GRAPHEME.findall(tag)) > MAX_TAG_GRAPHEMES:
            continue
        start = match.start()  # the "#"
        facets.append((start, _facet(text, start, start + 1 + len(tag), {"$type": f"{FACET}#tag", "tag": tag})))
    facets.sort(key=lambda pair: pair[0])
    return [facet for _, facet in facets]
