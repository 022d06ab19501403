"""Backups of the single box: a consistent copy while Tickwork runs, and a restore that never sends a row twice."""

import json
import sqlite3
import threading
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, select
from werkzeug import Response

from models.actions.tables import ScheduledAction
from models.backups.operations import MANIFEST, Box, take_backup
from models.clock import heartbeats
from models.core.database import read_session
from tests.integration.clock_helpers import add_actions, events, make_channel, rows, tick

pytestmark = pytest.mark.only_backend("sqlite")


@pytest.fixture
def cli(app):
    runner = app.test_cli_runner()
    return lambda *args: runner.invoke(args=list(args))


def app_file(app) -> Path:
    return Path(app.config["SQLALCHEMY_DATABASE_URI"].removeprefix("sqlite:///"))


def one_line_refusal(result, fragment):
    assert result.exit_code != 0, result.output
    assert fragment in result.output and "Traceback" not in result.output, result.output
    assert len(result.output.strip().splitlines()) == 1, result.output


def count_rows(app) -> int:
    with app.app_context(), read_session() as session:
        return session.scalar(select(func.count()).select_from(ScheduledAction))


def test_a_backup_mid_drain_then_restored_sends_no_row_twice_and_each_is_published_or_unknown(
        app, clock, httpserver, tmp_path, cli):
    delivered: list[str] = []  # every Idempotency-Key the provider saw, across both lives
    problems: list[BaseException] = []
    backup = tmp_path / "backup"

    def provider(request):
        delivered.append(request.headers["Idempotency-Key"])
        if len(delivered) == 5:  # mid-drain: four published, the fifth being sent, seven waiting
            try:
                take_backup(Box(app_file(app), None), backup, now=clock.now())
            except BaseException as exc:  # surfaced below, not as a provider error
                problems.append(exc)
        return Response(json.dumps({"id": f"wh-{len(delivered)}"}), content_type="application/json")

    httpserver.expect_request("/hook", method="POST").respond_with_handler(provider)
    workspace = make_channel(app, "webhook", {"url": httpserver.url_for("/hook")})
    due_now = add_actions(app, workspace, 12, thing_prefix="post")
    later = add_actions(app, workspace, 1, due_in=timedelta(minutes=10), thing_prefix="later")

    first_life = tick(app)
    assert not problems and backup.is_dir()
    assert first_life["outcomes"] == {"published": 12} and len(delivered) == 12

    clock.advance(minutes=1)
    restored = cli("restore", str(backup))
    assert restored.exit_code == 0, restored.output
    summary = json.loads(restored.output)
    assert summary["failed_outcome_unknown"] == 8  # the one being sent and the seven still queued

    second_life = [tick(app)]
    clock.advance(minutes=10)
    second_life.append(tick(app))
    assert second_life[0]["due"] == 0 and second_life[1]["outcomes"] == {"published": 1}

    assert sorted(delivered) == sorted(set(delivered)), "an action reached the provider twice"
    assert len(delivered) == 13
    after = rows(app)
    for action_id in due_now:
        row = after[action_id]
        assert row.status == "published" or (
            row.status == "failed" and row.failure_code == "outcome_unknown"
            and "restored from a backup taken at 2026-06-01 12:00:00Z" in row.last_error), (row.status, row.last_error)
    assert after[later[0]].status == "published"
    unknown = [action_id for action_id in due_now if after[action_id].status == "failed"]
    assert unknown == summary["action_ids"]
    assert events(app, unknown[0])[-1].actor == "cli:restore"


def test_restore_is_refused_while_a_consumer_beats_and_changes_nothing(app, clock, tmp_path, cli):
    workspace = make_channel(app)
    add_actions(app, workspace, 2)
    assert cli("backup", str(tmp_path / "backup")).exit_code == 0
    add_actions(app, workspace, 1, thing_prefix="after-the-backup")
    with app.app_context():
        heartbeats.beat("box:42", host="box", pid=42, started_at=clock.now(), now=clock.now())
    one_line_refusal(cli("restore", str(tmp_path / "backup")), "a consumer is running (box:42)")
    assert count_rows(app) == 3
    clock.advance(minutes=5)  # the consumer stopped beating: now the restore goes ahead
    assert cli("restore", str(tmp_path / "backup")).exit_code == 0
    assert count_rows(app) == 2


