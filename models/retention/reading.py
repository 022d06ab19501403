"""Reading what retention archived: one action by id (the dashboard's page, the API), and the History search."""

import sqlite3
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from models.actions.tables import ActionEvent, ScheduledAction
from models.core.errors import InvalidInput
from models.retention.archive_files import FILE_PATTERN, read_rows
from models.retention.tables import ArchivedAction

import sqlite_utils


@dataclass
class ArchivedRow:
    """An action read back from its archive file: detached model objects, never added to a session."""

    row: ScheduledAction
    events: list[ActionEvent]
    file: str
    archived_at: datetime
    archived: bool = True


def archived_action(session: Session, workspace_id: int, action_id: int, directory: Path) -> ArchivedRow | None:
    """The archived action ``action_id`` of this workspace, or None when it was never archived here
    (or its file is not reachable from this host)."""
    entry = session.scalar(select(ArchivedAction).where(ArchivedAction.action_id == action_id,
                                                        ArchivedAction.workspace_id == workspace_id))
    if entry is None:
        return None
    path = Path(directory) / entry.file
    if not path.is_file():
        return None
    archive = sqlite_utils.Database(path)
    try:
        rows = read_rows(archive, "scheduled_actions", "id", action_id)
        if not rows:
            return None
        events = read_rows(archive, "action_events", "action_id", action_id)
    except sqlite3.DatabaseError:
        return None  # a damaged file answers as a missing one: a 404 that names the id, never a 500
    finally:
        archive.close()
    return ArchivedRow(row=ScheduledAction(**rows[0]), events=[ActionEvent(**event) for event in events],
                       file=entry.file, archived_at=entry.archived_at)


@dataclass(frozen=True)
class HistoryHit:
    id: int
    action_type: str
    target_key: str
    status: str
    publish_at: datetime
    snippet: str
    file: str


def archive_files(directory: Path) -> list[Path]:
    """The archive files under ``directory``, newest month first."""
    directory = Path(directory)
    return sorted(directory.glob(FILE_PATTERN), reverse=True) if directory.is_dir() else []


def search_history(session: Session, workspace_id: int, directory: Path, query: str, *, limit: int = 50) -> list[HistoryHit]:
    """The workspace's archived actions whose payload, error or target match ``query`` (full-text, every
    word), newest month first; only ids the archive index names as pruned from this workspace."""
    words = query.strip()
    if not words:
        raise InvalidInput("type a word to search for", field="q")
    if len(words) > 200:
        raise InvalidInput("a search is at most 200 characters", field="q")
    hits: list[HistoryHit] = []
    for path in archive_files(directory):
        archive = sqlite_utils.Database(path)
        try:
            if not archive["scheduled_actions"].detect_fts():
                continue
            found = list(archive["scheduled_actions"].search(
                words, columns=["id", "action_type", "target_key", "status", "publish_at", "payload", "last_error"],
                where="workspace_id = :workspace_id", where_args={"workspace_id": workspace_id},
                limit=limit * 2, quote=True))
        except sqlite3.DatabaseError:
            continue  # a damaged or foreign file is skipped, not a 500
        finally:
            archive.close()
        ids = [row["id"] for row in found]
        indexed = set(session.scalars(select(ArchivedAction.action_id).where(
            ArchivedAction.workspace_id == workspace_id, ArchivedAction.action_id.in_(ids)))) if ids else set()
        for row in found:
            if row["id"] in indexed:
                hits.append(HistoryHit(id=row["id"], action_type=row["action_type"], target_key=row["target_key"],
                                       status=row["status"], publish_at=datetime.fromisoformat(row["publish_at"]),
                                       snippet=(row["last_error"] or row["payload"] or "")[:160], file=path.name))
        if len(hits) >= limit:
            break
    return hits[:limit]
