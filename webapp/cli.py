"""The `tickwork` commands that need the app (registered by `init_app`, with the database-only ones of
`webapp.database_commands`; the entry point is `webapp.command_line`)."""

import json
from pathlib import Path

import click
from flask import Flask
from flask.cli import with_appcontext
from sqlalchemy import select

from jobs import cli as jobs_cli
from models.accounts.workspaces import change_workspace_zone, find_workspace
from models.channels.operations import read_from_network, save_channel
from models.core.database import write_session
from models.core.moves import Actor
from models.core.runtime import runtime
from webapp import database_commands
from webapp.database_commands import fail as _fail, refusals_as_one_line as _refusals_as_one_line


@click.group("workspace")
def workspace_cli():
    """Manage workspaces."""


workspace_cli.add_command(database_commands.workspace_create)


@workspace_cli.command("set-timezone")
@click.argument("name")
@click.argument("zone")
@with_appcontext
def workspace_set_timezone(name, zone):
    """Change a workspace's zone and move what follows it (queued rows); print what moved as JSON."""
    rt = runtime()
    with _refusals_as_one_line(), write_session() as session:
        workspace = find_workspace(session, name)
        moved = change_workspace_zone(session, workspace.id, zone, hooks=rt.hooks, now=rt.now(),
                                      actor=Actor(label="cli:set-timezone"), policy=rt.policy)
    click.echo(json.dumps(moved, sort_keys=True))


@workspace_cli.command("set-plan")
@click.argument("name")
@click.argument("plan")
@with_appcontext
def workspace_set_plan(name, plan):
    """Change a workspace's plan; subscription schedules it no longer allows are paused (and notified)."""
    from jobs.works import works_context
    from models.works.operations import change_workspace_plan

    context = works_context()
    with _refusals_as_one_line(), write_session() as session:
        workspace = find_workspace(session, name)
        changed = change_workspace_plan(session, workspace.id, plan, now=context.clock.now(),
                                        actor=Actor(label="cli:set-plan"), context=context)
    context.announce(changed.pop("actions"))
    click.echo(json.dumps(changed, sort_keys=True))


@click.group("channel")
def channel_cli():
    """Manage channels."""


@channel_cli.command("add")
@click.option("--workspace", "workspace_name", required=True)
@click.option("--name", required=True)
@click.option("--kind", required=True)
@click.option("--url", default=None, help="endpoint (webhook), the webhook's URL without its token (discord), "
              "or base URL (postmark, twilio, mastodon, slack, telegram)")
@click.option("--secret", default=None, help="stored encrypted; never shown again")
@click.option("--config", "config_json", default=None, help="extra non-secret settings as a JSON object")
@with_appcontext
def channel_add(workspace_name, name, kind, url, secret, config_json):
    """Add a channel to a workspace."""
    try:
        config = json.loads(config_json) if config_json else {}
    except json.JSONDecodeError as exc:
        _fail(f"--config is not JSON: {exc.msg}")
    if not isinstance(config, dict):
        _fail("--config must be a JSON object")
    if url:
        config["url"] = url
    rt = runtime()
    config = read_from_network(kind, config, secret=secret, now=rt.now())  # before the write lock: it may call out
    with _refusals_as_one_line(), write_session() as session:
        workspace = find_workspace(session, workspace_name)
        save_channel(session, workspace.id, name=name, kind=kind, config=config, secret=secret, box=rt.secret_box,
                     now=rt.now(), actor=Actor(label="cli:channel add"))
    click.echo(f"channel {name} ({kind}) added to {workspace_name}")


@click.command("demo")
@with_appcontext
def demo_command():
    """Load a demo workspace with people, channels and a few weeks of actions; print the login."""
    from models.demo import load_demo

    with _refusals_as_one_line():
        login = load_demo(runtime())
    click.echo(login)


def _sqlite_file(url: str) -> Path | None:
    """The file behind a ``sqlite:///PATH`` URL, else None."""
    for prefix in ("sqlite:///", "sqlite+pysqlite:///"):
        if url.startswith(prefix) and url != prefix + ":memory:":
            return Path(url.removeprefix(prefix))
    return None


