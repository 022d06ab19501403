"""The clock's own records: one row per run of a clock job, and each consumer's heartbeat."""

from datetime import datetime

from sqlalchemy import JSON, Index, Integer, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from models.core.base import Base
from models.core.types import UTCDateTime


class ClockRun(Base):
    """One run of one clock job, with its summary."""

    __tablename__ = "clock_runs"

    id: Mapped[int] = mapped_column(primary_key=True)
    kind: Mapped[str] = mapped_column(String(32))
    started_at: Mapped[datetime] = mapped_column(UTCDateTime())
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    summary: Mapped[dict | None] = mapped_column(JSON)
    error: Mapped[str | None] = mapped_column(Text)
    # A tick whose summary carries hour rollups (``rollup_hours``): the last hour among them.
    rollup_hour: Mapped[datetime | None] = mapped_column(UTCDateTime())

    __table_args__ = (
        Index("ix_clock_runs_kind_started", "kind", "started_at"),
        # The per-minute rollup reads every kind's runs started in one minute.
        Index("ix_clock_runs_started", "started_at"),
        # A week of charts reads the hour rollups, not every minute's.
        Index("ix_clock_runs_rollup_hour", "rollup_hour", postgresql_where=text("rollup_hour IS NOT NULL"),
              sqlite_where=text("rollup_hour IS NOT NULL")),
    )


class ConsumerHeartbeat(Base):
    """The last sign of life of each consumer process, for the health page."""

    __tablename__ = "consumer_heartbeats"

    name: Mapped[str] = mapped_column(String(255), primary_key=True)  # host:pid
    host: Mapped[str] = mapped_column(String(255))
    pid: Mapped[int] = mapped_column(Integer)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime())
    beat_at: Mapped[datetime] = mapped_column(UTCDateTime())
