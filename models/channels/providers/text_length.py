"""Text length as each network counts it: code points, graphemes, UTF-8 bytes, X's weighting, links at a fixed
length, emoji at their UTF-8 bytes (Threads).

Every counter takes the text exactly as it will be sent and answers one whole number, so
the check at save, the composer's counter beside each target and the send agree. The names
(:data:`COUNTERS`) are what a declaration's :class:`~.accepts.TextRule` and the 422 say.
"""

import unicodedata

import regex

# A link as the networks that shorten them find it (X's t.co, Mastodon): a scheme, then no space.
_LINK = regex.compile(r"https?://[^\s<>\"]+", regex.IGNORECASE)
_GRAPHEME = regex.compile(r"\X")
# An emoji sequence (one or more pictographs joined, with their modifiers), which X counts as one weight-200 unit.
_EMOJI = regex.compile(r"(?:\p{Extended_Pictographic}|\p{Regional_Indicator})"
                       r"(?:[\uFE0F\u20E3\p{Emoji_Modifier}]|\u200D(?:\p{Extended_Pictographic}))*")
# twitter-text's configuration v3: these ranges weigh 100 (one unit), everything else 200.
_X_LIGHT = ((0x0000, 0x10FF), (0x2000, 0x200D), (0x2010, 0x201F), (0x2032, 0x2037))
X_LINK_LENGTH = 23
MASTODON_LINK_LENGTH = 23


def characters(text: str) -> int:
    """Unicode code points (what Python's ``len`` counts)."""
    return len(text)


def graphemes(text: str) -> int:
    """User-perceived characters (extended grapheme clusters, UAX #29): an emoji with its modifiers is one."""
    return len(_GRAPHEME.findall(text))


def utf8_bytes(text: str) -> int:
    """The text's length in UTF-8 bytes."""
    return len(text.encode("utf-8"))


def _x_weight(char: str) -> int:
    point = ord(char)
    return 1 if any(low <= point <= high for low, high in _X_LIGHT) else 2


def x_weighted(text: str) -> int:
    """X's count: NFC-normalised, each link 23, each emoji sequence 2, CJK and other heavy scripts 2, the rest 1.

    X's limit of 280 is in these units (twitter-text's weighted length divided by its scale of 100).
    """
    text = unicodedata.normalize("NFC", text)
    total = 0
    position = 0
    for link in _LINK.finditer(text):
        total += _x_plain(text[position:link.start()]) + X_LINK_LENGTH
        position = link.end()
    return total + _x_plain(text[position:])


def _x_plain(text: str) -> int:
    total = 0
    position = 0
    for emoji in _EMOJI.finditer(text):
        total += sum(_x_weight(char) for char in text[position:emoji.start()]) + 2
        position = emoji.end()
    return total + sum(_x_weight(char) for char in text[position:])


def links_as_23(text: str, link_length: int = MASTODON_LINK_LENGTH) -> int:
    """Mastodon's count: code points, every link counting 23 whatever its length (or what the instance reserves)."""
    total = 0
    position = 0
    for link in _LINK.finditer(text):
        total += len(text[position:link.start()]) + link_length
        position = link.end()
    return total + len(text[position:])


def emoji_as_utf8(text: str) -> int:
    """Threads' count: code points, each emoji sequence counting as its UTF-8 bytes (a thumbs-up is 4)."""
    total = 0
    position = 0
    for emoji in _EMOJI.finditer(text):
        total += len(text[position:emoji.start()]) + len(emoji.group().encode("utf-8"))
        position = emoji.end()
    return total + len(text[position:])


# A rule's ``counted_as`` names one of these; the words say what the number means.
COUNTERS = {
    "characters": (characters, "characters"),
    "graphemes": (graphemes, "graphemes"),
    "utf8_bytes": (utf8_bytes, "UTF-8 bytes"),
    "x_weighted": (x_weighted, "weighted characters (links 23, CJK and emoji 2)"),
    "links_as_23": (links_as_23, "characters (links 23)"),
    "emoji_as_utf8": (emoji_as_utf8, "characters (emoji as their UTF-8 bytes)"),
}
