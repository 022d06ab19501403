"""The ``tickwork`` entry point, which starts no more than the command asked for needs.

- ``tickwork --help`` lists the commands from :data:`COMMANDS`, a table of names and their
  one-line help, and builds no app (:func:`flask_group`); ``tests/web/test_command_line.py``
  holds the table to the app's real commands, so a command added to the app without a line
  here fails the suite.
- The commands of :data:`DATABASE_ONLY` (people, tokens, ``workspace create``) need only the database: they run
  without Flask, the wings or the job machinery (``webapp.database_commands``), after the same
  checks of the settings a starting app makes.
- Every other command builds the app, as ``flask --app wsgi`` does.

Importing this module imports no Flask.
"""

import functools
import os
import sys

import click

# Every command the app offers, with its help's first sentence: the app's own (webapp.cli,
# jobs.cli, one per clock job), Flask-Migrate's ``db``, Flask-Limiter's ``limiter`` and
# Flask's ``run``, ``shell`` and ``routes``.
COMMANDS = {
    "alerts": "Run one alerts pass now and print its summary as JSON.",
    "archive": "Run one archive pass now and print its summary as JSON.",
    "assets": "Fetch the dashboard's pinned static files (webapp/assets.toml) from the npm registry, checked by "
              "sha512.",
    "backup": "Copy the SQLite app database and queue into the new folder PATH, consistently, while Tickwork runs.",
    "channel": "Manage channels.",
    "consumer": "Run a queue consumer: dispatch tasks and (unless --no-periodic) the clock jobs; or, with --queue "
                "works, work generations.",
    "db": "Perform database migrations.",
    "demo": "Load a demo workspace with people, channels and a few weeks of actions; print the login.",
    "dispatch-works": "Run one dispatch-works pass now and print its summary as JSON.",
    "drip-advance": "Run one drip-advance pass now and print its summary as JSON.",
    "expand": "Run one expand pass now and print its summary as JSON.",
    "expire-posts": "Run one expire-posts pass now and print its summary as JSON.",
    "forget-keys": "Run one forget-keys pass now and print its summary as JSON.",
    "limiter": "Flask-Limiter maintenance & utility commands",
    "plugins": "List the plugin registry: the built-in pipelines and every plugin installed through an entry point.",
    "reconcile": "Run one reconcile pass now and print its summary as JSON.",
    "refresh-tokens": "Run one refresh-tokens pass now and print its summary as JSON.",
    "recover": "Fail rows left submitted by dead workers (worker lost; outcome unknown) and print the summary.",
    "restore": "Put the backup folder PATH in place (consumers stopped); rows that may have gone out since fail as "
               "unknown.",
    "routes": "Show the routes for the app.",
    "run": "Run a development server.",
    "serve": "Run Tickwork on one box: a web process, a consumer and a works consumer, restarted if they die.",
    "shell": "Run a shell in the app context.",
    "tick": "Run one tick pass now and print its summary as JSON.",
    "token": "Manage API tokens.",
    "user": "Manage people.",
    "workspace": "Manage workspaces.",
}


# The commands that need only the database, run without building the app (webapp.database_commands):
# each is the words that begin its command line.
DATABASE_ONLY = (("token",), ("user",), ("workspace", "create"))


def runs_without_the_app(args: list[str]) -> bool:
    """Whether ``tickwork ARGS`` is a database-only command that Flask's group would run exactly alike.

    Not when an option comes before the command (``--app``, ``--env-file``, ``--debug`` are Flask's),
    when ``FLASK_APP`` names another app, or when a ``.env``/``.flaskenv`` file is here or python-dotenv is
    installed: Flask's group reads those files (or says it cannot), and then goes its own way.
    """
    if not any(tuple(args[:len(words)]) == words for words in DATABASE_ONLY) or os.environ.get("FLASK_APP"):
        return False
    if os.path.isfile(".env") or os.path.isfile(".flaskenv"):
        return False
    from importlib.util import find_spec

    return find_spec("dotenv") is None


def _create_app():
    from webapp import create_app

    return create_app()


@click.command("assets")
@click.option("--registry", envvar="TICKWORK_NPM_REGISTRY", default=None, show_envvar=True,
              help="npm registry to fetch from (default https://registry.npmjs.org)")
@click.option("--force", is_flag=True, help="fetch again even when the files in place are the pinned ones")
def assets_command(registry, force):
    """Fetch the dashboard's pinned static files (webapp/assets.toml) from the npm registry, checked by sha512."""
    from webapp import assets

    try:
        done = assets.fetch_assets(assets.STATIC_DIR, registry or assets.DEFAULT_REGISTRY, force=force)
    except assets.AssetError as exc:
        raise click.ClickException(str(exc)) from None
    for line in done:
        click.echo(line)


@functools.cache
def flask_group() -> click.Group:
    """Flask's group, listing :data:`COMMANDS` instead of building the app to ask it; made on first use,
    since importing Flask is most of what ``tickwork --help`` costs and the database-only commands need none."""
    from flask.cli import FlaskGroup

    class TickworkGroup(FlaskGroup):
        """Flask's group, listing :data:`COMMANDS` instead of building the app to ask it."""

        def list_commands(self, ctx: click.Context) -> list[str]:
            return sorted(COMMANDS)

        def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
            width = max(map(len, COMMANDS))
            limit = formatter.width - 6 - width
            rows = [(name, click.utils.make_default_short_help(COMMANDS[name], limit)) for name in sorted(COMMANDS)]
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    group = TickworkGroup(create_app=_create_app, add_version_option=False,
                          help="Tickwork: actions that fire on time, once.")
    # Needs no app (nor a database): it runs from a fresh install, before anything is configured.
    group.add_command(assets_command)
    return group


def __getattr__(name: str):
    if name == "cli":  # the group as an attribute, made when first asked for
        return flask_group()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main():
    from models.core.errors import ConfigurationError
    from models.core.files import set_private_umask

    set_private_umask()  # before anything is created: the database, its WAL, the queue, backups

    args = sys.argv[1:]
    try:
        if runs_without_the_app(args):
            from webapp.database_commands import database_only, database_only_group

            database = database_only()  # the settings are checked first, as building the app checks them
            database_only_group().main(args, prog_name="tickwork", obj=database)
        else:
            flask_group().main(prog_name="tickwork")
    except ConfigurationError as exc:
        click.echo(f"tickwork: {exc}", err=True)
        raise SystemExit(2) from None
