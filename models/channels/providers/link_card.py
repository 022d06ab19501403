"""A link's preview card: the page fetched through the egress policy, its Open Graph title, description and image.

A network that shows a card for a link Tickwork posts (Bluesky's ``app.bsky.embed.external``)
builds it from what the page says of itself::

    <meta property="og:title" content="...">        else <title>, else the link itself
    <meta property="og:description" content="...">  else <meta name="description">, else ""
    <meta property="og:image" content="...">        the thumbnail, fetched and checked by Pillow

Everything is bounded, as the page is anybody's: each fetch goes through ``context.http`` (so
the egress policy checks every address, a redirect included), follows at most
:data:`MAX_REDIRECTS` redirects, waits at most :data:`FETCH_TIMEOUT` seconds (less when the
send has less left), and reads at most :data:`PAGE_BYTES` of the page and :data:`IMAGE_BYTES`
of the image. A page that does not load, is not HTML or says nothing gives a card with the link
as its title and no image: a card never stops a post.
"""

import io
from dataclasses import dataclass
from html.parser import HTMLParser
from urllib.parse import urljoin

import httpx

from models.channels.providers.base import SendContext
from models.core.egress import shown_text

PAGE_BYTES = 512 * 1024  # the <head> is what matters; a page's first half-megabyte holds it
IMAGE_BYTES = 10 * 1000 * 1000
FETCH_TIMEOUT = 5.0
MAX_REDIRECTS = 3
TITLE_CHARS = 300
DESCRIPTION_CHARS = 1000
USER_AGENT = "Tickwork link preview"


@dataclass(frozen=True)
class Card:
    uri: str
    title: str
    description: str = ""
    image: bytes | None = None  # as the page serves it: the caller prepares it for its network
    image_mime: str | None = None


class _Head(HTMLParser):
    """Reads the Open Graph tags, <title> and the description from a page (stops caring after </head>)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.meta: dict[str, str] = {}
        self.title: str | None = None
        self._in_title = False
        self._title_parts: list[str] = []
        self.done = False

    def handle_starttag(self, tag, attrs):
        if self.done:
            return
        values = {name.lower(): (value or "") for name, value in attrs}
        if tag == "meta":
            key = (values.get("property") or values.get("name") or "").strip().lower()
            if key in ("og:title", "og:description", "og:image", "og:image:url", "og:image:secure_url",
                       "description", "twitter:title", "twitter:description", "twitter:image") \
                    and key not in self.meta and values.get("content", "").strip():
                self.meta[key] = values["content"].strip()
        elif tag == "title" and self.title is None:
            self._in_title = True

    def handle_data(self, data):
        if self._in_title:
            self._title_parts.append(data)

    def handle_endtag(self, tag):
        if tag == "title" and self._in_title:
            self._in_title = False
            self.title = " ".join("".join(self._title_parts).split())
        elif tag in ("head", "body"):
            self.done = True


def _fetch(context: SendContext, url: str, *, limit: int, timeout: float,
           whole: bool) -> tuple[str, httpx.Response, bytes] | None:
    """GET ``url`` (following a few redirects, each checked by the egress policy): its final URL, the answer and at most
    ``limit`` bytes of its body; None on any failure, a non-2xx answer, or (``whole``) a body over the limit."""
    for _ in range(MAX_REDIRECTS + 1):
        try:
            with context.http.stream("GET", url, timeout=timeout, headers={"User-Agent": USER_AGENT,
                                                                           "Accept": "text/html,image/*;q=0.9"}) as answer:
                if answer.is_redirect and answer.headers.get("Location"):
                    url = urljoin(url, answer.headers["Location"])
                    continue
                if not answer.is_success:
                    return None
                declared = answer.headers.get("Content-Length")
                if declared and declared.isdecimal() and int(declared) > limit and whole:
                    return None
                data = bytearray()
                for chunk in answer.iter_bytes():
                    data += chunk
                    if len(data) >= limit:
                        if whole:
                            return None  # an image cut short is no image
                        break  # a page: its head is in what was read
                return url, answer, bytes(data[:limit])
        except (httpx.HTTPError, ValueError):
            return None
    return None


def _image(context: SendContext, page_url: str, src: str, timeout: float) -> tuple[bytes, str] | None:
    """The image at ``src`` if Pillow reads it as one (within its decompression-bomb limit)."""
    from PIL import Image, UnidentifiedImageError

    url = urljoin(page_url, src)
    if not url.startswith(("https://", "http://")):
        return None
    fetched = _fetch(context, url, limit=IMAGE_BYTES, timeout=timeout, whole=True)
    if fetched is None:
        return None
    data = fetched[2]
    try:
        with Image.open(io.BytesIO(data)) as image:
            image.verify()
            mime = Image.MIME.get(image.format or "")
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError, Image.DecompressionBombError):
        return None
    return (data, mime) if mime else None


def card_for(uri: str, context: SendContext, *, timeout: float | None = None) -> Card:
    """The card of ``uri``: what its page says of itself, or just the link when the page says nothing or fails."""
    timeout = max(0.1, min(FETCH_TIMEOUT, timeout if timeout is not None else context.timeout))
    if context.http is None:
        return Card(uri, uri)
    fetched = _fetch(context, uri, limit=PAGE_BYTES, timeout=timeout, whole=False)
    if fetched is None:
        return Card(uri, uri)
    final_url, answer, data = fetched
    kind = answer.headers.get("Content-Type", "").split(";")[0].strip().lower()
    if kind not in ("text/html", "application/xhtml+xml", ""):
        return Card(uri, uri)
    head = _Head()
    try:
        head.feed(data.decode(answer.encoding or "utf-8", errors="replace"))
    except (LookupError, AssertionError):
        return Card(uri, uri)
    meta = head.meta
    title = meta.get("og:title") or meta.get("twitter:title") or head.title or uri
    description = meta.get("og:description") or meta.get("twitter:description") or meta.get("description") or ""
    src = (meta.get("og:image:secure_url") or meta.get("og:image") or meta.get("og:image:url")
           or meta.get("twitter:image"))
    image = _image(context, final_url, src, timeout) if src else None
    return Card(uri, shown_text(title, TITLE_CHARS) or uri, shown_text(description, DESCRIPTION_CHARS),
                image[0] if image else None, image[1] if image else None)
