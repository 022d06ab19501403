"""The ``media`` table: one row per item a workspace put in its library, pointing at a content-addressed file.

The file is named by the sha256 of the bytes stored (after EXIF and GPS data were stripped),
so two rows with the same content share one file. Posts, thread items and drip steps refer
to an item by its id, never by a path.
"""

import enum
from datetime import datetime

from sqlalchemy import BigInteger, CheckConstraint, Float, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from models.core.base import Base
from models.core.types import UTCDateTime


class MediaKind(str, enum.Enum):
    """What an item is, as its content shows (never its name)."""

    IMAGE = "image"  # a still JPEG, PNG or WebP, checked and re-saved without metadata by Pillow
    GIF = "gif"  # a GIF, possibly animated
    VIDEO = "video"  # an MP4 or QuickTime file, by its container's headers


MAX_ALT = 5000
MAX_NAME = 255


class Media(Base):
    __tablename__ = "media"

    id: Mapped[int] = mapped_column(primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id", ondelete="RESTRICT"))
    created_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="RESTRICT"))
    kind: Mapped[str] = mapped_column(String(8))
    mime: Mapped[str] = mapped_column(String(64))
    bytes: Mapped[int] = mapped_column(BigInteger)
    width: Mapped[int | None] = mapped_column(Integer)
    height: Mapped[int | None] = mapped_column(Integer)
    duration: Mapped[float | None] = mapped_column(Float)  # seconds, for a video whose length could be read
    sha256: Mapped[str] = mapped_column(String(64))
    alt: Mapped[str] = mapped_column(Text, default="")
    name: Mapped[str] = mapped_column(String(MAX_NAME), default="")  # the uploaded file's name, shown only
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())

    __table_args__ = (
        CheckConstraint("kind IN (" + ", ".join(repr(k.value) for k in MediaKind) + ")", name="kind"),
        CheckConstraint("bytes >= 0", name="bytes"),
        Index("ix_media_workspace_id", "workspace_id", "id"),
        Index("ix_media_sha256", "sha256"),
    )
