"""``tickwork --help`` lists every command without building the app, and its list is the app's."""

import json
import subprocess
import sys

from tests.conftest import ROOT
from webapp.command_line import COMMANDS

# The app as `tickwork` builds it, asked for every command it offers and its one-line help.
APP_COMMANDS = """
import json
import click
from flask.cli import FlaskGroup, ScriptInfo
from webapp.command_line import cli
ctx = click.Context(cli, obj=ScriptInfo(create_app=cli.create_app))
names = FlaskGroup.list_commands(cli, ctx)  # Flask's own listing: its commands, plugins' and the app's
print(json.dumps({name: cli.get_command(ctx, name).get_short_help_str(limit=10_000) for name in names}))
"""

HELP_AND_MODULES = """
import json, sys
from webapp.command_line import cli
try:
    cli.main(["--help"], prog_name="tickwork")
except SystemExit:
    pass
print(json.dumps(sorted(name for name in sys.modules
                        if name.split(".")[0] in ("jobs", "sqlalchemy", "huey", "httpx")
                        or name.startswith(("webapp.cli", "webapp.views", "webapp.api", "models.actions")))))
"""


def run_python(program: str, tmp_path) -> str:
    env = {"PATH": "/usr/bin:/bin", "TICKWORK_SECRET_KEY": "x" * 40, "TICKWORK_QUEUE_URL": "immediate",
           "TICKWORK_DATABASE_URL": f"sqlite:///{tmp_path / 'tickwork.db'}"}
    done = subprocess.run([sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_listed_commands_are_exactly_the_apps_with_their_own_help(tmp_path):
    assert COMMANDS == json.loads(run_python(APP_COMMANDS, tmp_path).splitlines()[-1])


def test_help_lists_every_command_and_builds_no_app(tmp_path):
    *listing, imported = run_python(HELP_AND_MODULES, tmp_path).splitlines()
    names = [line.split()[0] for line in listing[listing.index("Commands:") + 1:] if line.startswith("  ")]
    assert names == sorted(COMMANDS)
    assert json.loads(imported) == []


def test_the_instance_folder_is_where_flask_puts_it():
    """The database-only commands find the default database and the generated secret key where the app does."""
    from flask import Flask

    from webapp.config import instance_folder

    assert instance_folder() == Flask("webapp").auto_find_instance_path()
