"""Consumer heartbeats: each consumer process writes its row every few seconds; the health page reads them."""

from datetime import datetime, timedelta

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from models.core.database import write_session
from models.clock.tables import ConsumerHeartbeat

HEARTBEAT_INTERVAL = timedelta(seconds=10)


def beat(name: str, *, host: str, pid: int, started_at: datetime, now: datetime) -> None:
    """Record that consumer ``name`` (host:pid) is alive now."""
    with write_session() as session:
        row = session.get(ConsumerHeartbeat, name)
        if row is None:
            session.add(ConsumerHeartbeat(name=name, host=host, pid=pid, started_at=started_at, beat_at=now))
        else:
            row.beat_at = now
            row.started_at = started_at


def forget(name: str) -> None:
    """Remove a consumer's row when it stops cleanly."""
    with write_session() as session:
        session.execute(delete(ConsumerHeartbeat).where(ConsumerHeartbeat.name == name))


def live_consumers(session: Session, now: datetime, *, within: timedelta = 3 * HEARTBEAT_INTERVAL) -> list[ConsumerHeartbeat]:
    """Consumers that beat within ``within`` of ``now``, most recent first."""
    return list(session.scalars(
        select(ConsumerHeartbeat).where(ConsumerHeartbeat.beat_at >= now - within).order_by(ConsumerHeartbeat.beat_at.desc())
    ))
