"""What every event table shares: one move of one thing, from which status to which, when, who
(a person, or a clock job and its run) and why.

Each wing's event table mixes in :class:`StatusEvent` and adds the column naming what moved
(``action_id``, ``post_id``, ...); each lifecycle writes its rows with :func:`event_values`.
"""

from datetime import datetime

from sqlalchemy import ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from models.core.moves import Actor
from models.core.types import UTCDateTime


class StatusEvent:
    """The columns of an event row, besides the one naming its subject."""

    id: Mapped[int] = mapped_column(primary_key=True)
    from_status: Mapped[str | None] = mapped_column(String(16))  # None for a thing's first event
    to_status: Mapped[str] = mapped_column(String(16))
    at: Mapped[datetime] = mapped_column(UTCDateTime())
    actor: Mapped[str] = mapped_column(String(255))
    actor_user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="RESTRICT"))
    clock_run_id: Mapped[int | None] = mapped_column(ForeignKey("clock_runs.id", ondelete="RESTRICT"))
    reason: Mapped[str | None] = mapped_column(Text)


def event_values(source: str | None, target: str, *, now: datetime, actor: Actor, reason: str | None,
                 **subject) -> dict:
    """An event row's values: ``subject`` names what moved (``post_id=...``) and anything else the table keeps."""
    return {**subject, "from_status": source, "to_status": target, "at": now, "actor": actor.label,
            "actor_user_id": actor.user_id, "clock_run_id": actor.clock_run_id, "reason": reason}
