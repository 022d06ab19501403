"""The media library's settings, set once per process by the app factory: the folder and the size limits per kind."""

from dataclasses import dataclass, field
from pathlib import Path

from models.media.content import MAX_PIXELS
from models.media.storage import MediaStore

MIB = 1024 * 1024


@dataclass(frozen=True)
class MediaSettings:
    """``TICKWORK_MEDIA_DIR`` and the ``TICKWORK_MEDIA_MAX_*`` limits (bytes, per kind)."""

    root: Path
    image_max_bytes: int = 20 * MIB
    gif_max_bytes: int = 15 * MIB
    video_max_bytes: int = 100 * MIB
    max_pixels: int = MAX_PIXELS
    fetch_timeout: float = 30.0  # seconds for a link fetched into the library
    store: MediaStore = field(init=False, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "store", MediaStore(self.root))

    @property
    def largest(self) -> int:
        """The largest file any kind may be: what an upload or a fetch reads at most."""
        return max(self.image_max_bytes, self.gif_max_bytes, self.video_max_bytes)

    def max_bytes(self, kind: str) -> int:
        return {"image": self.image_max_bytes, "gif": self.gif_max_bytes, "video": self.video_max_bytes}[kind]


_current: MediaSettings | None = None


def configure(settings: MediaSettings) -> MediaSettings:
    """Make ``settings`` the process's (the app factory calls this at start-up)."""
    global _current
    _current = settings
    return settings


def media_settings() -> MediaSettings:
    """The process's media settings, as :func:`configure` set them."""
    if _current is None:
        raise RuntimeError("the media library is not configured (models.media.settings.configure)")
    return _current
