"""The monthly archive files: SQLite databases written with sqlite-utils, tables mirroring the live ones.

A file is named after the month of its chains' latest ``publish_at``
(``tickwork-archive-2026-03.db``). Writes are upserts by id, so a copy made again after a
pass died between copy and prune leaves one row per id. ``scheduled_actions`` carries a
full-text index over payloads, errors and targets (sqlite-utils' FTS, kept by triggers).
"""

import json
from datetime import date, datetime
from pathlib import Path

import sqlite_utils
from sqlalchemy import JSON, Boolean, Integer

from models.core.base import Base
from models.core.files import keep_private
from models.core.types import UTCDateTime

# Archived with an action, in the order they are copied: each mirrors the live table of that name.
ARCHIVED_TABLES = (
    "scheduled_actions",
    "action_events",
    "outbox_entries",
    "recurring_schedule_events",
    "drip_sends",
    "drip_enrollment_events",
    "work_runs",
    "work_events",
)
SEARCHED_COLUMNS = ["payload", "last_error", "target_key"]
FILE_PATTERN = "tickwork-archive-*.db"


def file_name(month: str) -> str:
    """The archive file of ``month`` (``2026-03``)."""
    return f"tickwork-archive-{month}.db"


def open_archive(directory: Path, name: str) -> sqlite_utils.Database:
    """An archive file, created with every archived table (and the search index) on first use."""
    archive = sqlite_utils.Database(directory / name)
    keep_private(directory / name)  # before its WAL exists: SQLite gives the WAL the file's mode
    archive.execute("PRAGMA journal_mode = WAL")
    for table in ARCHIVED_TABLES:
        if not archive[table].exists():
            archive[table].create(_columns(table), pk="id")
    if not archive["scheduled_actions"].detect_fts():
        archive["scheduled_actions"].enable_fts(SEARCHED_COLUMNS, create_triggers=True)
    return archive


def _columns(table: str) -> dict:
    columns = {}
    for column in Base.metadata.tables[table].columns:
        if isinstance(column.type, (Integer, Boolean)):
            columns[column.name] = int
        else:
            columns[column.name] = str
    return columns


def to_archive(row: dict) -> dict:
    """One live row's values as the archive stores them: instants in ISO 8601, JSON as text."""
    stored = {}
    for key, value in row.items():
        if isinstance(value, (datetime, date)):
            stored[key] = value.isoformat()
        elif isinstance(value, (dict, list)):
            stored[key] = json.dumps(value, ensure_ascii=False, sort_keys=True)
        elif isinstance(value, bool):
            stored[key] = int(value)
        else:
            stored[key] = value
    return stored


def from_archive(table: str, row: dict) -> dict:
    """An archived row's values as the live model takes them."""
    values = dict(row)
    for column in Base.metadata.tables[table].columns:
        value = values.get(column.name)
        if value is None:
            continue
        if isinstance(column.type, UTCDateTime):
            values[column.name] = datetime.fromisoformat(value)
        elif isinstance(column.type, JSON):
            values[column.name] = json.loads(value)
        elif isinstance(column.type, Boolean):
            values[column.name] = bool(value)
    return values


def upsert_rows(archive: sqlite_utils.Database, table: str, rows: list[dict]) -> None:
    if rows:
        archive[table].upsert_all([to_archive(row) for row in rows], pk="id", batch_size=500)


def count_ids(archive: sqlite_utils.Database, table: str, ids: list[int]) -> int:
    """How many of ``ids`` the archive's ``table`` holds (each at most once: ids are its key)."""
    found = 0
    for start in range(0, len(ids), 500):
        part = ids[start:start + 500]
        marks = ", ".join("?" for _ in part)
        found += archive.execute(f"SELECT count(*) FROM [{table}] WHERE id IN ({marks})", part).fetchone()[0]
    return found


def read_rows(archive: sqlite_utils.Database, table: str, column: str, value) -> list[dict]:
    """The archived rows of ``table`` whose ``column`` is ``value``, by id."""
    cursor = archive.execute(f"SELECT * FROM [{table}] WHERE [{column}] = ? ORDER BY id", [value])
    names = [d[0] for d in cursor.description]
    return [from_archive(table, dict(zip(names, values))) for values in cursor.fetchall()]