def _not_tickwork(folder: Path) -> None:
    """A folder whose manifest is right and whose database is a SQLite file of something else."""
    folder.mkdir()
    other = sqlite3.connect(folder / "tickwork.db")
    other.execute("CREATE TABLE recipes (name TEXT)")
    other.commit()
    other.close()
    from models.backups.sqlite_files import sha256_of

    (folder / MANIFEST).write_text(json.dumps({"format": 1, "taken_at": "2026-06-01T11:00:00Z", "queue": None,
                                               "app": {"file": "tickwork.db", "sha256": sha256_of(folder / "tickwork.db")}}))


def _tampered(folder: Path, cli) -> None:
    assert cli("backup", str(folder)).exit_code == 0
    with (folder / "tickwork.db").open("r+b") as handle:
        handle.seek(200)
        handle.write(b"\x00garbage\x00")


@pytest.mark.parametrize("command, prepare, fragment", [
    ("restore", None, "does not exist"),
    ("restore", lambda path, cli: path.mkdir(), "is not a Tickwork backup: no tickwork-backup.json"),
    ("restore", lambda path, cli: path.write_text("hello"), "is not a Tickwork backup"),
    ("restore", lambda path, cli: (path.mkdir(), (path / MANIFEST).write_text("{not json")),
     "is not a Tickwork backup manifest"),
    ("restore", lambda path, cli: _not_tickwork(path), "is not a Tickwork database (no"),
    ("restore", _tampered, "does not match its checksum: the copy is damaged"),
    ("backup", lambda path, cli: (path.mkdir(), (path / "keep.txt").write_text("mine")), "already exists"),
    ("backup", "nested", "does not exist: create it first"),
])
def test_each_bad_backup_or_restore_is_one_clear_line_and_changes_nothing(app, tmp_path, cli, command, prepare,
                                                                         fragment):
    workspace = make_channel(app)
    add_actions(app, workspace, 2)
    path = tmp_path / "given"
    if prepare == "nested":
        path = tmp_path / "no" / "such" / "folder"
    elif prepare is not None:
        prepare(path, cli)
    listing = sorted(p.name for p in tmp_path.iterdir())
    add_actions(app, workspace, 1, thing_prefix="live")
    one_line_refusal(cli(command, str(path)), fragment)
    assert count_rows(app) == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == listing, "nothing left behind"
    if path.is_dir() and command == "backup":
        assert [p.name for p in path.iterdir()] == ["keep.txt"]


def test_a_backup_takes_the_sqlite_queue_too_and_restore_puts_it_back(app_config, tmp_path, clock):
    from jobs.queue import huey
    from jobs.tasks import dispatch
    from webapp import create_app

    app_config["TICKWORK_QUEUE_URL"] = f"sqlite:///{tmp_path / 'queue.db'}"
    app = create_app(app_config)
    runner = app.test_cli_runner()
    try:
        huey.enqueue(dispatch.s([1], None))
        taken = runner.invoke(args=["backup", str(tmp_path / "backup")])
        assert taken.exit_code == 0, taken.output
        manifest = json.loads((tmp_path / "backup" / MANIFEST).read_text())
        assert manifest["taken_at"] == "2026-06-01T12:00:00Z" and manifest["queue"]["file"] == "tickwork-queue.db"
        assert manifest["schema_revision"] and json.loads(taken.output)["backup"] == str(tmp_path / "backup")
        huey.enqueue(dispatch.s([2], None))
        assert len(huey) == 2
        restored = runner.invoke(args=["restore", str(tmp_path / "backup")])
        assert restored.exit_code == 0, restored.output
        assert json.loads(restored.output)["queue"] == "restored" and len(huey) == 1
    finally:
        huey.storage.close()
        from models.core.database import db

        with app.app_context():
            db.engine.dispose()


def test_a_backup_is_consistent_while_writers_keep_writing(app, tmp_path, clock):
    """Each write commits a row and its event together; a copy taken meanwhile has both or neither."""
    workspace = make_channel(app)
    stop = threading.Event()

    def writer():
        while not stop.is_set():
            add_actions(app, workspace, 5)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        for n in range(3):
            take_backup(Box(app_file(app), None), tmp_path / f"copy-{n}", now=clock.now())
    finally:
        stop.set()
        thread.join()
    for n in range(3):
        copy = sqlite3.connect(tmp_path / f"copy-{n}" / "tickwork.db")
        actions, first_events = copy.execute(
            "SELECT (SELECT count(*) FROM scheduled_actions), (SELECT count(*) FROM action_events)").fetchone()
        copy.close()
        assert actions == first_events and actions % 5 == 0


@pytest.mark.only_backend("postgresql")
def test_on_postgresql_backup_and_restore_point_to_pg_dump(world, cli, tmp_path):
    for command in ("backup", "restore"):
        one_line_refusal(cli(command, str(tmp_path / "x")), "back it up with pg_dump")
