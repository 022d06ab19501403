"""What the benchmarks share: a database built by the migrations, an app on it, throwaway
PostgreSQL databases, the machine's description, and writing a section of a document.

Each bench is a script (``.venv/bin/python bench/NAME.py``); this module puts the checkout on
``sys.path`` for them, so ``from bench.common import ...`` comes first among their imports.
"""

import os
import platform
import re
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SECRET = "bench-secret"
T0 = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)  # the frozen clock's instant, where a bench freezes it


def migrate(url: str, **env) -> None:
    """Bring the database at ``url`` to the newest revision, as ``tickwork db upgrade`` does."""
    environ = dict(os.environ, TICKWORK_DATABASE_URL=url, TICKWORK_SECRET_KEY=SECRET, TICKWORK_QUEUE_URL="immediate",
                   **env)
    done = subprocess.run([sys.executable, "-m", "flask", "--app", "wsgi", "db", "upgrade"], cwd=ROOT, env=environ,
                          capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(done.stderr)


def make_app(url: str, *, queue_url: str = "immediate", frozen_at: datetime | None = T0, **config):
    """A Tickwork app on ``url`` (already migrated), its clock frozen at ``frozen_at`` (None: the real clock)."""
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


def machine() -> str:
    """The machine a figure was measured on, for the documents."""
    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


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
