"""Shared fixtures: real SQLite and real PostgreSQL, the same tests on both.

The schema is built once per run by the migrations (the schema of record), then each
test gets a fresh copy: a copied file on SQLite, ``CREATE DATABASE ... TEMPLATE`` on
PostgreSQL.
"""

import functools
import os
import shutil
import subprocess
import sys
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import psycopg
import pytest

from models.timing.clock import FrozenClock

ROOT = Path(__file__).resolve().parent.parent
PG_ADMIN_URL = os.environ.get("TICKWORK_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
TEST_SECRET = "test-secret-key-for-tickwork-32-bytes-at-least"
T0 = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "main")
# Where the SQLite template lives when several pytest runs share one (bench/mutmut.py starts one per mutant): the
# first run migrates it, the others copy it as it is.
SQLITE_TEMPLATE = os.environ.get("TICKWORK_TEST_SQLITE_TEMPLATE")
# The suite's fakes listen on loopback: the egress policy opens exactly that, for this process and for
# every child process a test starts (they all inherit the environment), so tests run the real policy.
EGRESS_ALLOW = "127.0.0.0/8,::1/128,localhost"
os.environ["TICKWORK_EGRESS_ALLOW"] = EGRESS_ALLOW


def _share_url_builders_across_apps() -> None:
    """Compile each route's URL builder once per run, not once per test.

    Every test builds an app of its own, and werkzeug compiles two URL builders for each of its
    routes when the app registers them (a Python function generated from a syntax tree): a tenth of
    a second for the dashboard's routes, a quarter of the suite's CPU. A builder is a function of
    the rule's text, its parsed parts and its defaults alone, and it reads the converters through
    the rule it is bound to, so the function compiled for one app's rule serves the same rule in
    every later app. A process that runs Tickwork builds one app and never comes here.
    """
    from werkzeug.routing.rules import Rule

    compile_builder = Rule._compile_builder
    built: dict = {}

    @functools.wraps(compile_builder)
    def shared(rule: Rule, append_unknown: bool = True):
        defaults = rule.defaults or {}
        key = (append_unknown, rule.rule, tuple(rule._trace),
               tuple(sorted((name, repr(value), type(rule._converters.get(name)).__name__)
                            for name, value in defaults.items())))
        if key not in built:
            built[key] = compile_builder(rule, append_unknown)
        return built[key]

    Rule._compile_builder = shared


_share_url_builders_across_apps()


def _backends(config) -> list[str]:
    chosen = config.getoption("--db")
    return ["sqlite", "postgresql"] if chosen == "all" else [chosen]


def pytest_addoption(parser):
    parser.addoption("--db", default="all", choices=["all", "sqlite", "postgresql"],
                     help="which databases the database tests run on")


def pytest_generate_tests(metafunc):
    if "backend" in metafunc.fixturenames:
        only = metafunc.definition.get_closest_marker("only_backend")
        chosen = [b for b in _backends(metafunc.config) if only is None or b in only.args]
        metafunc.parametrize("backend", chosen, scope="session")


def _pg_url(dbname: str) -> str:
    return PG_ADMIN_URL.rsplit("/", 1)[0] + "/" + dbname


def _pg_admin(sql: str) -> None:
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(sql)


