"""Media as one network gets it: prepared at send time for the rules its provider declares, else whole.

An image the declaration lets Tickwork prepare (``ImageRule.may_prepare``) that is too heavy,
too large or in a format the network does not take is re-encoded for that network only:
downscaled (JPEG files are decoded at a reduced scale straight away, so a 20-megapixel photo
never sits in memory at full size when a fraction is wanted), converted to JPEG (or PNG when
it has transparency and the network takes PNG), and recompressed until it fits. What comes
out is kept under the media folder's ``prepared/`` by the original's sha256 and the rule, so a
retry, or a second channel of the same kind, does not prepare it again. Everything else is
sent as stored: a 4 MB photo is downscaled for a network that takes 1,000,000 bytes and sent
whole to one that takes 16 MiB.
"""

import hashlib
import io
import math

from PIL import Image

from models.channels.providers.accepts import JPEG, PNG, WEBP, ImageRule, MediaRules
from models.channels.providers.base import MediaFile
from models.media.storage import MediaStore
from models.media.tables import Media, MediaKind

# Qualities tried in turn once the size is right; below the last, the image is made smaller instead.
QUALITIES = (85, 78, 70)
MAX_ROUNDS = 12


class CannotPrepare(Exception):
    """No encoding of the image meets the rule (the message says which)."""


def needs_preparing(item: Media, rule: ImageRule | None) -> bool:
    """Whether ``item`` must be re-encoded to meet ``rule`` (and ``rule`` allows it)."""
    if rule is None or item.kind != MediaKind.IMAGE.value or not rule.may_prepare:  # a VideoRule has no may_prepare
        return False
    too_heavy = rule.max_bytes is not None and item.bytes > rule.max_bytes
    too_large = (rule.max_side is not None and item.width and item.height
                 and max(item.width, item.height) > rule.max_side)
    return too_heavy or bool(too_large) or item.mime not in rule.formats


def prepared_key(item: Media, rule: ImageRule) -> str:
    """The name a prepared copy of ``item`` for ``rule`` is kept under."""
    return hashlib.sha256(f"{item.sha256}:{rule!r}".encode()).hexdigest()


def prepared_media(item: Media, rules: MediaRules, store: MediaStore) -> MediaFile:
    """``item`` as a network with ``rules`` gets it: prepared if it must be and may be, else as stored."""
    rule = rules.rule_for(item.kind)
    if not needs_preparing(item, rule):
        return MediaFile(media_id=item.id, kind=item.kind, mime=item.mime, data=store.read(item.sha256),
                         width=item.width, height=item.height, alt=item.alt or "", duration=item.duration)
    key = prepared_key(item, rule)
    cached = store.read_prepared(key)
    if cached is not None:
        with Image.open(io.BytesIO(cached)) as done:
            width, height, mime = done.width, done.height, Image.MIME[done.format]
        data = cached
    else:
        data, width, height, mime = prepare_image(store.read(item.sha256), rule)
        store.put_prepared(key, data)
    return MediaFile(media_id=item.id, kind=item.kind, mime=mime, data=data, width=width, height=height,
                     alt=item.alt or "", prepared=True)


def _target_format(image: Image.Image, rule: ImageRule) -> str:
    has_alpha = image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info)
    if has_alpha and PNG in rule.formats:
        return "PNG"
    if JPEG in rule.formats:
        return "JPEG"
    if WEBP in rule.formats:
        return "WEBP"
    if PNG in rule.formats:
        return "PNG"
    raise CannotPrepare(f"the network takes none of the formats Tickwork writes ({', '.join(sorted(rule.formats))})")


def prepare_image(data: bytes, rule: ImageRule) -> tuple[bytes, int, int, str]:
    """``data`` re-encoded to meet ``rule``: (bytes, width, height, mime)."""
    with Image.open(io.BytesIO(data)) as source:
        target = _target_format(source, rule)
        width, height = source.size
        scale = 1.0
        if rule.max_side is not None and max(width, height) > rule.max_side:
            scale = rule.max_side / max(width, height)
        if rule.max_bytes is not None and len(data) > rule.max_bytes:
            # A first guess: bytes grow with the area, so shrink each side by the square root.
            scale = min(scale, math.sqrt(rule.max_bytes / len(data)))
        if source.format == "JPEG" and scale < 1:
            source.draft("RGB", (max(1, int(width * scale)), max(1, int(height * scale))))
        image = source.convert("RGBA" if target == "PNG" and source.mode in ("RGBA", "LA", "PA", "P") else "RGB")
    for _ in range(MAX_ROUNDS):
        size = (max(1, round(width * scale)), max(1, round(height * scale)))
        resized = image if size == image.size else image.resize(size, Image.Resampling.LANCZOS)
        for quality in (QUALITIES if target != "PNG" else (None,)):
            encoded = _encode(resized, target, quality)
            if rule.max_bytes is None or len(encoded) <= rule.max_bytes:
                return encoded, size[0], size[1], Image.MIME[target]
        scale *= max(0.5, min(0.9, math.sqrt(rule.max_bytes / len(encoded)) * 0.95))
    raise CannotPrepare(f"the image does not fit in {rule.max_bytes:,} bytes even at {size[0]}×{size[1]}")


def _encode(image: Image.Image, target: str, quality: int | None) -> bytes:
    out = io.BytesIO()
    if target == "JPEG":
        image.save(out, "JPEG", quality=quality, optimize=True, progressive=True)
    elif target == "WEBP":
        image.save(out, "WEBP", quality=quality)
    else:
        image.save(out, "PNG", optimize=True)
    return out.getvalue()
