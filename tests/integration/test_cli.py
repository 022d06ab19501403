"""The ``tickwork`` command line: each command works, and each error is one clear line with a non-zero exit."""

import os
import shutil
import subprocess
import sys

import pytest
from sqlalchemy import func, select

from models.actions.tables import ScheduledAction
from models.core.database import read_session
from models.drips.tables import Campaign, Enrollment
from models.posts.tables import Post
from models.recurring.tables import RecurringSchedule
from models.works.tables import Work, WorkSchedule
from tests.conftest import ROOT, TEST_SECRET


@pytest.fixture
def cli(app):
    runner = app.test_cli_runner()

    def run(*args, input=None):
        return runner.invoke(args=list(args), input=input)

    return run


def _ok(result):
    assert result.exit_code == 0, result.output
    return result.output


def _refused(result, fragment):
    assert result.exit_code != 0
    assert fragment in result.output
    assert "Traceback" not in result.output
    assert len([line for line in result.output.splitlines() if line.strip()]) == 1, result.output


def test_workspace_user_token_and_channel_make_a_working_api_caller(app, cli, client):
    _ok(cli("workspace", "create", "Hooli", "--timezone", "Europe/Berlin"))
    _ok(cli("user", "create", "Gavin@Hooli.test", "--workspace", "Hooli", "--role", "admin", input="long enough pw\n"))
    token = _ok(cli("token", "create", "gavin@hooli.test", "--workspace", "Hooli")).strip()
    _ok(cli("channel", "add", "--workspace", "Hooli", "--name", "hook", "--kind", "webhook",
            "--url", "http://127.0.0.1:9/hook", "--secret", "shh"))
    answer = client.post("/api/v1/actions", headers={"Authorization": f"Bearer {token}"}, json={
        "action_type": "send_email", "channel": "hook", "target_key": "x", "payload": {},
        "local_time": "2026-06-02T09:00"})
    assert answer.status_code == 201 and answer.json["publish_at"] == "2026-06-02T07:00:00Z"


@pytest.mark.parametrize("args, fragment", [
    (("workspace", "create", "Bad", "--timezone", "Mars/Base"), "not an IANA time zone"),
    (("user", "create", "x@y.test", "--workspace", "Nowhere", "--role", "ops"), "no workspace named"),
    (("user", "create", "not-an-email", "--workspace", "Acme", "--role", "ops"), "give an email address like"),
    (("token", "create", "ghost@acme.test", "--workspace", "Acme"), "no user"),
    (("channel", "add", "--workspace", "Acme", "--name", "h", "--kind", "pigeon"), "Unknown channel kind"),
    (("channel", "add", "--workspace", "Acme", "--name", "h", "--kind", "webhook", "--url", "ftp://x"),
     "needs an http(s) url"),
    (("channel", "add", "--workspace", "Acme", "--name", "main", "--kind", "log"), "already exists"),
    (("channel", "add", "--workspace", "Acme", "--name", "h", "--kind", "log", "--config", "{oops"), "not JSON"),
    (("channel", "add", "--workspace", "Acme", "--name", "m", "--kind", "smtp", "--config",
      '{"host": "relay.test", "tls_verify": "false"}'), "tls_verify is true or false"),
    (("channel", "add", "--workspace", "Acme", "--name", "m", "--kind", "smtp", "--config",
      '{"host": "relay.test", "ca_file": "/nowhere/relay-ca.pem"}'), "there is no file at /nowhere/relay-ca.pem"),
])
def test_each_bad_command_exits_non_zero_with_one_clear_line(world, cli, args, fragment):
    _refused(cli(*args, input="long enough pw\n"), fragment)


def test_a_short_password_is_refused(world, cli):
    _refused(cli("user", "create", "new@acme.test", "--workspace", "Acme", "--role", "ops", input="short\n"),
             "at least 8 characters")


def test_a_duplicate_workspace_is_refused(world, cli):
    _refused(cli("workspace", "create", "Acme", "--timezone", "UTC"), "already exists")


