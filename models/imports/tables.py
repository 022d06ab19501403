"""An import's staged file: the import itself, and one row per line with the fate its dry run gave it.

Staged imports are scratch data, not history: they are deleted once expired (an hour after
their dry run, ``Policy.import_keep``), the next time any dry run starts.

| status     | meaning                                                          |
|------------|------------------------------------------------------------------|
| staged     | the dry run's report is stored; a commit may take it             |
| committing | one commit is applying its accepted lines, batch after batch     |
| committed  | every accepted line was applied (or found changed); done         |
"""

import enum
from datetime import datetime

from sqlalchemy import JSON, Boolean, CheckConstraint, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from models.core.base import Base
from models.core.types import UTCDateTime


class ImportStatus(str, enum.Enum):
    """Where an import is in its life."""

    STAGED = "staged"  # dry run done; waiting for its commit (or its expiry)
    COMMITTING = "committing"  # one commit is applying it
    COMMITTED = "committed"  # applied (terminal)


class CsvImport(Base):
    __tablename__ = "csv_imports"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)  # the import_id handed out
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id", ondelete="RESTRICT"))
    kind: Mapped[str] = mapped_column(String(32))  # which checker: "drip_enrollments", ...
    target: Mapped[str] = mapped_column(String(64))  # what it imports into, as the wing names it (a campaign id)
    created_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="RESTRICT"))
    status: Mapped[str] = mapped_column(String(16), default=ImportStatus.STAGED.value)
    columns: Mapped[list] = mapped_column(JSON)
    line_count: Mapped[int] = mapped_column(Integer, default=0)
    accepted_count: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
    committed_at: Mapped[datetime | None] = mapped_column(UTCDateTime())

    __table_args__ = (
        CheckConstraint("status IN (" + ", ".join(repr(s.value) for s in ImportStatus) + ")", name="status"),
        Index("ix_csv_imports_expires_at", "expires_at"),
    )


class CsvImportLine(Base):
    """One line of a staged file: its values, the dry run's fate, and what the commit made of it."""

    __tablename__ = "csv_import_lines"

    id: Mapped[int] = mapped_column(primary_key=True)
    import_id: Mapped[str] = mapped_column(ForeignKey("csv_imports.id", ondelete="RESTRICT"))
    line_number: Mapped[int] = mapped_column(Integer)  # in the file, the header being line 1
    values: Mapped[dict] = mapped_column(JSON)  # column -> text, as read
    fate: Mapped[str] = mapped_column(String(32))
    accepted: Mapped[bool] = mapped_column(Boolean)
    message: Mapped[str | None] = mapped_column(Text)
    committed_fate: Mapped[str | None] = mapped_column(String(32))  # set by the commit, accepted lines only
    committed_message: Mapped[str | None] = mapped_column(Text)

    __table_args__ = (Index("ux_csv_import_lines_import_line", "import_id", "line_number", unique=True),)
