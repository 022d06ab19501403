"""The ``tickwork`` commands that need only the database: people (``user``), API tokens (``token``) and
``workspace create``.

Run as ``tickwork token ...`` (and so on) they build no app: :func:`database_only` reads and checks the
settings as the app would (a setting no process could start with stops them too), opens the
database with SQLAlchemy alone, and imports no Flask, no wing and no job machinery, so they
start in a fraction of the time a command that builds the app takes (``bench/cli.py``).
Run through the app's own command line (``flask --app wsgi token ...``, a test's CLI runner),
the same commands use the app's database and clock instead. Either way they import only the
accounts floor of the domain, and answer alike.
"""

import functools
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import datetime

import click
from sqlalchemy.orm import Session

from models.accounts.members import add_member, find_user
from models.accounts.tables import Role
from models.accounts.tokens import expiry_after, issue_token
from models.accounts.workspaces import create_workspace, find_workspace
from models.core.errors import DomainError


@dataclass(frozen=True)
class Database:
    """What a database-only command works with: the time now, and a write transaction."""

    now: Callable[[], datetime]
    write: Callable[[], AbstractContextManager[Session]]


def open_database(config: dict, instance_path: str) -> Database:
    """The database of ``config`` (:func:`webapp.config.database_only_settings`), opened as the app opens it
    (Flask-SQLAlchemy's defaults for the URL and the app's per-dialect connection set-up), on the system clock."""
    import os

    from sqlalchemy import create_engine, make_url
    from sqlalchemy.pool import StaticPool

    from models.core.engine import configure_engine, engine_write_session
    from models.timing.clock import SystemClock

    options = dict(config.get("SQLALCHEMY_ENGINE_OPTIONS") or {})
    url = make_url(config["SQLALCHEMY_DATABASE_URI"])
    if url.drivername in ("sqlite", "sqlite+pysqlite"):
        if url.database in (None, "", ":memory:"):
            options["poolclass"] = StaticPool
            options.setdefault("connect_args", {})["check_same_thread"] = False
        else:  # a relative path is the instance folder's, as Flask-SQLAlchemy has it
            uri = url.query.get("uri", False)
            path = url.database[5:] if uri else url.database
            if not os.path.isabs(path):
                os.makedirs(instance_path, exist_ok=True)
                path = os.path.join(instance_path, path)
                url = url.set(database=f"file:{path}" if uri else path)
    engine = create_engine(url, **options)
    configure_engine(engine)
    return Database(now=SystemClock().now, write=lambda: engine_write_session(engine))


def database_only() -> Database:
    """The database of the settings in the environment, checked as a starting app checks them."""
    from webapp.config import database_only_settings, instance_folder

    return open_database(database_only_settings(), instance_folder())


def _app_database(ctx: click.Context) -> Database:
    """The app's database and clock, the app loaded as Flask's own ``with_appcontext`` loads it."""
    from flask import current_app
    from flask.cli import ScriptInfo

    from models.core.database import write_session
    from models.core.runtime import runtime

    if not current_app:
        ctx.with_resource(ctx.ensure_object(ScriptInfo).load_app().app_context())
    return Database(now=runtime().now, write=write_session)


def with_database(command):
    """Run ``command`` with a :class:`Database` as its first argument: the one :func:`database_only` opened
    for ``tickwork`` (``ctx.obj``), else the app's."""

    @functools.wraps(command)
    def run(*args, **kwargs):
        ctx = click.get_current_context()
        database = ctx.find_object(Database) or _app_database(ctx)
        return command(database, *args, **kwargs)

    return run


def fail(message: str):
    raise click.ClickException(message)


@contextmanager
def refusals_as_one_line() -> Iterator[None]:
    """A domain refusal ends the command with its message, exit 1, and nothing written."""
    try:
        yield
    except DomainError as exc:
        fail(exc.message)


@click.command("create")
@click.argument("name")
@click.option("--timezone", "zone", required=True, help="IANA zone, for example Europe/Paris")
@click.option("--plan", default="free", show_default=True)
@with_database
def workspace_create(database, name, zone, plan):
    """Create a workspace."""
    with refusals_as_one_line(), database.write() as session:
        create_workspace(session, name=name, zone=zone, plan=plan, now=database.now())
    click.echo(f"workspace {name} created ({zone})")


@click.group("user")
def user_cli():
    """Manage people."""


def _password_from_stdin_or_prompt(password: str | None) -> str:
    if password is None:
        if sys.stdin.isatty():
            password = click.prompt("Password", hide_input=True, confirmation_prompt=True)
        else:
            password = sys.stdin.readline().rstrip("\n")
    return password


