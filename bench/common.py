"""What the benchmarks share: a database built by the migrations, an app on it, throwaway
PostgreSQL databases, a workspace to measure in, a median of timed runs, the machine's
description, results kept between runs, and writing a section of a document.

Each bench is a script (``.venv/bin/python bench/NAME.py``), so its own folder is first on
``sys.path`` and ``from common import ...`` comes first among its imports; this module then puts
the checkout on ``sys.path`` for what follows (``models``, ``webapp``, ``jobs``).
"""

import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SECRET = "bench-secret-key-for-tickwork-32-bytes-at-least"
T0 = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)  # the frozen clock's instant, where a bench freezes it


def tickwork(*args: str) -> list[str]:
    """The command line of ``tickwork ARGS`` run by this interpreter; run it with ``cwd=ROOT``."""
    return [sys.executable, "-m", "flask", "--app", "wsgi", *args]


def environment(url: str, queue_url: str = "immediate", **extra: str) -> dict[str, str]:
    """The environment a ``tickwork`` command runs in on the database at ``url``; ``extra`` adds variables."""
    return {**os.environ, "TICKWORK_DATABASE_URL": url, "TICKWORK_SECRET_KEY": SECRET, "TICKWORK_QUEUE_URL": queue_url,
            **extra}


def migrate(url: str, **extra: str) -> None:
    """Bring the database at ``url`` to the newest revision, as ``tickwork db upgrade`` does."""
    done = subprocess.run(tickwork("db", "upgrade"), cwd=ROOT, env=environment(url, **extra), capture_output=True,
                          text=True)
    if done.returncode:
        raise SystemExit(done.stderr)


def make_app(url: str, *, queue_url: str = "immediate", frozen_at: datetime | None = T0, **config):
    """A Tickwork app on ``url`` (already migrated), its clock frozen at ``frozen_at`` (None: the real clock).

    The frozen clock is ``app.config["TICKWORK_CLOCK"]``, for a bench that moves it."""
    from models.timing.clock import FrozenClock
    from webapp import create_app

    settings = {"SQLALCHEMY_DATABASE_URI": url, "SECRET_KEY": SECRET, "TICKWORK_QUEUE_URL": queue_url, **config}
    if frozen_at is not None:
        settings["TICKWORK_CLOCK"] = FrozenClock(frozen_at)
    return create_app(settings)


def pg_database(admin_url: str, name: str) -> str:
    """A new, empty PostgreSQL database ``name`` (dropped first if it exists); returns its URL."""
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    return admin_url.rsplit("/", 1)[0] + "/" + name


def drop_pg(admin_url: str, name: str) -> None:
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def pg_databases(admin_url: str, names: dict) -> Iterator[dict]:
    """New PostgreSQL databases named by ``names``' values; yields their URLs under the same keys, drops them after."""
    try:
        yield {key: pg_database(admin_url, name) for key, name in names.items()}
    finally:
        for name in names.values():
            drop_pg(admin_url, name)


@contextmanager
def scratch_database(admin_url: str | None, name: str) -> Iterator[str]:
    """A new, empty database, gone afterwards: PostgreSQL database ``name`` on ``admin_url``'s server, or,
    without ``admin_url``, a SQLite file in a temporary folder. Yields its URL."""
    if admin_url is None:
        with tempfile.TemporaryDirectory(prefix="tickwork-bench-") as folder:
            yield f"sqlite:///{folder}/bench.db"
    else:
        with pg_databases(admin_url, {name: name}) as urls:
            yield urls[name]


def workspace_with_channel(app, kind: str = "log", config: dict | None = None, **workspace) -> tuple[int, int]:
    """A workspace ("Bench", in New York, unless ``workspace`` says otherwise) and its one channel, "main", of
    ``kind``, both made at the app's now; their ids."""
    from models.accounts.tables import Workspace
    from models.channels.tables import Channel
    from models.core.database import write_session
    from models.core.runtime import runtime

    with app.app_context(), write_session() as session:
        now = runtime().now()
        made = Workspace(**{"name": "Bench", "timezone": "America/New_York", **workspace}, created_at=now)
        session.add(made)
        session.flush()
        channel = Channel(workspace_id=made.id, name="main", kind=kind, config=config or {}, created_at=now)
        session.add(channel)
        session.flush()
        return made.id, channel.id


def median_ms(action, repeats: int, *, warmups: int = 0) -> float:
    """The median wall time of ``action()`` over ``repeats`` runs after ``warmups`` unmeasured ones, in ms."""
    for _ in range(warmups):
        action()
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def machine() -> str:
    """The machine a figure was measured on, for the documents."""
    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


def recorded(path: Path) -> dict:
    """The results kept in ``path`` by ``record``, under their keys."""
    return json.loads(path.read_text()) if path.exists() else {}


def record(result: dict, path: Path, key: str, *, keep: bool = True) -> None:
    """Print ``result`` as a JSON line and, if ``keep``, keep it in ``path`` under ``key`` with when it was
    measured (replacing what was there), so a later run can render whichever results have been measured."""
    print(json.dumps(result), flush=True)
    if keep:
        stored = recorded(path)
        stored[key] = {**result, "measured": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
        path.write_text(json.dumps(stored, indent=1))


def when_measured(stored: dict) -> str:
    """When each of the ``recorded`` results was measured, by key, for a section's opening lines."""
    return "; ".join(f"{key.replace(':', ' ')} {value['measured']}" for key, value in sorted(stored.items())
                     if "measured" in value)


def write_section(heading: str, body: str, *, document: str = "benchmarks.md") -> None:
    """Put ``## heading`` and ``body`` into ``docs/<document>``, replacing that section if it is there."""
    path = ROOT / "docs" / document
    title = "# " + document.removesuffix(".md").capitalize() + "\n"
    current = path.read_text() if path.exists() else title
    section = f"## {heading}\n\n{body.strip()}\n"
    pattern = re.compile(rf"^## {re.escape(heading)}\n.*?(?=^## |\Z)", re.S | re.M)
    if pattern.search(current):
        current = pattern.sub(lambda _: section + "\n", current).rstrip("\n") + "\n"
    else:
        current = current.rstrip("\n") + "\n\n" + section
    path.write_text(current)
