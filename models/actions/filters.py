"""Finding scheduled actions by the filters a person sets on the dashboard.

Pages are in ``(publish_at, id)`` order (the brief's invariant 7) and paged by a cursor on
that pair. Each status is read by its own query and the results merged: with the status
written as a literal, the ``status = 'queued'`` partial index serves the queue straight
from its order, however much published history sits beside it.
"""

import heapq
from dataclasses import dataclass, field, replace
from datetime import datetime

from sqlalchemy import Text, cast, func, literal_column, or_, select, text
from sqlalchemy.orm import Session

from models.actions.tables import ScheduledAction, Status
from models.core.keyset import after as keyset_after

KNOWN_STATUSES = tuple(s.value for s in Status)
# SQLite's planner prefers the (workspace_id, publish_at) index whatever the status, and
# then walks the whole history. For the statuses that have a partial index of their own
# (queued, submitted), the workspace test is written ``+workspace_id`` on SQLite, which
# keeps that index out of the running and leaves the small partial one.
PARTIAL_INDEXED = (Status.QUEUED.value, Status.SUBMITTED.value)


@dataclass(frozen=True)
class ActionFilter:
    """What a person asked to see; every field optional except the statuses."""

    statuses: tuple[str, ...] = (Status.QUEUED.value, Status.SUBMITTED.value)
    action_type: str | None = None
    channel_id: int | None = None
    start: datetime | None = None  # inclusive
    end: datetime | None = None  # exclusive
    text: str | None = None
    failure_code: str | None = None
    ids: tuple[int, ...] = field(default=())
    # Further SQL conditions on ``scheduled_actions`` a wing above supplies (the rows of posts by an
    # author, or in a review state: models/posts/listing.py), so this floor needs no knowledge of them.
    where: tuple = field(default=(), compare=False)

    def with_statuses(self, *statuses: str) -> "ActionFilter":
        return replace(self, statuses=tuple(statuses))


def _status_is(status: str):
    if status not in KNOWN_STATUSES:
        raise ValueError(f"unknown status {status!r}")
    # A literal, not a bound parameter, so SQLite can prove the partial index applies.
    return ScheduledAction.status == literal_column(f"'{status}'")


def _conditions(workspace_id: int, wanted: ActionFilter, *, status: str | None = None, dialect: str = "") -> list:
    if dialect == "sqlite" and status in PARTIAL_INDEXED:
        conditions = [literal_column("+scheduled_actions.workspace_id") == workspace_id]
    else:
        conditions = [ScheduledAction.workspace_id == workspace_id]
    if wanted.action_type:
        conditions.append(ScheduledAction.action_type == wanted.action_type)
    if wanted.channel_id is not None:
        conditions.append(ScheduledAction.channel_id == wanted.channel_id)
    if wanted.start is not None:
        conditions.append(ScheduledAction.publish_at >= wanted.start)
    if wanted.end is not None:
        conditions.append(ScheduledAction.publish_at < wanted.end)
    if wanted.failure_code:
        conditions.append(ScheduledAction.failure_code == wanted.failure_code)
    if wanted.ids:
        conditions.append(ScheduledAction.id.in_(wanted.ids))
    conditions.extend(wanted.where)
    if wanted.text:
        conditions.append(or_(
            ScheduledAction.target_key.icontains(wanted.text, autoescape=True),
            ScheduledAction.thing_id.icontains(wanted.text, autoescape=True),
            cast(ScheduledAction.payload, Text).icontains(wanted.text, autoescape=True),
        ))
    return conditions


def _dialect(session: Session) -> str:
    return session.get_bind().dialect.name


def find_actions(
    session: Session,
    workspace_id: int,
    wanted: ActionFilter,
    *,
    after: tuple[datetime, int] | None = None,
    limit: int = 50,
    newest_first: bool = False,
) -> list[ScheduledAction]:
    """One page of matching rows in ``(publish_at, id)`` order (or its reverse)."""
    per_status = []
    for status in wanted.statuses:
        query = select(ScheduledAction).where(
            _status_is(status), *_conditions(workspace_id, wanted, status=status, dialect=_dialect(session)))
        if after is not None:
            query = query.where(keyset_after((ScheduledAction.publish_at, ScheduledAction.id), after,
                                             descending=newest_first))
        if newest_first:
            query = query.order_by(ScheduledAction.publish_at.desc(), ScheduledAction.id.desc())
        else:
            query = query.order_by(ScheduledAction.publish_at, ScheduledAction.id)
        per_status.append(list(session.scalars(query.limit(limit))))
    merged = heapq.merge(*per_status, key=lambda row: (row.publish_at, row.id), reverse=newest_first)
    return [row for _, row in zip(range(limit), merged)]


def count_actions(session: Session, workspace_id: int, wanted: ActionFilter, *,
                  at_most: int | None = None) -> dict[str, int]:
    """How many rows match, per status (each status counted by its own query).

    With ``at_most``, a status is counted no further than ``at_most + 1``: a count above ``at_most``
    means "more than that", and the page showing it costs the same with a million rows as with ten thousand.
    """
    counts = {}
    for status in wanted.statuses:
        matching = select(ScheduledAction.id).where(
            _status_is(status), *_conditions(workspace_id, wanted, status=status, dialect=_dialect(session)))
        if at_most is not None:
            matching = matching.limit(at_most + 1)
        counts[status] = session.scalar(select(func.count()).select_from(matching.subquery())) or 0
    return counts


def matching_ids(session: Session, workspace_id: int, wanted: ActionFilter, *, limit: int) -> list[int]:
    """Ids of matching rows in ``(publish_at, id)`` order, for bulk operations."""
    ids: list[int] = []
    for status in wanted.statuses:
        query = (select(ScheduledAction.id, ScheduledAction.publish_at)
                 .where(_status_is(status), *_conditions(workspace_id, wanted, status=status,
                                                         dialect=_dialect(session)))
                 .order_by(ScheduledAction.publish_at, ScheduledAction.id).limit(limit))
        ids.extend(ident for ident, _ in session.execute(query))
    return ids[:limit]


def action_types(session: Session, workspace_id: int) -> list[str]:
    """The action types this workspace has used, for the filter menus.

    A skip scan over the index that starts ``(workspace_id, action_type)``: one index probe
    per distinct type, so a million rows of history cost what ten do.
    """
    rows = session.execute(text("""
        WITH RECURSIVE types(action_type) AS (
            SELECT MIN(action_type) FROM scheduled_actions WHERE workspace_id = :ws
            UNION ALL
            SELECT (SELECT MIN(s.action_type) FROM scheduled_actions s
                    WHERE s.workspace_id = :ws AND s.action_type > types.action_type)
            FROM types WHERE types.action_type IS NOT NULL
        )
        SELECT action_type FROM types WHERE action_type IS NOT NULL
    """), {"ws": workspace_id})
    return [value for (value,) in rows]
