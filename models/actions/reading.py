"""Reading scheduled actions: one row, its timeline, a page in ``(publish_at, id)`` order, its lineage."""

from datetime import datetime, timezone

from sqlalchemy import select
from sqlalchemy.orm import Session

from models.actions.tables import ActionEvent, ScheduledAction
from models.core.errors import NotFound
from models.core.keyset import after as keyset_after
from models.core.keyset import decode_cursor, encode_cursor

MAX_ID = 2**31 - 1  # ids are 32-bit integers on PostgreSQL


def get_action(session: Session, workspace_id: int, action_id: int) -> ScheduledAction:
    """The row, if it is in this workspace; else :class:`NotFound`."""
    row = session.scalar(
        select(ScheduledAction).where(ScheduledAction.id == action_id, ScheduledAction.workspace_id == workspace_id)
    )
    if row is None:
        raise NotFound(f"no action #{action_id} in this workspace")
    return row


def action_events(session: Session, action_id: int) -> list[ActionEvent]:
    """A row's timeline, oldest first."""
    return list(session.scalars(select(ActionEvent).where(ActionEvent.action_id == action_id).order_by(ActionEvent.id)))




def events_by_action(session: Session, action_ids: list[int]) -> dict[int, list[ActionEvent]]:
    """The timelines of several rows in one query."""
    timelines: dict[int, list[ActionEvent]] = {ident: [] for ident in action_ids}
    if action_ids:
        for event in session.scalars(select(ActionEvent).where(ActionEvent.action_id.in_(action_ids))
                                     .order_by(ActionEvent.action_id, ActionEvent.id)):
            timelines[event.action_id].append(event)
    return timelines


def rescheduled_to(session: Session, action_id: int) -> list[ScheduledAction]:
    """The rows that replaced ``action_id`` (normally one)."""
    return list(session.scalars(
        select(ScheduledAction).where(ScheduledAction.rescheduled_from_id == action_id).order_by(ScheduledAction.id)
    ))


def action_cursor(row: ScheduledAction) -> str:
    """The cursor that continues a page after ``row``."""
    return encode_cursor(row.publish_at.isoformat(), str(row.id))


def _aware(text: str) -> datetime:
    at = datetime.fromisoformat(text)
    if at.tzinfo is None:
        raise ValueError("a cursor's instant carries its offset")
    return at.astimezone(timezone.utc)


def _row_id(text: str) -> int:
    if not text.isdecimal() or not 0 < int(text) <= MAX_ID:
        raise ValueError("not a row id")
    return int(text)


def read_action_cursor(cursor: str) -> tuple[datetime, int]:
    """``(publish_at, id)`` from a cursor :func:`action_cursor` gave out; anything else is a 422."""
    return decode_cursor(cursor, _aware, _row_id)


def list_actions(
    session: Session,
    workspace_id: int,
    *,
    statuses: list[str] | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
    after: tuple[datetime, int] | None = None,
    limit: int = 50,
) -> list[ScheduledAction]:
    """A page of rows in ``(publish_at, id)`` order; ``start`` inclusive, ``end`` exclusive."""
    query = select(ScheduledAction).where(ScheduledAction.workspace_id == workspace_id)
    if statuses:
        query = query.where(ScheduledAction.status.in_(statuses))
    if start is not None:
        query = query.where(ScheduledAction.publish_at >= start)
    if end is not None:
        query = query.where(ScheduledAction.publish_at < end)
    if after is not None:
        query = query.where(keyset_after((ScheduledAction.publish_at, ScheduledAction.id), after))
    query = query.order_by(ScheduledAction.publish_at, ScheduledAction.id).limit(limit)
    return list(session.scalars(query))
