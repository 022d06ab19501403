"""An image re-encoded to meet one network's declared rule: the pure part of the media preparation.

It reads and writes bytes only (Pillow), so a provider may prepare an image it fetched itself
(Bluesky's link-card thumbnail) and :mod:`models.media.preparing` prepares library items with the
same code.
"""

import io
import math

from PIL import Image

from models.channels.providers.accepts import JPEG, PNG, WEBP, ImageRule

# Qualities tried in turn once the size is right; below the last, the image is made smaller instead.
QUALITIES = (85, 78, 70)
MAX_ROUNDS = 12


class CannotPrepare(Exception):
    """No encoding of the image meets the rule (the message says which)."""


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
