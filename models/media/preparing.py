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

from PIL import Image

from models.channels.providers.accepts import ImageRule, MediaRules
from models.channels.providers.base import MediaFile
from models.channels.providers.images import CannotPrepare, prepare_image
from models.media.storage import MediaStore
from models.media.tables import Media, MediaKind

def needs_preparing(item: Media, rule: ImageRule | None) -> bool:
    """Whether ``item`` must be re-encoded to meet ``rule`` (and ``rule`` allows it)."""
    if rule is None or item.kind != MediaKind.IMAGE.value or not rule.may_prepare:  # a VideoRule prepares nothing
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


__all__ = ["CannotPrepare", "needs_preparing", "prepare_image", "prepared_key", "prepared_media"]