def test_demo_loads_every_status_and_every_wing_and_prints_the_login_again_on_a_second_run(app, cli):
    output = _ok(cli("demo"))
    assert "admin@demo.test" in output and "password" in output
    with app.app_context(), read_session() as session:
        statuses = dict(session.execute(select(ScheduledAction.status, func.count())
                                        .group_by(ScheduledAction.status)).all())
        origins = set(session.scalars(select(ScheduledAction.origin).distinct()))
        wings = {table.__tablename__: session.scalar(select(func.count()).select_from(table))
                 for table in (Post, RecurringSchedule, Campaign, Enrollment, Work, WorkSchedule)}
    assert {"queued", "published", "failed", "cancelled"} <= set(statuses)
    # A newcomer sees every wing: posts, rules, a drip whose first step is queued, works on a cadence.
    assert {"person", "reconciler", "recurring", "drip"} <= origins
    assert all(wings.values()), wings
    with app.app_context(), read_session() as session:
        before = session.scalar(select(func.count()).select_from(ScheduledAction))
    again = _ok(cli("demo"))  # a second scripts/run.sh: the sign-in again, nothing loaded twice
    assert "already loaded" in again and "admin@demo.test" in again and "password" in again
    with app.app_context(), read_session() as session:
        assert session.scalar(select(func.count()).select_from(ScheduledAction)) == before


