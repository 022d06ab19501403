"""The ``tickwork`` command line (also ``flask --app wsgi ...``)."""

import json
import sys

import click
from flask import Flask
from flask.cli import FlaskGroup, with_appcontext
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from jobs import cli as jobs_cli
from models.accounts.tables import Membership, Role, User, Workspace
from models.accounts.tokens import issue_token
from models.channels.tables import Channel
from models.channels.operations import validate_channel
from models.core.database import db, write_session
from models.core.errors import DomainError
from models.timing.wall_time import InvalidTimezone
from models.core.runtime import runtime


def _fail(message: str):
    raise click.ClickException(message)


def _workspace(session, name: str) -> Workspace:
    workspace = session.scalar(select(Workspace).where(Workspace.name == name))
    if workspace is None:
        _fail(f"no workspace named {name!r}")
    return workspace


def _user(session, email: str) -> User:
    user = session.scalar(select(User).where(User.email == email.strip().lower()))
    if user is None:
        _fail(f"no user {email!r}")
    return user


@click.group("workspace")
def workspace_cli():
    """Manage workspaces."""


@workspace_cli.command("create")
@click.argument("name")
@click.option("--timezone", "zone", required=True, help="IANA zone, for example Europe/Paris")
@click.option("--plan", default="free", show_default=True)
@with_appcontext
def workspace_create(name, zone, plan):
    """Create a workspace."""
    try:
        with write_session() as session:
            if session.scalar(select(Workspace).where(Workspace.name == name.strip())):
                _fail(f"a workspace named {name!r} already exists")
            session.add(Workspace(name=name, timezone=zone, plan=plan, created_at=runtime().now()))
    except (InvalidTimezone, ValueError) as exc:
        _fail(str(exc))
    click.echo(f"workspace {name} created ({zone})")


@click.group("user")
def user_cli():
    """Manage people."""


@user_cli.command("create")
@click.argument("email")
@click.option("--workspace", "workspace_name", required=True)
@click.option("--role", type=click.Choice([r.value for r in Role]), required=True)
@click.option("--password", envvar="TICKWORK_PASSWORD", default=None, hidden=True)
@with_appcontext
def user_create(email, workspace_name, role, password):
    """Create a user (or add an existing one to a workspace); the password comes from stdin or a prompt."""
    if password is None:
        if sys.stdin.isatty():
            password = click.prompt("Password", hide_input=True, confirmation_prompt=True)
        else:
            password = sys.stdin.readline().rstrip("\n")
    email = email.strip().lower()
    if "@" not in email or len(email) > 254:
        _fail(f"{email!r} is not an email address")
    try:
        with write_session() as session:
            workspace = _workspace(session, workspace_name)
            user = session.scalar(select(User).where(User.email == email))
            if user is None:
                user = User(email=email, created_at=runtime().now())
                user.set_password(password)
                session.add(user)
                session.flush()
            elif session.scalar(select(Membership).where(Membership.user_id == user.id,
                                                         Membership.workspace_id == workspace.id)):
                _fail(f"{email} is already a member of {workspace_name}")
            session.add(Membership(user_id=user.id, workspace_id=workspace.id, role=role))
    except ValueError as exc:
        _fail(str(exc))
    click.echo(f"{email} is {role} in {workspace_name}")


@click.group("token")
def token_cli():
    """Manage API tokens."""


@token_cli.command("create")
@click.argument("email")
@click.option("--workspace", "workspace_name", required=True)
@with_appcontext
def token_create(email, workspace_name):
    """Create an API token and print it once."""
    try:
        with write_session() as session:
            raw = issue_token(session, _user(session, email), _workspace(session, workspace_name), runtime().now())
    except ValueError as exc:
        _fail(str(exc))
    click.echo(raw)


@click.group("channel")
def channel_cli():
    """Manage channels."""


@channel_cli.command("add")
@click.option("--workspace", "workspace_name", required=True)
@click.option("--name", required=True)
@click.option("--kind", required=True)
@click.option("--url", default=None, help="endpoint (webhook) or base URL (postmark, twilio, mastodon)")
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
    try:
        validate_channel(name, kind, config)
        with write_session() as session:
            workspace = _workspace(session, workspace_name)
            channel = Channel(workspace_id=workspace.id, name=name, kind=kind, config=config,
                              created_at=runtime().now())
            channel.set_secret(runtime().secret_box, secret)
            session.add(channel)
            session.flush()
    except ValueError as exc:
        _fail(str(exc))
    except IntegrityError:
        _fail(f"{workspace_name} already has a channel named {name!r}")
    click.echo(f"channel {name} ({kind}) added to {workspace_name}")


@click.command("demo")
@with_appcontext
def demo_command():
    """Load a demo workspace with people, channels and a few weeks of actions; print the login."""
    from models.demo import load_demo

    try:
        login = load_demo(runtime())
    except DomainError as exc:
        _fail(exc.message)
    click.echo(login)


def init_app(app: Flask) -> None:
    for command in (workspace_cli, user_cli, token_cli, channel_cli, demo_command):
        app.cli.add_command(command)
    jobs_cli.init_app(app)


def _create_app():
    from webapp import create_app

    return create_app()


cli = FlaskGroup(create_app=_create_app, add_version_option=False, help="Tickwork: actions that fire on time, once.")


def main():
    from models.core.errors import ConfigurationError

    try:
        cli.main(prog_name="tickwork")
    except ConfigurationError as exc:
        click.echo(f"tickwork: {exc}", err=True)
        raise SystemExit(2) from None