def migrate(url: str) -> None:
    """Run ``tickwork db upgrade`` against ``url`` in a child process, as an operator would."""
    env = dict(os.environ, TICKWORK_DATABASE_URL=url, TICKWORK_SECRET_KEY=TEST_SECRET, TICKWORK_QUEUE_URL="immediate")
    result = subprocess.run([sys.executable, "-m", "flask", "--app", "wsgi", "db", "upgrade"], cwd=ROOT, env=env,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


class Templates:
    """One migrated database per backend for the whole run, made the first time a test asks for it.

    Tests are parametrized over the backend, so pytest interleaves SQLite and PostgreSQL
    tests; a session fixture parametrized by backend would be torn down and migrated again
    at every switch. This cache is not parametrized, so each template is built once.
    """

    def __init__(self, tmp_path_factory):
        self.tmp_path_factory = tmp_path_factory
        self.built: dict[str, object] = {}

    def get(self, backend: str):
        if backend not in self.built:
            self.built[backend] = self._build(backend)
        return self.built[backend]

    def _build(self, backend: str):
        """A file path on SQLite, a database name on PostgreSQL."""
        if backend == "sqlite":
            path = Path(SQLITE_TEMPLATE or self.tmp_path_factory.mktemp("template") / "template.db")
            if not path.exists():
                building = path.with_name(f"{path.name}.{os.getpid()}")  # renamed whole: a reader never sees half
                migrate(f"sqlite:///{building}")
                building.replace(path)
            return path
        name = f"tickwork_tpl_{WORKER}_{os.getpid()}"
        _pg_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        _pg_admin(f'CREATE DATABASE "{name}"')
        migrate(_pg_url(name))
        return name

    def drop(self) -> None:
        pg_databases.drop_all()
        if "postgresql" in self.built:
            _pg_admin(f'DROP DATABASE IF EXISTS "{self.built["postgresql"]}" WITH (FORCE)')


@pytest.fixture(scope="session")
def templates(tmp_path_factory):
    built = Templates(tmp_path_factory)
    yield built
    built.drop()


@pytest.fixture
def template_db(backend, templates):
    """A migrated database to copy per test: a file path on SQLite, a database name on PostgreSQL."""
    return templates.get(backend)


# What a PostgreSQL database's schema is made of: its tables, columns, indexes, constraints, triggers
# and functions, and the migration it is at. Equal to the template's, the database can be emptied
# and used again; a test that changed any of it (a dropped trigger, a downgrade, a queue's tables)
# gets its database dropped instead.
_SCHEMA_FINGERPRINT = """
SELECT md5(string_agg(item, ',' ORDER BY item)) FROM (
    SELECT 'class:' || c.relname || ':' || c.relkind::text FROM pg_class c
      JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public'
    UNION ALL SELECT 'column:' || attrelid::regclass || '.' || attname || ':' || format_type(atttypid, atttypmod)
      || ':' || attnotnull::text FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
      JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND attnum > 0 AND NOT attisdropped
    UNION ALL SELECT 'constraint:' || conrelid::regclass || '.' || conname || ':' || md5(pg_get_constraintdef(oid))
      FROM pg_constraint WHERE connamespace = 'public'::regnamespace
    UNION ALL SELECT 'index:' || indexrelid::regclass || ':' || md5(pg_get_indexdef(indexrelid)) FROM pg_index i
      JOIN pg_class c ON c.oid = i.indrelid WHERE c.relnamespace = 'public'::regnamespace
    UNION ALL SELECT 'trigger:' || tgrelid::regclass || '.' || tgname || ':' || tgenabled::text || ':' || md5(pg_get_triggerdef(oid))
      FROM pg_trigger WHERE NOT tgisinternal
    UNION ALL SELECT 'function:' || proname || ':' || md5(prosrc) FROM pg_proc WHERE pronamespace = 'public'::regnamespace
    UNION ALL SELECT 'revision:' || version_num FROM alembic_version
) AS schema(item)
"""


class PgDatabases:
    """Each worker's PostgreSQL databases, copied from the template once and emptied between tests.

    ``CREATE DATABASE ... TEMPLATE`` and ``DROP DATABASE`` (which forces a checkpoint) took seconds
    a test on a small box. A database a test gives back is emptied instead: its sessions ended, every
    table's rows deleted (the template's own rows, its migration, are kept) and its sequences
    restarted, in one transaction. That is done only while its schema is still the template's; a
    test that changed the schema, or a database that cannot be emptied, is dropped, and the next
    test gets a fresh copy.
    """

    def __init__(self):
        self.free: list[str] = []
        self.fingerprints: dict[str, str] = {}

    def take(self, template: str) -> str:
        if template not in self.fingerprints:
            with psycopg.connect(_pg_url(template), autocommit=True) as conn:
                self.fingerprints[template] = conn.execute(_SCHEMA_FINGERPRINT).fetchone()[0]
        self.template = template
        if self.free:
            return self.free.pop()
        name = f"tickwork_t_{WORKER}_{uuid.uuid4().hex[:10]}"
        _pg_admin(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        return name

    def give_back(self, name: str) -> None:
        try:
            _pg_admin(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'")
            with psycopg.connect(_pg_url(name)) as conn:
                if conn.execute(_SCHEMA_FINGERPRINT).fetchone()[0] == self.fingerprints[self.template]:
                    _empty(conn)
                    self.free.append(name)
                    return
        except psycopg.Error:
            pass  # not reusable: dropped below
        _pg_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def drop_all(self) -> None:
        for name in self.free:
            _pg_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self.free.clear()


def _empty(conn: psycopg.Connection) -> None:
    """Delete every row but the migration's, and restart every sequence, in one transaction."""
    tables = [row[0] for row in conn.execute(
        "SELECT quote_ident(tablename) FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'alembic_version'")]
    sequences = [row[0] for row in conn.execute(
        "SELECT quote_ident(sequencename) FROM pg_sequences WHERE schemaname = 'public'")]
    conn.execute("SET LOCAL session_replication_role = replica")  # no foreign-key or guard trigger fires
    for table in tables:
        conn.execute(f"DELETE FROM {table}")
    for sequence in sequences:
        conn.execute(f"ALTER SEQUENCE {sequence} RESTART")
    conn.commit()


pg_databases = PgDatabases()


@pytest.fixture
def database_url(backend, template_db, tmp_path):
    """A fresh, migrated database for one test."""
    if backend == "sqlite":
        path = tmp_path / "tickwork.db"
        shutil.copy(template_db, path)
        yield f"sqlite:///{path}"
        return
    name = pg_databases.take(template_db)
    yield _pg_url(name)
    pg_databases.give_back(name)


@pytest.fixture
def clock():
    return FrozenClock(T0)


@pytest.fixture
def app_config(database_url, clock, tmp_path):
    """The test mapping given to create_app; tests may add to it before ``app`` is built."""
    return {
        "TESTING": True,
        "SQLALCHEMY_DATABASE_URI": database_url,
        "SECRET_KEY": TEST_SECRET,
        "TICKWORK_QUEUE_URL": "immediate",
        "TICKWORK_CLOCK": clock,
        "TICKWORK_POLICY": {},
        "TICKWORK_EGRESS_ALLOW": EGRESS_ALLOW,
        "TICKWORK_MEDIA_DIR": str(tmp_path / "media"),
    }


@pytest.fixture
def egress_allow():
    """Set the process's egress allow list for one test (``egress_allow("")`` opens nothing); the
    suite's own list is put back afterwards."""
    from models.core import egress

    yield egress.configure
    egress.configure(EGRESS_ALLOW)


@pytest.fixture
def app(app_config):
    from models.core.database import db
    from webapp import create_app

    app = create_app(app_config)
    yield app
    with app.app_context():
        db.engine.dispose()


@pytest.fixture
def client(app):
    return app.test_client()


WORLD_PASSWORD = "correct horse battery"


@functools.lru_cache(maxsize=None)
def password_hash(password: str) -> str:
    """A test password's hash, made with argon2's cheapest settings: the hash carries its own
    parameters, so every sign-in in the suite verifies in well under a millisecond instead of
    the production setting's tenth of a second. Production hashing is untouched."""
    from argon2 import PasswordHasher

    return PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1).hash(password)


@dataclass
class World:
    """A workspace with one member per role, a token each, and a log channel."""

    workspace_id: int
    tokens: dict  # role -> raw token
    users: dict  # role -> user id
    channel: str

    def auth(self, role: str = "admin") -> dict:
        return {"Authorization": f"Bearer {self.tokens[role]}"}


def make_world(app, name: str = "Acme", zone: str = "America/New_York", channel_kind: str = "log",
               channel_config: dict | None = None, secret: str | None = None) -> World:
    from models.accounts.tables import Membership, User, Workspace
    from models.accounts.tokens import issue_token
    from models.channels.tables import Channel
    from models.core.database import write_session
    from models.core.runtime import runtime

    with app.app_context():
        rt = runtime()
        now = rt.now()
        with write_session() as session:
            workspace = Workspace(name=name, timezone=zone, created_at=now)
            session.add(workspace)
            session.flush()
            channel = Channel(workspace_id=workspace.id, name="main", kind=channel_kind,
                              config=channel_config or {}, created_at=now)
            channel.set_secret(rt.secret_box, secret)
            session.add(channel)
            tokens, users = {}, {}
            for role in ("admin", "ops", "marketer"):
                user = User(email=f"{role}@{name.lower()}.test", created_at=now,
                            password_hash=password_hash(WORLD_PASSWORD))
                session.add(user)
                session.flush()
                session.add(Membership(user_id=user.id, workspace_id=workspace.id, role=role))
                session.flush()
                tokens[role] = issue_token(session, user, workspace, now)
                users[role] = user.id
        return World(workspace_id=workspace.id, tokens=tokens, users=users, channel="main")


def add_member_with_token(app, world: World, role: str, *, email: str | None = None) -> int:
    """One more member of ``world``'s workspace with ``role`` and a token, filed under the role's name."""
    from models.accounts.tables import Membership, User, Workspace
    from models.accounts.tokens import issue_token
    from models.core.database import write_session
    from models.core.runtime import runtime

    with app.app_context():
        now = runtime().now()
        with write_session() as session:
            workspace = session.get(Workspace, world.workspace_id)
            user = User(email=email or f"{role}@{workspace.name.lower()}.test", created_at=now,
                        password_hash=password_hash(WORLD_PASSWORD))
            session.add(user)
            session.flush()
            session.add(Membership(user_id=user.id, workspace_id=workspace.id, role=role))
            session.flush()
            world.tokens[role] = issue_token(session, user, workspace, now)
            world.users[role] = user.id
    return world.users[role]


@pytest.fixture
def world(app) -> World:
    return make_world(app)