def test_the_installed_command_reports_errors_without_a_traceback(database_url):
    tickwork = shutil.which("tickwork", path=str(ROOT / ".venv" / "bin")) or shutil.which("tickwork")
    assert tickwork, "the tickwork command is installed by pyproject's [project.scripts]"
    env = dict(os.environ, TICKWORK_DATABASE_URL=database_url, TICKWORK_SECRET_KEY=TEST_SECRET,
               TICKWORK_QUEUE_URL="immediate")
    result = subprocess.run([tickwork, "workspace", "create", "X", "--timezone", "Nowhere/Land"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr and "not an IANA time zone" in result.stderr


@pytest.mark.parametrize("setting, value, fragment", [
    ("TICKWORK_POLICY_JSON", "{dispatch", "TICKWORK_POLICY_JSON is not valid JSON"),
    ("TICKWORK_POLICY_JSON", "[1]", "must be a JSON object"),
    ("TICKWORK_POLICY_JSON", '{"dispatch_chunk": 0}', "dispatch_chunk is from 1 to 1000 rows"),
    ("TICKWORK_POLICY_JSON", '{"tick_budget": "soon"}', "tick_budget is a number of seconds"),
    ("TICKWORK_POLICY_JSON", '{"recovery_timeout": 1}', "timeouts must be ordered"),
    ("TICKWORK_POLICY_JSON", '{"nope": 1}', "unknown policy setting 'nope'"),
    ("TICKWORK_POLICY_JSON", '{"max_attempts": 50}', "max_attempts is from 1 to 5"),
    ("TICKWORK_QUEUE_URL", "ftp://queue", "TICKWORK_QUEUE_URL 'ftp://queue': expected"),
    ("TICKWORK_DATABASE_URL", "mysql://db/x", "TICKWORK_DATABASE_URL mysql://...: expected"),
    ("TICKWORK_EGRESS_ALLOW", "10.0.0.0/8,relay internal", "TICKWORK_EGRESS_ALLOW: 'relay internal' is neither"),
])
@pytest.mark.only_backend("sqlite")  # read before any database is opened
def test_a_setting_tickwork_cannot_start_with_is_one_clear_line_and_exit_2(database_url, setting, value, fragment):
    tickwork = shutil.which("tickwork", path=str(ROOT / ".venv" / "bin")) or shutil.which("tickwork")
    env = dict(os.environ, TICKWORK_DATABASE_URL=database_url, TICKWORK_SECRET_KEY=TEST_SECRET,
               TICKWORK_QUEUE_URL="immediate")
    env[setting] = value
    result = subprocess.run([tickwork, "tick"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and fragment in result.stderr
    assert result.stderr.strip().count("\n") == 0


@pytest.mark.only_backend("sqlite")  # read before any database is opened
def test_max_attempts_above_five_stops_every_process_at_start_naming_it(database_url):
    """The playbook bounds retries at 5: every tickwork command, the consumer and the web process refuse more."""
    tickwork = shutil.which("tickwork", path=str(ROOT / ".venv" / "bin")) or shutil.which("tickwork")
    env = dict(os.environ, TICKWORK_DATABASE_URL=database_url, TICKWORK_SECRET_KEY=TEST_SECRET,
               TICKWORK_QUEUE_URL="immediate", TICKWORK_POLICY_JSON='{"max_attempts": 6}')
    for command in (["dispatch-works"], ["consumer"], ["token", "list", "--workspace", "Acme"],
                    ["workspace", "create", "Hooli", "--timezone", "UTC"],
                    ["user", "deactivate", "x@acme.test"]):
        result = subprocess.run([tickwork, *command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
        assert result.returncode == 2 and "max_attempts is from 1 to 5" in result.stderr, (command, result.stderr)
    web = subprocess.run([sys.executable, "-c", "import wsgi"], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=60)
    assert web.returncode != 0 and "max_attempts is from 1 to 5" in web.stderr


def test_user_create_makes_a_reviewer_who_reads_but_composes_nothing(app, world, cli, client):
    _ok(cli("user", "create", "rita@acme.test", "--workspace", "Acme", "--role", "reviewer", input="long enough pw\n"))
    token = _ok(cli("token", "create", "rita@acme.test", "--workspace", "Acme")).strip()
    auth = {"Authorization": f"Bearer {token}"}
    assert client.get("/api/v1/posts", headers=auth).status_code == 200
    refused = client.post("/api/v1/posts", headers=auth,
                          json={"body": "Mine", "targets": ["main"], "local_time": "2026-06-02T09:00"})
    assert refused.status_code == 403


# What the database-only commands may import: no Flask, no wing above accounts, no job machinery.
RUN_AND_LIST_MODULES = """
import json, sys
from webapp.command_line import main
sys.argv = ["tickwork", *json.loads(sys.argv[1])]
try:
    main()
except SystemExit as exc:
    code = exc.code
heavy = sorted(name for name in sys.modules if name.split(".")[0] in ("flask", "flask_sqlalchemy", "jobs", "huey",
               "httpx", "werkzeug", "jinja2") or name.startswith(("webapp.cli", "webapp.views", "webapp.api",
               "models.actions", "models.channels", "models.alerts", "models.works", "models.wings")))
print(json.dumps({"code": code, "heavy": heavy}))
"""


def _tickwork_env(database_url: str, **extra: str) -> dict:
    """The environment of an installed ``tickwork`` on ``database_url``, without the suite's own settings."""
    env = {"PATH": os.environ["PATH"], "TICKWORK_DATABASE_URL": database_url, "TICKWORK_SECRET_KEY": TEST_SECRET,
           "TICKWORK_QUEUE_URL": "immediate", **extra}
    return env


def _run_listing_modules(database_url: str, *args: str, stdin: str | None = None, **extra: str):
    import json

    done = subprocess.run([sys.executable, "-c", RUN_AND_LIST_MODULES, json.dumps(args)], cwd=ROOT, input=stdin,
                          env=_tickwork_env(database_url, **extra), capture_output=True, text=True, timeout=120)
    *output, listed = done.stdout.splitlines()
    return json.loads(listed), "\n".join(output), done.stderr


def test_workspace_user_and_token_commands_run_on_the_database_alone_and_answer_as_through_the_app(
        client, database_url):
    """``tickwork workspace create``, ``user ...`` and ``token ...`` build no app: nothing of Flask, the wings or the jobs is imported,
    and what they write is what the app reads (the token they print works on the API)."""
    import json

    made, output, _ = _run_listing_modules(database_url, "workspace", "create", "Pied Piper", "--timezone", "UTC")
    assert made == {"code": 0, "heavy": []} and output == "workspace Pied Piper created (UTC)"
    made, output, _ = _run_listing_modules(database_url, "user", "create", "Richard@Piper.test", "--workspace",
                                           "Pied Piper", "--role", "ops", stdin="a long password\n")
    assert made == {"code": 0, "heavy": []} and output == "richard@piper.test is ops in Pied Piper"
    made, raw, _ = _run_listing_modules(database_url, "token", "create", "richard@piper.test", "--workspace",
                                        "Pied Piper", "--name", "cron")
    assert made == {"code": 0, "heavy": []} and raw.startswith("tw_")
    assert client.get("/api/v1/actions", headers={"Authorization": f"Bearer {raw}"}).status_code == 200
    listed, output, _ = _run_listing_modules(database_url, "token", "list", "--workspace", "Pied Piper")
    [token] = [json.loads(line) for line in output.splitlines()]
    assert listed["heavy"] == [] and token["name"] == "cron" and token["email"] == "richard@piper.test"
    revoked, output, _ = _run_listing_modules(database_url, "token", "revoke", str(token["id"]))
    assert revoked == {"code": 0, "heavy": []}
    assert output == f"token #{token['id']} (cron) of richard@piper.test revoked"
    assert client.get("/api/v1/actions", headers={"Authorization": f"Bearer {raw}"}).status_code == 401


@pytest.mark.parametrize("args, exit_code, fragment", [
    (("token", "create", "ghost@acme.test", "--workspace", "Nowhere"), 1, "Error: no user 'ghost@acme.test'"),
    (("token", "revoke", "999999"), 1, "Error: no token #999999"),
    (("token", "revoke", "0"), 2, "Invalid value for 'TOKEN_ID'"),
    (("token", "create"), 2, "Missing argument 'EMAIL'"),
    (("user", "create", "x@y.test", "--workspace", "Nowhere", "--role", "ops"), 1, "no workspace named"),
    (("workspace", "create", "Bad", "--timezone", "Mars/Base"), 1, "'Mars/Base' is not an IANA time zone"),
])
def test_a_database_only_command_refuses_as_through_the_app(database_url, args, exit_code, fragment):
    ran, output, stderr = _run_listing_modules(database_url, *args, stdin="a long password\n")
    assert ran == {"code": exit_code, "heavy": []} and fragment in stderr and "Traceback" not in stderr, stderr
    assert output == ""


@pytest.mark.parametrize("setting, value, fragment", [
    ("TICKWORK_QUEUE_URL", "ftp://queue", "TICKWORK_QUEUE_URL 'ftp://queue': expected"),
    ("TICKWORK_EGRESS_ALLOW", "10.0.0.0/8,relay internal", "TICKWORK_EGRESS_ALLOW: 'relay internal' is neither"),
    ("TICKWORK_ALERT_SMTP_URL", "smtp://relay.test", "TICKWORK_ALERT_EMAIL_TO must name who receives"),
    ("TICKWORK_PLANS_JSON", "[", "TICKWORK_PLANS_JSON is not valid JSON"),
    ("TICKWORK_RETENTION_DAYS", "0", "TICKWORK_RETENTION_DAYS '0': expected a whole number of days"),
    ("TICKWORK_SECRET_KEY", "short", "TICKWORK_SECRET_KEY is 5 bytes long"),
])
@pytest.mark.only_backend("sqlite")  # read before any database is opened
def test_a_database_only_command_stops_at_start_on_any_setting_the_app_stops_on(database_url, setting, value,
                                                                                 fragment):
    ran, output, stderr = _run_listing_modules(database_url, "token", "list", "--workspace", "Acme",
                                               **{setting: value})
    assert ran["code"] == 2 and stderr.startswith("tickwork: ") and fragment in stderr
    assert stderr.strip().count("\n") == 0 and output == ""


def test_the_demo_has_a_reviewer_who_signs_in_and_posting_times_the_queue_takes(app, cli):
    from datetime import time

    from models.accounts.tables import Membership, User, Workspace
    from models.channels.tables import Channel
    from models.core.runtime import runtime
    from models.demo import DEMO_PASSWORD, DEMO_WORKSPACE
    from models.posts.queue import plan_slot
    from tests.web.conftest import TOKEN

    output = _ok(cli("demo"))
    assert "reviewer@demo.test" in output and "reviewer" in output
    with app.app_context(), read_session() as session:
        workspace = session.scalar(select(Workspace).where(Workspace.name == DEMO_WORKSPACE))
        role = session.scalar(select(Membership.role).join(User, User.id == Membership.user_id)
                              .where(User.email == "reviewer@demo.test", Membership.workspace_id == workspace.id))
        instagram = session.scalar(select(Channel).where(Channel.workspace_id == workspace.id,
                                                         Channel.name == "instagram"))
        assert role == "reviewer" and instagram.posting_slots
        rt = runtime()
        for when in ("queue", "next"):
            plan = plan_slot(session, workspace.id, [instagram], when, now=rt.now(), policy=rt.policy)
            assert plan.wall_time in (time(9), time(13), time(17), time(18, 30)), (when, plan)
    browser = app.test_client()
    token = TOKEN.search(browser.get("/login").get_data(as_text=True)).group(1)
    signed_in = browser.post("/login", data={"email": "reviewer@demo.test", "password": DEMO_PASSWORD,
                                             "csrf_token": token})
    assert signed_in.status_code == 303
    assert browser.get("/posts").status_code == 200  # a reviewer reads what a marketer reads