@user_cli.command("create")
@click.argument("email")
@click.option("--workspace", "workspace_name", required=True)
@click.option("--role", type=click.Choice([r.value for r in Role]), required=True)
@click.option("--password", envvar="TICKWORK_PASSWORD", default=None, hidden=True)
@with_database
def user_create(database, email, workspace_name, role, password):
    """Create a user (or add an existing one to a workspace); the password comes from stdin or a prompt."""
    password = _password_from_stdin_or_prompt(password)
    with refusals_as_one_line(), database.write() as session:
        workspace = find_workspace(session, workspace_name)
        membership = add_member(session, workspace.id, email=email, role=role, password=password or None,
                                now=database.now())
        email = membership.user.email
    click.echo(f"{email} is {role} in {workspace_name}")


@user_cli.command("set-password")
@click.argument("email")
@click.option("--password", envvar="TICKWORK_PASSWORD", default=None, hidden=True)
@with_database
def user_set_password(database, email, password):
    """Give a person a new password (from stdin or a prompt); every session of theirs ends."""
    from models.accounts.sessions import set_password

    password = _password_from_stdin_or_prompt(password)
    with refusals_as_one_line(), database.write() as session:
        user = find_user(session, email)
        ended = set_password(session, user.id, password, now=database.now())
        email = user.email
    click.echo(f"password of {email} changed; {ended} session{'s' if ended != 1 else ''} ended")


@user_cli.command("deactivate")
@click.argument("email")
@with_database
def user_deactivate(database, email):
    """Stop a person from signing in or using a token: their sessions end and their tokens are revoked."""
    from models.accounts.sessions import deactivate_user

    with refusals_as_one_line(), database.write() as session:
        user = find_user(session, email)
        deactivate_user(session, user.id, now=database.now())
        email = user.email
    click.echo(f"{email} deactivated")


@click.group("token")
def token_cli():
    """Manage API tokens."""


@token_cli.command("create")
@click.argument("email")
@click.option("--workspace", "workspace_name", required=True)
@click.option("--name", default="command line", show_default=True, help="what the token is for")
@click.option("--expires-days", default=None, help="whole days until it stops working (default: never)")
@with_database
def token_create(database, email, workspace_name, name, expires_days):
    """Create an API token and print it once."""
    now = database.now()
    with refusals_as_one_line(), database.write() as session:
        raw = issue_token(session, find_user(session, email), find_workspace(session, workspace_name), now,
                          name=name, expires_at=expiry_after(expires_days, now=now))
    click.echo(raw)


@token_cli.command("list")
@click.option("--workspace", "workspace_name", required=True)
@click.option("--email", default=None, help="only this person's tokens")
@with_database
def token_list(database, workspace_name, email):
    """List a workspace's tokens that were not revoked (never their secret), as JSON lines."""
    from models.accounts.tokens import list_tokens, token_state

    now = database.now()
    with refusals_as_one_line(), database.write() as session:
        workspace = find_workspace(session, workspace_name)
        user_id = find_user(session, email).id if email else None
        for token in list_tokens(session, workspace.id, user_id=user_id):
            click.echo(json.dumps({"id": token.id, "name": token.name, "email": token.user.email,
                                   "state": token_state(token, now), "created_at": token.created_at.isoformat(),
                                   "expires_at": token.expires_at and token.expires_at.isoformat(),
                                   "last_used_at": token.last_used_at and token.last_used_at.isoformat()}))


@token_cli.command("revoke")
@click.argument("token_id", type=click.IntRange(min=1, max=2**31 - 1))
@with_database
def token_revoke(database, token_id):
    """Revoke the token with this id (``tickwork token list`` shows ids); it stops working at once."""
    from models.accounts.tokens import revoke_token_by_id

    with refusals_as_one_line(), database.write() as session:
        token = revoke_token_by_id(session, token_id, now=database.now())
        label = f"token #{token.id} ({token.name or 'unnamed'}) of {token.user.email}"
    click.echo(f"{label} revoked")


# The groups the app registers whole (webapp.cli); ``workspace create`` joins the app's ``workspace`` group.
GROUPS = (user_cli, token_cli)


def database_only_group() -> click.Group:
    """``tickwork`` as it runs the commands of ``webapp.command_line.DATABASE_ONLY``."""
    workspace = click.Group("workspace", commands=[workspace_create], help="Manage workspaces.")
    return click.Group("tickwork", commands=[*GROUPS, workspace])