def _box():
    from flask import current_app

    from models.backups.operations import Box

    app_database = _sqlite_file(current_app.config["SQLALCHEMY_DATABASE_URI"])
    if app_database is None:
        _fail("the app database is PostgreSQL: back it up with pg_dump, as docs/operations.md (Backups) shows; "
              "tickwork backup and restore are for the single box's SQLite files")
    return Box(app_database=app_database, queue_database=_sqlite_file(current_app.config["TICKWORK_QUEUE_URL"]))


def _migrations_head() -> str:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    from webapp import MIGRATIONS_DIR

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return ScriptDirectory.from_config(config).get_current_head()


@click.command("backup")
@click.argument("path", type=click.Path(path_type=Path))
@with_appcontext
def backup_command(path):
    """Copy the SQLite app database and queue into the new folder PATH, consistently, while Tickwork runs."""
    from models.backups.operations import take_backup

    with _refusals_as_one_line():
        manifest = take_backup(_box(), path, now=runtime().now())
    click.echo(json.dumps(manifest, sort_keys=True))


@click.command("restore")
@click.argument("path", type=click.Path(path_type=Path))
@with_appcontext
def restore_command(path):
    """Put the backup folder PATH in place (consumers stopped); rows that may have gone out since fail as unknown."""
    from models.backups.operations import restore_backup
    from models.core.database import db

    with _refusals_as_one_line():
        done = restore_backup(path, _box(), live=db.engine, revision=_migrations_head(), now=runtime().now(),
                              actor=Actor(label="cli:restore"))
    db.engine.dispose()  # this process's connections saw the database before the restore
    click.echo(json.dumps(done, sort_keys=True))


def report_refused_destinations() -> list[str]:
    """The channels and works whose destination the egress policy refuses, one line each (empty when none)."""
    from models.accounts.tables import Workspace
    from models.channels.operations import refused_channels
    from models.core.database import read_session
    from models.works.reading import refused_works

    with read_session() as session:
        names = dict(session.execute(select(Workspace.id, Workspace.name)).all())
        lines = [f"  channel {channel.name} ({channel.kind}) in workspace {names.get(channel.workspace_id)}: "
                 f"{field}: {why}" for channel, field, why in refused_channels(session)]
        lines += [f"  work {work.name} (webhook pipeline) in workspace {names.get(work.workspace_id)}: "
                  f"settings.url: {why}" for work, why in refused_works(session)]
    if not lines:
        return []
    return ["The egress policy refuses these destinations; each send or run to them fails with "
            "\"destination not allowed\" until it is allowed:", *lines,
            "To keep one (an on-premises relay or receiver), add its address or host name to TICKWORK_EGRESS_ALLOW "
            "(comma-separated CIDRs and host names, e.g. TICKWORK_EGRESS_ALLOW=127.0.0.1/32,relay.internal) "
            "and restart; or change its destination."]


def _db_group_reporting_destinations(app: Flask) -> click.Group:
    """Flask-Migrate's ``db`` group, its ``upgrade`` followed by :func:`report_refused_destinations`.

    A copy: the library's own group is left as it is.
    """
    original = app.cli.commands["db"]
    upgrade = original.commands["upgrade"]

    @with_appcontext
    def upgraded(*args, **kwargs):
        upgrade.callback(*args, **kwargs)
        if kwargs.get("sql"):
            return
        for line in report_refused_destinations():
            click.echo(line)

    commands = dict(original.commands)
    commands["upgrade"] = click.Command("upgrade", params=upgrade.params, callback=upgraded,
                                        help=(upgrade.help or "") + " Then lists the channels and works whose "
                                        "destination the egress policy refuses.")
    return click.Group(name="db", commands=commands, params=original.params, callback=original.callback,
                       help=original.help)


def init_app(app: Flask) -> None:
    for command in (workspace_cli, *database_commands.GROUPS, channel_cli, demo_command, backup_command,
                    restore_command):
        app.cli.add_command(command)
    if "db" in app.cli.commands:
        app.cli.add_command(_db_group_reporting_destinations(app))
    jobs_cli.init_app(app)
