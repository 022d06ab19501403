"""What retention keeps of the terminal history it prunes: one row per key, so the gates never weaken.

The terminal-history gates (the reconciler's per post target, the expander's per slot) and
the publish guard look for terminal siblings of a key (workspace, action type, thing,
target). Retention moves old rows into archive files; in the same transaction that deletes
them it keeps one :class:`ArchivedKey` per key that had a published, failed or
person-cancelled row (``published`` true when any of them was published). The gates read
it beside the live rows (:func:`archived_blocking_keys`); the guard's SQL reads it in the
database (``published`` only, as the guard only ever refused beside a published sibling).
"""

from datetime import datetime

from sqlalchemy import Boolean, ForeignKey, String, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from models.core.base import Base
from models.core.types import UTCDateTime


class ArchivedKey(Base):
    """A key whose terminal history went to an archive: never minted again; never sent again when published."""

    __tablename__ = "archived_action_keys"

    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id", ondelete="RESTRICT"), primary_key=True)
    action_type: Mapped[str] = mapped_column(String(64), primary_key=True)
    thing_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    target_key: Mapped[str] = mapped_column(String(255), primary_key=True)
    published: Mapped[bool] = mapped_column(Boolean, default=False)
    archived_at: Mapped[datetime] = mapped_column(UTCDateTime())


def archived_blocking_keys(session: Session, workspace_id: int, action_types: set[str],
                           thing_ids: set[str]) -> dict[tuple[str, str], bool]:
    """The (thing id, target key) pairs among ``thing_ids`` whose archived history blocks minting again,
    each with whether a published row was among it."""
    if not thing_ids or not action_types:
        return {}
    rows = session.execute(
        select(ArchivedKey.thing_id, ArchivedKey.target_key, ArchivedKey.published).where(
            ArchivedKey.workspace_id == workspace_id,
            ArchivedKey.action_type.in_(sorted(action_types)),
            ArchivedKey.thing_id.in_(sorted(thing_ids)),
        )
    )
    return {(thing, target): bool(published) for thing, target, published in rows}
